// Prefill attention: the blocked kernel (engine/cpu/attention_kernels.h, dispatched) against its
// scalar reference, and CpuBackend's prefill path against one decode-path call per token, with
// grouped heads, sliding windows, a softcap, a non-zero start position and F16/F32 caches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/attention_checks.h"
#include "common/random_data.h"
#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/cpu_backend.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

using testing::CheckBlock;
using testing::CheckDecode;
using testing::RandomFloats;

TEST(AttentionBlock, MatchesReference) {
  for (int32_t rows : {16, 13, 4, 1}) {
    for (int32_t dk : {64, 256, 80}) {
      for (int32_t n_keys : {1, 17, 64, 300}) CheckBlock(rows, dk, dk, n_keys, 0, 0.0f, 1.0f);
    }
  }
  CheckBlock(16, 128, 96, 200, 0, 0.0f, 1.0f);  // d_v != d_k, value tail
}

TEST(AttentionBlock, WindowSoftcapAndLargeScores) {
  CheckBlock(16, 64, 64, 300, 40, 0.0f, 1.0f);
  CheckBlock(9, 64, 64, 300, 1, 0.0f, 1.0f);         // window of one key
  CheckBlock(16, 64, 64, 200, 0, 50.0f, 1.0f);       // softcap
  CheckBlock(16, 64, 64, 200, 0, 0.0f, 30.0f);       // peaked softmax (scores ~ +-200)
  CheckBlock(16, 256, 256, 2100, 0, 0.0f, 1.0f);     // keys in 256-key chunks (attention_drivers.h)
  CheckBlock(11, 64, 64, 1500, 600, 0.0f, 1.0f);     // windows across the chunks
}

// Attention sinks (gpt-oss): a per-row logit in the softmax denominator, below or above the scores.
TEST(AttentionBlock, Sinks) {
  for (int32_t n_keys : {1, 17, 300}) CheckBlock(16, 64, 64, n_keys, 0, 0.0f, 1.0f, attn::RunBlock, true);
  CheckBlock(13, 80, 80, 300, 8, 0.0f, 1.0f, attn::RunBlock, true);    // window
  CheckBlock(16, 64, 64, 200, 0, 0.0f, 30.0f, attn::RunBlock, true);   // peaked scores above the sinks
}

TEST(AttentionDecode, Sinks) {
  for (int32_t n_q = 1; n_q <= attn::kDecodeHeads; ++n_q) {
    for (int32_t n_keys : {1, 17, 300}) CheckDecode(n_q, 64, 64, n_keys, 0.0f, 1.0f, attn::RunDecode, true);
  }
  CheckDecode(2, 64, 64, 200, 0.0f, 30.0f, attn::RunDecode, true);
}

TEST(AttentionDecode, MatchesReference) {
  for (int32_t n_q = 1; n_q <= attn::kDecodeHeads; ++n_q) {
    for (int32_t dk : {64, 256, 80, 40}) {  // 40: not a multiple of 16 (the reference runs)
      for (int32_t n_keys : {1, 17, 300}) CheckDecode(n_q, dk, dk, n_keys, 0.0f, 1.0f);
    }
  }
  CheckDecode(3, 128, 96, 200, 0.0f, 1.0f);  // d_v != d_k, a value tile of 2 chunks
  CheckDecode(4, 64, 64, 200, 50.0f, 1.0f);  // softcap
  CheckDecode(2, 64, 64, 200, 0.0f, 30.0f);  // peaked softmax (scores ~ +-200)
}

// The exact tile kernel against the decode kernel, bit for bit: `tokens` consecutive positions
// from pos0 with n_q heads each (a tile's rows), each over its own keys (causal, a window), on
// staged K^T / V from an F16 cache, against one RunDecode per token over that cache. partial: a
// split decode's block (ExactTile::part against DecodeGroup::part: the max, sum and unnormalized
// rows), each row's keys from its first key + key0.
void CheckExactTile(int32_t tokens, int32_t n_q, int32_t d, int32_t pos0, int32_t window, float softcap, bool sinks,
                    bool partial = false, int32_t key0 = 0) {
  SCOPED_TRACE("tokens " + std::to_string(tokens) + " heads " + std::to_string(n_q) + " d " + std::to_string(d) +
               " pos0 " + std::to_string(pos0) + " window " + std::to_string(window) + " softcap " +
               std::to_string(softcap) + (sinks ? " sinks" : "") + (partial ? " partial from " + std::to_string(key0) : ""));
  const int32_t n_pos = pos0 + tokens, rows = tokens * n_q;
  const int64_t stride = 2 * int64_t{d};  // two KV heads per cache row; the second is used
  const std::vector<float> kf = RandomFloats(size_t(n_pos) * size_t(stride), 21, 2.0f);
  const std::vector<float> vf = RandomFloats(size_t(n_pos) * size_t(stride), 22);
  std::vector<uint16_t> k(kf.size()), v(vf.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = quant::Fp32ToFp16(kf[i]);
  for (size_t i = 0; i < v.size(); ++i) v[i] = quant::Fp32ToFp16(vf[i]);
  const int64_t kt_stride = 16 * int64_t{d} + 48;  // panels of 16 keys, any stride; zero past the last key
  std::vector<float> kt(size_t((n_pos + 15) / 16) * size_t(kt_stride), 0.0f), vs(size_t(n_pos) * size_t(d));
  for (int32_t j = 0; j < n_pos; ++j) {
    for (int32_t e = 0; e < d; ++e) {
      kt[size_t(j / 16) * size_t(kt_stride) + size_t(e) * 16 + size_t(j % 16)] = quant::Fp16ToFp32(k[size_t(j * stride + d + e)]);
      vs[size_t(j) * size_t(d) + size_t(e)] = quant::Fp16ToFp32(v[size_t(j * stride + d + e)]);
    }
  }
  std::vector<float> q = RandomFloats(size_t(rows) * size_t(d), 23, 2.0f);
  for (float& x : q) x = quant::Fp16ToFp32(quant::Fp32ToFp16(x));
  const std::vector<float> sink = testing::RandomSinks(n_q, 24);
  std::vector<int32_t> lo(static_cast<size_t>(rows)), hi(static_cast<size_t>(rows));
  std::vector<float> row_sink(static_cast<size_t>(rows));
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t p = pos0 + r / n_q;
    lo[size_t(r)] = (window > 0 ? std::max(0, p - window + 1) : 0) + key0;
    hi[size_t(r)] = partial ? std::min(p, lo[size_t(r)] + attn::kSplitKeys - 1) : p;
    row_sink[size_t(r)] = sink[size_t(r % n_q)];
  }
  std::vector<float> out(size_t(rows) * size_t(d), NAN), want(out.size(), NAN);
  std::vector<float> s(size_t(rows) * size_t((n_pos + 15) / 16 * 16), NAN);
  std::vector<float*> op = testing::RowPointers(out, rows, d), wp = testing::RowPointers(want, rows, d);
  attn::ExactTile t;
  t.q = q.data();
  t.rows = rows;
  t.d_k = t.d_v = d;
  t.kt = kt.data();
  t.kt_stride = kt_stride;
  t.v = vs.data();
  t.v_stride = d;
  t.lo = lo.data();
  t.hi = hi.data();
  t.scale = 1.0f / std::sqrt(float(d));
  t.softcap = softcap;
  t.s = s.data();
  t.ss = (n_pos + 15) / 16 * 16;
  t.out = op.data();
  if (sinks) t.sink = row_sink.data();
  std::vector<attn::Partial> part(size_t(rows), attn::Partial{NAN, NAN}), want_part(part);
  if (partial) t.part = part.data();
  attn::RunExactTile(t);
  std::vector<float> ds(size_t(n_q) * size_t(n_pos));
  for (int32_t tok = 0; tok < tokens; ++tok) {
    const int32_t r0 = tok * n_q, first = lo[size_t(r0)];
    attn::DecodeGroup g;
    g.q = q.data() + size_t(r0) * size_t(d);
    g.n_q = n_q;
    g.d_k = g.d_v = d;
    g.k = k.data() + first * stride + d;
    g.k_stride = stride;
    g.v = v.data() + first * stride + d;
    g.v_stride = stride;
    g.n_keys = hi[size_t(r0)] - first + 1;
    g.scale = t.scale;
    g.softcap = softcap;
    g.s = ds.data();
    g.out = wp.data() + r0;
    if (sinks) g.sink = sink.data();
    if (partial) g.part = want_part.data() + r0;
    attn::RunDecode(g);
  }
  for (int32_t r = 0; r < rows; ++r) {
    ASSERT_EQ(std::memcmp(out.data() + size_t(r) * size_t(d), want.data() + size_t(r) * size_t(d), size_t(d) * 4), 0)
        << "row " << r << " (token " << r / n_q << ", head " << r % n_q << ")";
    ASSERT_EQ(std::memcmp(&part[size_t(r)], &want_part[size_t(r)], sizeof(attn::Partial)), 0) << "partial of row " << r;
  }
}

TEST(AttentionExactTile, MatchesTheDecodeKernelBitForBit) {
  if (!attn::HasExactTile()) GTEST_SKIP() << "no exact tile kernel on this CPU (AVX-512)";
  for (int32_t d : {64, 256}) {
    for (int32_t n_q = 1; n_q <= attn::kDecodeHeads; ++n_q) {
      for (int32_t tokens : {1, 2, 3, 5, 8}) {
        if (tokens * n_q > attn::kExactRows) continue;
        for (int32_t pos0 : {0, 13, 300}) CheckExactTile(tokens, n_q, d, pos0, 0, 0.0f, false);
      }
    }
  }
  CheckExactTile(10, 3, 64, 500, 0, 0.0f, false);   // SmolLM2's tile: 30 rows
  CheckExactTile(8, 4, 256, 77, 40, 0.0f, false);   // a window: every row from its own first key
  CheckExactTile(7, 2, 64, 20, 9, 0.0f, true);      // a window shorter than the tile, sinks
  CheckExactTile(5, 3, 64, 200, 0, 50.0f, false);   // softcap
  CheckExactTile(32, 1, 64, 3, 0, 0.0f, true);      // a full tile of one head, keys from 1
}

// The partial mode (a split decode's KV block, RunSplitBlock's call) against RunDecode with part.
TEST(AttentionExactTile, PartialMatchesTheSplitDecodeBitForBit) {
  if (!attn::HasExactTile()) GTEST_SKIP() << "no exact tile kernel on this CPU (AVX-512)";
  CheckExactTile(16, 2, 128, 1100, 0, 0.0f, true, true, 512);     // Qwen3-1.7B's tile, a middle block (sinks ignored)
  CheckExactTile(16, 2, 128, 1100, 0, 0.0f, false, true, 1024);   // the last, short block
  CheckExactTile(8, 4, 64, 1030, 1027, 0.0f, false, true, 768);   // a window: each row's blocks from its own key
  CheckExactTile(10, 3, 64, 600, 0, 50.0f, false, true, 256);     // softcap
  CheckExactTile(5, 1, 256, 300, 0, 0.0f, false, true, 0);        // the first block
}

// Exact prefill (SetBatchInvariant, F16 cache; exact tiles from 8 tokens and heads up to 256 where
// the CPU has them):
// one call = chunks (of the tile path and of the per-row path) = one token at a time, the same
// bits, for 1 and 2 threads.
void CheckExactPrefill(int32_t n_head, int32_t n_kv, int32_t hd, int32_t n_tok, int32_t pos0, int32_t window,
                       float softcap, bool sinks = false) {
  SCOPED_TRACE("heads " + std::to_string(n_head) + "/" + std::to_string(n_kv) + " hd " + std::to_string(hd) +
               " tokens " + std::to_string(n_tok) + " pos0 " + std::to_string(pos0) + " window " +
               std::to_string(window));
  const int32_t n_pos = pos0 + n_tok;
  const size_t row = size_t(n_head) * size_t(hd), n = size_t(n_tok) * row;
  const std::vector<float> k = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 31, 2.0f);
  const std::vector<float> v = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 32);
  const std::vector<float> q = RandomFloats(n, 33, 2.0f);
  AttentionParams ap = testing::GroupedParams(n_head, n_kv, hd, window);
  ap.softcap = softcap;
  const std::vector<float> sink = testing::RandomSinks(n_head, 34);
  if (sinks) ap.sinks = sink.data();
  for (int32_t threads : {1, 2}) {
    CpuBackend be(threads);
    be.SetBatchInvariant(true);
    std::unique_ptr<KvCache> kv;
    ASSERT_TRUE(be.CreateKv(1, n_pos + 3, n_kv * hd, n_kv * hd, KvType::kF16, &kv).ok());
    be.StoreKv(*kv, 0, k.data(), v.data(), n_pos, 0);
    std::vector<float> whole(n, NAN), parts(n, NAN), one(n, NAN);
    be.Attention(*kv, 0, q.data(), n_tok, pos0, ap, whole.data());
    const int32_t a = n_tok / 2, b = std::min(n_tok - a, 5);  // a tile chunk, a short one, the rest
    be.Attention(*kv, 0, q.data(), a, pos0, ap, parts.data());
    be.Attention(*kv, 0, q.data() + a * row, b, pos0 + a, ap, parts.data() + a * row);
    if (a + b < n_tok) be.Attention(*kv, 0, q.data() + (a + b) * row, n_tok - a - b, pos0 + a + b, ap, parts.data() + (a + b) * row);
    for (int32_t t = 0; t < n_tok; ++t) be.Attention(*kv, 0, q.data() + t * row, 1, pos0 + t, ap, one.data() + t * row);
    for (int32_t t = 0; t < n_tok; ++t) {
      ASSERT_EQ(std::memcmp(whole.data() + t * row, one.data() + t * row, row * 4), 0)
          << "one call vs one token at a time, position " << pos0 + t << ", threads " << threads;
      ASSERT_EQ(std::memcmp(parts.data() + t * row, one.data() + t * row, row * 4), 0)
          << "chunks vs one token at a time, position " << pos0 + t << ", threads " << threads;
    }
  }
}

TEST(AttentionExactPrefill, OneCallEqualsChunksAndOneTokenAtATime) {
  CheckExactPrefill(9, 3, 64, 45, 0, 0, 0.0f);        // SmolLM2 shape
  CheckExactPrefill(4, 1, 256, 40, 7, 0, 0.0f);       // Gemma 3 shape
  CheckExactPrefill(4, 1, 128, 40, 7, 0, 0.0f);       // continuing a cache
  CheckExactPrefill(4, 1, 128, 37, 30, 16, 0.0f);     // a sliding window
  CheckExactPrefill(8, 2, 64, 19, 3, 8, 0.0f, true);  // sinks and a window
  CheckExactPrefill(2, 2, 80, 20, 0, 0, 30.0f);       // softcap, a head size of 5 x 16
  CheckExactPrefill(40, 1, 32, 12, 2, 0, 0.0f);       // a group wider than a tile (the per-row path)
  // Rows split by KV blocks (from kSplitMinKeys keys), mixed with whole rows in a tile.
  CheckExactPrefill(16, 8, 128, 40, attn::kSplitMinKeys - 20, 0, 0.0f, true);     // Qwen3-1.7B shape, sinks
  CheckExactPrefill(4, 1, 64, 21, attn::kSplitKeys * 5 - 3, attn::kSplitMinKeys + 9, 0.0f);  // a window
}

// The prefill path (n_tok > 1) equals one decode-path call per token over the same cache.
void CheckBackend(KvType type, int32_t n_head, int32_t n_kv, int32_t hd, int32_t n_tok, int32_t pos0, int32_t window,
                  float softcap, bool sinks = false) {
  SCOPED_TRACE("heads " + std::to_string(n_head) + "/" + std::to_string(n_kv) + " hd " + std::to_string(hd) +
               " tokens " + std::to_string(n_tok) + " pos0 " + std::to_string(pos0) + " window " +
               std::to_string(window));
  const int32_t n_ctx = pos0 + n_tok + 3, layers = 2, layer = 1;
  CpuBackend be(2);
  std::unique_ptr<KvCache> kv;
  ASSERT_TRUE(be.CreateKv(layers, n_ctx, n_kv * hd, n_kv * hd, type, &kv).ok());
  const int32_t n_pos = pos0 + n_tok;
  std::vector<float> k = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 4), v = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 5);
  be.StoreKv(*kv, layer, k.data(), v.data(), n_pos, 0);
  std::vector<float> q = RandomFloats(size_t(n_tok) * size_t(n_head * hd), 6);
  AttentionParams ap = testing::GroupedParams(n_head, n_kv, hd, window);
  ap.softcap = softcap;
  const std::vector<float> sink = testing::RandomSinks(n_head, 7);
  if (sinks) ap.sinks = sink.data();
  std::vector<float> out(size_t(n_tok) * size_t(n_head * hd), NAN), one(size_t(n_head * hd));
  be.Attention(*kv, layer, q.data(), n_tok, pos0, ap, out.data());
  for (int32_t t = 0; t < n_tok; ++t) {
    be.Attention(*kv, layer, q.data() + size_t(t) * size_t(n_head * hd), 1, pos0 + t, ap, one.data());
    for (int32_t i = 0; i < n_head * hd; ++i) {
      ASSERT_NEAR(out[size_t(t) * size_t(n_head * hd) + size_t(i)], one[size_t(i)], 2e-5f * (1.0f + std::fabs(one[size_t(i)])))
          << "token " << t << " element " << i;
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// The AVX2 kernels called directly, so AVX-512 machines check them too.
TEST(AttentionBlock, Avx2MatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "this CPU has no AVX2 + FMA + F16C";
  testing::CheckBlockKernel(attn::RunBlockAvx2);
}

TEST(AttentionDecode, Avx2MatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "this CPU has no AVX2 + FMA + F16C";
  testing::CheckDecodeKernel(attn::RunDecodeAvx2, {64, 256, 40});  // 40: a value tile of one chunk of 8
}
#endif

#if defined(__aarch64__)
// The NEON kernels called directly (the dispatched ones are them unless ZF_NO_NEON is set).
TEST(AttentionBlock, AsimdMatchesReference) { testing::CheckBlockKernel(attn::RunBlockAsimd); }

TEST(AttentionDecode, AsimdMatchesReference) {
  testing::CheckDecodeKernel(attn::RunDecodeAsimd, {64, 256, 40});  // 40: two tiles of 16 and two of 4
}
#endif

TEST(AttentionPrefill, MatchesDecodePathPerToken) {
  for (KvType type : {KvType::kF16, KvType::kF32}) {
    CheckBackend(type, 4, 1, 256, 37, 0, 0, 0.0f);   // Gemma 3 shape
    CheckBackend(type, 9, 3, 64, 21, 7, 0, 0.0f);    // SmolLM2 shape, continuing a cache
    CheckBackend(type, 4, 1, 256, 40, 3, 16, 0.0f);  // sliding window
    CheckBackend(type, 2, 2, 80, 9, 0, 0, 30.0f);    // softcap, no grouping, odd head size
    CheckBackend(type, 8, 1, 64, 5, 2, 0, 0.0f);     // a group wider than one decode pass
    CheckBackend(type, 6, 2, 40, 7, 1, 0, 0.0f);     // head size the AVX-512 decode does not take
    CheckBackend(type, 4, 1, 256, 2, 0, 0, 0.0f);    // a context far shorter than a head (scratch sizes)
    CheckBackend(type, 8, 2, 64, 19, 3, 8, 0.0f, true);  // gpt-oss: sinks and a window
  }
}

}  // namespace
}  // namespace zf::engine

namespace zf::engine {
namespace {

// SiLU x up (dispatched) against the std::exp reference, including large |x| and a tail.
TEST(SiluMul, MatchesReference) {
  std::vector<float> g = RandomFloats(1003, 7, 4.0f), u = RandomFloats(1003, 8);
  g[0] = -100.0f, g[1] = 100.0f, g[2] = 0.0f, g[3] = -88.5f, g[4] = 30.0f;
  std::vector<void (*)(float*, const float*, int64_t)> kernels = {act::SiluMul};
#if defined(__x86_64__) || defined(__i386__)
  if (quant::CpuHasAvx2Fma16()) kernels.push_back(act::SiluMulAvx2);  // AVX-512 machines check it too
#endif
#if defined(__aarch64__)
  kernels.push_back(act::SiluMulAsimd);
#endif
  for (auto kernel : kernels) {
    for (int64_t n : {int64_t(g.size()), int64_t{5}}) {  // a masked tail, and a row shorter than a vector
      std::vector<float> a = g, b = g;
      kernel(a.data(), u.data(), n);
      act::SiluMulRef(b.data(), u.data(), n);
      for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6f * (1.0f + std::fabs(b[i]))) << i << " x " << g[i];
    }
  }
}

}  // namespace
}  // namespace zf::engine

// Grouped decode over quantized K/V (engine/cpu/attention_quant.h): each ISA's kernel this CPU
// has against the scalar reference (whole and as KV-block partials folded by CombinePartials),
// and decode split by KV blocks at long depth (attention_kernels.h SplitBlocks): the same bits
// for one token at a time, prefill chunks, batched rows and any thread count, near a plain loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/attention_checks.h"
#include "common/random_data.h"
#include "engine/cpu/attention_quant.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/cpu_kv_cache.h"
#include "engine/cpu/kv_quant.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

using testing::RandomFloats;
using QuantFn = std::function<void(const attn::QuantDecodeGroup&)>;

// n_keys rows of two KV heads of type t (the kernel reads the second), quantized as the cache stores them.
std::vector<uint8_t> Rows(KvType t, int32_t n_keys, int32_t d, uint32_t seed, int64_t* stride) {
  const int32_t w = 2 * d;
  *stride = int64_t(KvRowBytes(t, w));
  const std::vector<float> x = RandomFloats(size_t(n_keys) * size_t(w), seed, 2.0f);
  std::vector<uint8_t> out(size_t(n_keys) * size_t(*stride));
  for (int32_t j = 0; j < n_keys; ++j) {
    const float* src = x.data() + size_t(j) * size_t(w);
    uint8_t* dst = out.data() + size_t(j) * size_t(*stride);
    switch (t) {
      case KvType::kQ8_0: kvq::QuantizeQ8_0(src, dst, w); break;
      case KvType::kQ4_0: kvq::QuantizeQ4_0(src, dst, w); break;
      case KvType::kF16: quant::QuantizeActivations(GgmlType::F16, src, dst, w); break;
      case KvType::kF32: std::memcpy(dst, src, size_t(w) * 4); break;
    }
  }
  return out;
}

void CheckQuant(KvType kt, KvType vt, int32_t n_q, int32_t d, int32_t n_keys, float softcap, bool sinks, bool split,
                const QuantFn& fast) {
  SCOPED_TRACE(std::string("K ") + KvTypeName(kt) + " V " + KvTypeName(vt) + " heads " + std::to_string(n_q) + " d " +
               std::to_string(d) + " keys " + std::to_string(n_keys) + (sinks ? " sinks" : "") + (split ? " split" : ""));
  int64_t ks = 0, vs = 0;
  const std::vector<uint8_t> k = Rows(kt, n_keys, d, 21, &ks), v = Rows(vt, n_keys, d, 22, &vs);
  const std::vector<float> qf = RandomFloats(size_t(n_q) * size_t(d), 23, 2.0f);
  std::vector<uint8_t> q8(size_t(n_q) * KvRowBytes(KvType::kQ8_0, d));
  quant::ref::QuantizeQ8_0(qf.data(), q8.data(), int64_t{n_q} * d);
  const std::vector<float> sink = testing::RandomSinks(n_q, 24);
  attn::QuantDecodeGroup g;
  g.q8 = q8.data();
  g.n_q = n_q;
  g.d_k = g.d_v = d;
  g.kt = kt;
  g.vt = vt;
  g.k = k.data() + KvRowBytes(kt, d);
  g.k_stride = ks;
  g.v = v.data() + KvRowBytes(vt, d);
  g.v_stride = vs;
  g.scale = 1.0f / std::sqrt(float(d));
  g.softcap = softcap;
  if (sinks) g.sink = sink.data();
  // Whole, or in KV blocks of 64 keys folded by CombinePartials.
  const auto run = [&](const QuantFn& fn, std::vector<float>* out) {
    out->assign(size_t(n_q) * size_t(d), NAN);
    std::vector<float> s(size_t(n_q) * size_t(n_keys));
    if (!split) {
      attn::QuantDecodeGroup w = g;
      w.n_keys = n_keys;
      w.s = s.data();
      std::vector<float*> op = testing::RowPointers(*out, n_q, d);
      w.out = op.data();
      fn(w);
      return;
    }
    constexpr int32_t kB = 64;
    const int32_t blocks = (n_keys + kB - 1) / kB;
    std::vector<attn::Partial> part(size_t(blocks) * attn::kDecodeHeads);
    std::vector<float> rows(size_t(blocks) * attn::kDecodeHeads * size_t(d));
    for (int32_t c = 0; c < blocks; ++c) {
      attn::QuantDecodeGroup w = g;
      w.k += c * kB * ks;
      w.v += c * kB * vs;
      w.n_keys = std::min(kB, n_keys - c * kB);
      w.s = s.data();
      w.part = part.data() + c * attn::kDecodeHeads;
      float* op[attn::kDecodeHeads];
      for (int32_t i = 0; i < n_q; ++i) op[i] = rows.data() + (size_t(c) * attn::kDecodeHeads + size_t(i)) * size_t(d);
      w.out = op;
      fn(w);
    }
    for (int32_t i = 0; i < n_q; ++i) {
      attn::CombinePartials(part.data() + i, attn::kDecodeHeads, rows.data() + size_t(i) * size_t(d),
                            int64_t{attn::kDecodeHeads} * d, blocks, d, sinks ? sink[size_t(i)] : -INFINITY,
                            out->data() + size_t(i) * size_t(d));
    }
  };
  std::vector<float> got, want;
  run(fast, &got);
  run(attn::RunQuantDecodeRef, &want);
  // The reference against a plain loop in double: the blocks' integer products are exact.
  for (int32_t h = 0; h < n_q; ++h) {
    std::vector<float> qd(static_cast<size_t>(d)), kd(static_cast<size_t>(2 * d)), vd(static_cast<size_t>(2 * d));
    quant::DequantizeRow(GgmlType::Q8_0, q8.data() + size_t(h) * KvRowBytes(KvType::kQ8_0, d), qd.data(), d);
    const auto deq = [](KvType t, const uint8_t* row, float* o, int64_t n) {
      const GgmlType gt = t == KvType::kQ8_0 ? GgmlType::Q8_0 : t == KvType::kQ4_0 ? GgmlType::Q4_0
                          : t == KvType::kF16 ? GgmlType::F16 : GgmlType::F32;
      quant::DequantizeRow(gt, row, o, n);
    };
    std::vector<double> w(static_cast<size_t>(n_keys));
    double mx = sinks ? double(sink[size_t(h)]) : -INFINITY;
    for (int32_t j = 0; j < n_keys; ++j) {
      deq(kt, k.data() + size_t(j) * size_t(ks), kd.data(), 2 * d);
      double dot = 0;
      for (int32_t e = 0; e < d; ++e) dot += double(qd[size_t(e)]) * kd[size_t(d + e)];
      dot *= g.scale;
      if (softcap > 0.0f) dot = softcap * std::tanh(dot / softcap);
      mx = std::max(mx, w[size_t(j)] = dot);
    }
    double sum = sinks ? std::exp(double(sink[size_t(h)]) - mx) : 0.0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    std::vector<double> o(static_cast<size_t>(d), 0.0);
    for (int32_t j = 0; j < n_keys; ++j) {
      deq(vt, v.data() + size_t(j) * size_t(vs), vd.data(), 2 * d);
      for (int32_t e = 0; e < d; ++e) o[size_t(e)] += w[size_t(j)] * vd[size_t(d + e)];
    }
    for (int32_t e = 0; e < d; ++e) {
      const double p = o[size_t(e)] / sum;
      const size_t i = size_t(h) * size_t(d) + size_t(e);
      ASSERT_NEAR(want[i], p, 1e-4 * (1.0 + std::fabs(p))) << "reference, head " << h << " dim " << e;
      ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::fabs(want[i]))) << "kernel, head " << h << " dim " << e;
    }
  }
}

const std::pair<KvType, KvType> kPairs[] = {
    {KvType::kQ8_0, KvType::kQ8_0}, {KvType::kQ4_0, KvType::kQ4_0}, {KvType::kQ8_0, KvType::kQ4_0},
    {KvType::kQ4_0, KvType::kQ8_0}, {KvType::kQ8_0, KvType::kF16},  {KvType::kQ4_0, KvType::kF32},
};

void CheckQuantKernel(const QuantFn& fn) {
  for (const auto& [kt, vt] : kPairs) {
    for (int32_t n_q = 1; n_q <= attn::kDecodeHeads; ++n_q) {
      for (int32_t d : {32, 64, 96, 256}) {
        for (int32_t n_keys : {1, 17, 300}) CheckQuant(kt, vt, n_q, d, n_keys, 0.0f, false, false, fn);
      }
    }
    CheckQuant(kt, vt, 3, 64, 200, 30.0f, false, false, fn);  // softcap
    CheckQuant(kt, vt, 3, 64, 200, 0.0f, true, false, fn);    // sinks
    CheckQuant(kt, vt, 4, 128, 300, 0.0f, true, true, fn);    // KV-block partials and their fold
    CheckQuant(kt, vt, 2, 64, 129, 0.0f, false, true, fn);
  }
}

TEST(QuantDecode, DispatchedMatchesReference) { CheckQuantKernel(attn::RunQuantDecode); }

#if defined(__x86_64__) || defined(__i386__)
TEST(QuantDecode, Avx512MatchesReference) {
  if (!quant::CpuHasAvx512Vnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  CheckQuantKernel(attn::RunQuantDecodeAvx512);
}
// Called directly, so AVX-512 machines check the AVX2 kernel too.
TEST(QuantDecode, Avx2MatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "this CPU has no AVX2 + FMA + F16C";
  CheckQuantKernel(attn::RunQuantDecodeAvx2);
}
#endif
#if defined(__aarch64__)
// Called directly, so a ZF_NO_NEON=1 run checks it too.
TEST(QuantDecode, AsimdMatchesReference) { CheckQuantKernel(attn::RunQuantDecodeAsimd); }
#endif

// The F16 decode kernel as KV-block partials, folded, against the whole call.
TEST(QuantDecode, F16PartialsFoldToWhole) {
  const int32_t n_q = 3, d = 64, n_keys = 300, kB = 64;
  const std::vector<float> kf = RandomFloats(size_t(n_keys) * size_t(d), 31), vf = RandomFloats(size_t(n_keys) * size_t(d), 32);
  std::vector<uint16_t> k(kf.size()), v(vf.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = quant::Fp32ToFp16(kf[i]), v[i] = quant::Fp32ToFp16(vf[i]);
  std::vector<float> q = RandomFloats(size_t(n_q) * size_t(d), 33);
  for (float& x : q) x = quant::Fp16ToFp32(quant::Fp32ToFp16(x));
  const std::vector<float> sink = testing::RandomSinks(n_q, 34);
  std::vector<float> s(size_t(n_q) * size_t(n_keys)), whole(size_t(n_q) * size_t(d)), folded(whole.size());
  attn::DecodeGroup g;
  g.q = q.data();
  g.n_q = n_q;
  g.d_k = g.d_v = d;
  g.k = k.data();
  g.k_stride = d;
  g.v = v.data();
  g.v_stride = d;
  g.n_keys = n_keys;
  g.scale = 0.125f;
  g.softcap = 0.0f;
  g.s = s.data();
  g.sink = sink.data();
  std::vector<float*> op = testing::RowPointers(whole, n_q, d);
  g.out = op.data();
  attn::RunDecode(g);
  const int32_t blocks = (n_keys + kB - 1) / kB;
  std::vector<attn::Partial> part(size_t(blocks) * size_t(n_q));
  std::vector<float> rows(size_t(blocks) * size_t(n_q) * size_t(d));
  for (int32_t c = 0; c < blocks; ++c) {
    attn::DecodeGroup w = g;
    w.k += c * kB * d;
    w.v += c * kB * d;
    w.n_keys = std::min(kB, n_keys - c * kB);
    w.part = part.data() + c * n_q;
    float* o[attn::kDecodeHeads];
    for (int32_t i = 0; i < n_q; ++i) o[i] = rows.data() + (size_t(c) * size_t(n_q) + size_t(i)) * size_t(d);
    w.out = o;
    attn::RunDecode(w);
  }
  for (int32_t i = 0; i < n_q; ++i) {
    attn::CombinePartials(part.data() + i, n_q, rows.data() + size_t(i) * size_t(d), int64_t{n_q} * d, blocks, d,
                          sink[size_t(i)], folded.data() + size_t(i) * size_t(d));
  }
  for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(folded[i], whole[i], 2e-5f * (1.0f + std::fabs(whole[i]))) << i;
}

// Decode at long depth (past attn::kSplitMinKeys, so split by KV blocks): one call for the
// prompt's tail = two chunks = one token at a time = batched rows, for 1, 2 and 3 threads, all
// the same bits; near a plain loop.
TEST(QuantDecode, LongDepthSplitIsExactForAnyThreadCount) {
  const int32_t n_head = 6, n_kv = 2, hd = 32, pos0 = attn::kSplitMinKeys + 77, n_tok = 5, n_pos = pos0 + n_tok;
  const std::pair<KvType, KvType> types[] = {
      {KvType::kF16, KvType::kF16}, {KvType::kQ8_0, KvType::kQ8_0}, {KvType::kQ4_0, KvType::kQ4_0}, {KvType::kQ8_0, KvType::kF16}};
  const std::vector<float> kf = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 41, 2.0f);
  const std::vector<float> vf = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 42);
  const std::vector<float> q = RandomFloats(size_t(n_tok) * size_t(n_head * hd), 43, 2.0f);
  const std::vector<float> sinks = testing::RandomSinks(n_head, 44);
  const size_t row = size_t(n_head * hd), n = size_t(n_tok) * row;
  for (const auto& [kt, vt] : types) {
    for (int32_t window : {0, 1500}) {
      SCOPED_TRACE(std::string("K ") + KvTypeName(kt) + " V " + KvTypeName(vt) + " window " + std::to_string(window));
      AttentionParams ap = testing::GroupedParams(n_head, n_kv, hd, window);
      ap.sinks = sinks.data();
      std::vector<float> first;
      for (int32_t threads : {1, 2, 3}) {
        CpuBackend be(threads);
        be.SetBatchInvariant(true);  // F16 prefill through the decode kernel (the exact path)
        std::unique_ptr<KvCache> kv;
        ASSERT_TRUE(be.CreateKv(1, n_pos + 3, n_kv * hd, n_kv * hd, kt, vt, &kv).ok());
        be.StoreKv(*kv, 0, kf.data(), vf.data(), n_pos, 0);
        std::vector<float> whole(n), parts(n), one(n), batch(n);
        be.Attention(*kv, 0, q.data(), n_tok, pos0, ap, whole.data());
        be.Attention(*kv, 0, q.data(), 2, pos0, ap, parts.data());
        be.Attention(*kv, 0, q.data() + 2 * row, n_tok - 2, pos0 + 2, ap, parts.data() + 2 * row);
        std::vector<Backend::DecodeRow> rows;
        for (int32_t t = 0; t < n_tok; ++t) {
          be.Attention(*kv, 0, q.data() + t * row, 1, pos0 + t, ap, one.data() + t * row);
          rows.push_back({kv.get(), q.data() + t * row, pos0 + t, batch.data() + t * row});
        }
        be.AttentionRows(0, rows.data(), n_tok, ap);
        ASSERT_EQ(std::memcmp(whole.data(), parts.data(), n * 4), 0) << "chunks, threads " << threads;
        ASSERT_EQ(std::memcmp(whole.data(), one.data(), n * 4), 0) << "one token at a time, threads " << threads;
        ASSERT_EQ(std::memcmp(whole.data(), batch.data(), n * 4), 0) << "batched rows, threads " << threads;
        if (first.empty()) {
          first = whole;
          // Near a plain loop in double over the dequantized rows (Q as the kernel rounds it).
          const CpuKvCache& c = *CpuKvCache::Of(*kv);
          // Structured bindings cannot be captured before C++20 (clang refuses): copies.
          const KvType k_type = kt, v_type = vt;
          const auto deq = [&](bool v, int32_t pos, float* o) {
            const KvType t = v ? v_type : k_type;
            const GgmlType gt = t == KvType::kQ8_0 ? GgmlType::Q8_0 : t == KvType::kQ4_0 ? GgmlType::Q4_0 : GgmlType::F16;
            quant::DequantizeRow(gt, c.Row(v, 0, pos), o, n_kv * hd);
          };
          std::vector<float> kr(size_t(n_pos) * size_t(n_kv * hd)), vr(kr.size());
          for (int32_t p = 0; p < n_pos; ++p) {
            deq(false, p, kr.data() + size_t(p) * size_t(n_kv * hd));
            deq(true, p, vr.data() + size_t(p) * size_t(n_kv * hd));
          }
          const bool rot = kvq::Rotated(kt);
          for (int32_t t = 0; t < n_tok; ++t) {
            const int32_t p = pos0 + t, lo = window > 0 ? std::max(0, p - window + 1) : 0;
            for (int32_t h = 0; h < n_head; ++h) {
              const int32_t g = h / (n_head / n_kv);
              std::vector<float> qh(q.begin() + int64_t(t * n_head + h) * hd, q.begin() + int64_t(t * n_head + h + 1) * hd);
              if (rot) {
                kvq::Rotate32(qh.data(), hd);
                std::vector<uint8_t> q8(KvRowBytes(KvType::kQ8_0, hd));
                quant::ref::QuantizeQ8_0(qh.data(), q8.data(), hd);
                quant::DequantizeRow(GgmlType::Q8_0, q8.data(), qh.data(), hd);
              } else {
                for (float& x : qh) x = quant::Fp16ToFp32(quant::Fp32ToFp16(x));
              }
              double mx = sinks[size_t(h)];
              std::vector<double> w;
              for (int32_t j = lo; j <= p; ++j) {
                double dot = 0;
                for (int32_t e = 0; e < hd; ++e) dot += double(qh[size_t(e)]) * kr[size_t(j) * size_t(n_kv * hd) + size_t(g * hd + e)];
                w.push_back(dot * ap.scale);
                mx = std::max(mx, w.back());
              }
              double sum = std::exp(double(sinks[size_t(h)]) - mx);
              for (double& x : w) sum += (x = std::exp(x - mx));
              std::vector<float> o(static_cast<size_t>(hd));
              for (int32_t e = 0; e < hd; ++e) {
                double acc = 0;
                for (int32_t j = lo; j <= p; ++j) acc += w[size_t(j - lo)] * vr[size_t(j) * size_t(n_kv * hd) + size_t(g * hd + e)];
                o[size_t(e)] = float(acc / sum);
              }
              if (kvq::Rotated(vt)) kvq::Rotate32(o.data(), hd);
              for (int32_t e = 0; e < hd; ++e) {
                const float want = o[size_t(e)], got = whole[size_t(t) * row + size_t(h * hd + e)];
                ASSERT_NEAR(got, want, 2e-4f * (1.0f + std::fabs(want))) << "token " << t << " head " << h << " dim " << e;
              }
            }
          }
        } else {
          ASSERT_EQ(std::memcmp(whole.data(), first.data(), n * 4), 0) << "threads " << threads << " vs 1";
        }
      }
    }
  }
}

// Rows on both sides of the split (attn::kSplitMinKeys keys) in several tiles of exact prefill's
// blocked loop (cpu_attention.cpp RunTileGroup), with a group wider than one decode pass: one
// call = two chunks (the tiles start at other rows) = one token at a time, the same bits per
// K/V type, with and without a window whose rows split too (each from its own first key).
TEST(QuantDecode, RowsInTilesAreExact) {
  const int32_t n_head = 5, n_kv = 1, hd = 32, n_tok = 3 * 8, pos0 = attn::kSplitMinKeys - 4, n_pos = pos0 + n_tok;
  const std::pair<KvType, KvType> types[] = {
      {KvType::kF16, KvType::kF16}, {KvType::kQ8_0, KvType::kQ8_0}, {KvType::kQ4_0, KvType::kQ8_0}};
  const std::vector<float> kf = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 51, 2.0f);
  const std::vector<float> vf = RandomFloats(size_t(n_pos) * size_t(n_kv * hd), 52);
  const std::vector<float> q = RandomFloats(size_t(n_tok) * size_t(n_head * hd), 53, 2.0f);
  const size_t row = size_t(n_head * hd), n = size_t(n_tok) * row;
  for (const auto& [kt, vt] : types) {
    for (int32_t window : {0, attn::kSplitMinKeys + 6}) {
      SCOPED_TRACE(std::string("K ") + KvTypeName(kt) + " V " + KvTypeName(vt) + " window " + std::to_string(window));
      AttentionParams ap = testing::GroupedParams(n_head, n_kv, hd, window);
      CpuBackend be(2);
      be.SetBatchInvariant(true);  // F16 prefill through the decode kernel (the exact path)
      std::unique_ptr<KvCache> kv;
      ASSERT_TRUE(be.CreateKv(1, n_pos, n_kv * hd, n_kv * hd, kt, vt, &kv).ok());
      be.StoreKv(*kv, 0, kf.data(), vf.data(), n_pos, 0);
      std::vector<float> whole(n), parts(n), one(n);
      be.Attention(*kv, 0, q.data(), n_tok, pos0, ap, whole.data());
      const int32_t first = 11;
      be.Attention(*kv, 0, q.data(), first, pos0, ap, parts.data());
      be.Attention(*kv, 0, q.data() + first * row, n_tok - first, pos0 + first, ap, parts.data() + first * row);
      for (int32_t t = 0; t < n_tok; ++t) be.Attention(*kv, 0, q.data() + t * row, 1, pos0 + t, ap, one.data() + t * row);
      for (int32_t t = 0; t < n_tok; ++t) {
        ASSERT_EQ(std::memcmp(whole.data() + t * row, one.data() + t * row, row * 4), 0) << "one call vs one token at a time, position " << pos0 + t;
        ASSERT_EQ(std::memcmp(parts.data() + t * row, one.data() + t * row, row * 4), 0) << "chunks vs one token at a time, position " << pos0 + t;
      }
    }
  }
}

}  // namespace
}  // namespace zf::engine

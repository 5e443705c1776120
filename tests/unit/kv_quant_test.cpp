// Quantized KV cache (engine/cpu/kv_quant.h, cpu_kv_cache.h, cpu_attention.cpp): the store-side
// quantizers against ggml's reference rounding, the dot-product kernels each ISA runs on the
// cache's rows against the scalar reference, attention over Q8_0 / Q4_0 (and mixed) K/V against
// a plain loop, and the exactness rule (prefill = one token at a time = batched, bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/attention_checks.h"
#include "common/random_data.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/cpu_kv_cache.h"
#include "engine/cpu/kv_quant.h"
#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

using testing::RandomFloats;

// Inputs with exact ties (x / d = k + 0.5) and zero blocks beside random rows.
std::vector<float> Awkward(int64_t n, uint32_t seed) {
  std::vector<float> x = RandomFloats(size_t(n), seed, 3.0f);
  for (int64_t i = 0; i < 32 && i < n; ++i) x[size_t(i)] = 0.0f;  // a zero block
  if (n >= 64) {
    for (int64_t i = 32; i < 64; ++i) x[size_t(i)] = float(i - 48) * 0.5f;  // halves: ties for Q4_0 and Q8_0
    x[40] = 12.7f;
  }
  return x;
}

TEST(KvQuant, Q8_0IsGgmlReferenceRounding) {
  for (int64_t n : {32, 64, 256, 1024}) {
    const std::vector<float> x = Awkward(n, uint32_t(n));
    std::vector<uint8_t> got(size_t(n / 32) * 34), want(got.size());
    kvq::QuantizeQ8_0(x.data(), got.data(), n);
    quant::ref::QuantizeQ8_0(x.data(), want.data(), n);  // ggml's quantize_row_q8_0_ref rounding
    EXPECT_EQ(got, want) << "n " << n;
  }
}

// Q4_0 by its definition, element by element, and its error bound.
TEST(KvQuant, Q4_0MatchesDefinition) {
  const int64_t n = 256;
  const std::vector<float> x = Awkward(n, 9);
  std::vector<uint8_t> q(size_t(n / 32) * 18);
  kvq::QuantizeQ4_0(x.data(), q.data(), n);
  std::vector<float> y(static_cast<size_t>(n));
  quant::DequantizeRow(GgmlType::Q4_0, q.data(), y.data(), n);
  const auto* blocks = reinterpret_cast<const quant::BlockQ4_0*>(q.data());
  for (int64_t b = 0; b < n / 32; ++b) {
    float mx = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[size_t(b * 32 + j)]) > std::fabs(mx)) mx = x[size_t(b * 32 + j)];
    }
    const float d = mx / -8.0f;
    EXPECT_EQ(blocks[b].d, quant::Fp32ToFp16(d)) << "block " << b;
    for (int j = 0; j < 32; ++j) {
      const float xi = x[size_t(b * 32 + j)];
      const int want = d == 0.0f ? 8 : std::min(15, int(int8_t(xi / d + 8.5f)));
      const int got = j < 16 ? blocks[b].qs[j] & 15 : blocks[b].qs[j - 16] >> 4;
      EXPECT_EQ(got, want) << "block " << b << " element " << j;
      EXPECT_LE(std::fabs(y[size_t(b * 32 + j)] - xi), std::fabs(d) * 1.01f + 1e-6f);
    }
  }
}

// The kernels attention calls on the cache's rows (Q in Q8_0 against Q8_0 / Q4_0 keys), each ISA
// this CPU has against the scalar reference, over head sizes of 1-8 blocks.
TEST(KvQuant, DotKernelsPerIsaMatchReference) {
  for (int64_t n : {32, 64, 96, 160, 256}) {
    const std::vector<float> k = Awkward(n, 3), q = RandomFloats(size_t(n), 4);
    std::vector<uint8_t> k8(size_t(n / 32) * 34), k4(size_t(n / 32) * 18), q8(size_t(n / 32) * 34);
    kvq::QuantizeQ8_0(k.data(), k8.data(), n);
    kvq::QuantizeQ4_0(k.data(), k4.data(), n);
    quant::ref::QuantizeQ8_0(q.data(), q8.data(), n);
    const float r8 = quant::ref::VecDotQ8_0(n, k8.data(), q8.data()), r4 = quant::ref::VecDotQ4_0(n, k4.data(), q8.data());
    const auto near = [&](float got, float want, const char* what) {
      EXPECT_NEAR(got, want, 1e-4f * (1.0f + std::fabs(want))) << what << " n " << n;
    };
    near(quant::VecDot(GgmlType::Q8_0, n, k8.data(), q8.data()), r8, "dispatched q8_0");
    near(quant::VecDot(GgmlType::Q4_0, n, k4.data(), q8.data()), r4, "dispatched q4_0");
#if defined(__x86_64__) || defined(__i386__)
    if (quant::CpuHasAvx2Fma16()) {
      near(quant::avx2::VecDotQ8_0(n, k8.data(), q8.data()), r8, "avx2 q8_0");
      near(quant::avx2::VecDotQ4_0(n, k4.data(), q8.data()), r4, "avx2 q4_0");
    }
    if (quant::CpuHasAvx512Vnni()) {
      near(quant::avx512::VecDotQ8_0(n, k8.data(), q8.data()), r8, "avx512 q8_0");
      near(quant::vnni::VecDotQ4_0(n, k4.data(), q8.data()), r4, "vnni q4_0");
    }
#endif
  }
}

// The rotation is orthonormal and its own inverse: dot products and norms are kept.
TEST(KvQuant, RotationIsOrthonormalInvolution) {
  const std::vector<float> a = RandomFloats(96, 1), b = RandomFloats(96, 2);
  std::vector<float> ra = a, rb = b;
  kvq::Rotate32(ra.data(), 96);
  kvq::Rotate32(rb.data(), 96);
  double d0 = 0, d1 = 0;
  for (size_t i = 0; i < 96; ++i) d0 += double(a[i]) * b[i], d1 += double(ra[i]) * rb[i];
  EXPECT_NEAR(d1, d0, 1e-5);
  kvq::Rotate32(ra.data(), 96);
  for (size_t i = 0; i < 96; ++i) EXPECT_NEAR(ra[i], a[i], 1e-6f);
  // One outlier channel: rotated, its block's largest magnitude falls by sqrt(32).
  std::vector<float> x(32, 0.01f);
  x[5] = 10.0f;
  kvq::Rotate32(x.data(), 32);
  float mx = 0;
  for (float v : x) mx = std::max(mx, std::fabs(v));
  EXPECT_LT(mx, 10.0f / 5.0f);
}

TEST(KvQuantCache, RefusesPartialBlocks) {
  CpuBackend be(1);
  std::unique_ptr<KvCache> kv;
  const Status st = be.CreateKv(1, 16, 80, 64, KvType::kQ8_0, KvType::kF16, &kv);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("q8_0"), std::string::npos) << st.message();
  EXPECT_TRUE(be.CreateKv(1, 16, 96, 64, KvType::kQ4_0, KvType::kQ8_0, &kv).ok());
  EXPECT_EQ(kv->StateBytes(1), size_t(3 * 18 + 2 * 34));  // K: 3 Q4_0 blocks, V: 2 Q8_0 blocks
}

struct Shape {
  int32_t n_head, n_kv, hd, n_tok, pos0, window;
  float softcap;
  bool sinks;
};

const Shape kShapes[] = {
    {9, 3, 64, 21, 7, 0, 0.0f, false},    // SmolLM2: GQA 3, continuing a cache
    {4, 1, 256, 13, 0, 0, 0.0f, false},   // Gemma 3: one KV head of 8 blocks
    {4, 1, 256, 20, 3, 8, 0.0f, false},   // sliding window
    {2, 2, 96, 9, 0, 0, 30.0f, false},    // softcap, 3 blocks per head, no grouping
    {8, 2, 64, 11, 3, 6, 0.0f, true},     // gpt-oss: sinks and a window
    {6, 2, 32, 7, 1, 0, 0.0f, false},     // one block per head
};

struct KvRun {
  std::unique_ptr<KvCache> kv;
  std::vector<float> q;
  AttentionParams ap;
  std::vector<float> sink;
};

void Prepare(CpuBackend& be, KvType kt, KvType vt, const Shape& s, KvRun* r) {
  const int32_t n_pos = s.pos0 + s.n_tok;
  ASSERT_TRUE(be.CreateKv(2, n_pos + 5, s.n_kv * s.hd, s.n_kv * s.hd, kt, vt, &r->kv).ok());
  const std::vector<float> k = RandomFloats(size_t(n_pos) * size_t(s.n_kv * s.hd), 4, 2.0f);
  const std::vector<float> v = RandomFloats(size_t(n_pos) * size_t(s.n_kv * s.hd), 5);
  be.StoreKv(*r->kv, 1, k.data(), v.data(), n_pos, 0);
  r->q = RandomFloats(size_t(s.n_tok) * size_t(s.n_head * s.hd), 6, 2.0f);
  r->ap.n_head = s.n_head;
  r->ap.n_head_kv = s.n_kv;
  r->ap.head_dim_k = r->ap.head_dim_v = s.hd;
  r->ap.scale = 1.0f / std::sqrt(float(s.hd));
  r->ap.window = s.window;
  r->ap.softcap = s.softcap;
  r->sink = testing::RandomSinks(s.n_head, 7);
  if (s.sinks) r->ap.sinks = r->sink.data();
}

// A row of the cache in F32 (the scalar reference's dequantization).
std::vector<float> CacheRow(const CpuKvCache& c, bool v, int32_t pos) {
  const int32_t w = v ? c.v_width() : c.k_width();
  const KvType t = v ? c.v_type() : c.k_type();
  const GgmlType g = t == KvType::kQ8_0 ? GgmlType::Q8_0 : t == KvType::kQ4_0 ? GgmlType::Q4_0
                     : t == KvType::kF16 ? GgmlType::F16 : GgmlType::F32;
  std::vector<float> out(static_cast<size_t>(w));
  quant::ref::GetDequantizeFn(g)(c.Row(v, 1, pos), out.data(), w);
  return out;
}

// Plain loop in double over the dequantized rows, Q rounded as K's dot product type takes it.
std::vector<float> PlainAttention(const KvRun& r, const Shape& s) {
  const CpuKvCache& c = *CpuKvCache::Of(*r.kv);
  const AttentionParams& ap = r.ap;
  std::vector<float> out(size_t(s.n_tok) * size_t(s.n_head * s.hd));
  for (int32_t t = 0; t < s.n_tok; ++t) {
    const int32_t p = s.pos0 + t, lo = s.window > 0 ? std::max(0, p - s.window + 1) : 0;
    for (int32_t h = 0; h < s.n_head; ++h) {
      const int32_t g = h / (s.n_head / s.n_kv);
      std::vector<float> q(r.q.begin() + (int64_t{t} * s.n_head + h) * s.hd, r.q.begin() + (int64_t{t} * s.n_head + h + 1) * s.hd);
      if (c.k_type() == KvType::kQ8_0 || c.k_type() == KvType::kQ4_0) {
        kvq::Rotate32(q.data(), s.hd);  // the cache holds rotated K rows
        std::vector<uint8_t> q8(size_t(s.hd / 32) * 34);
        quant::ref::QuantizeQ8_0(q.data(), q8.data(), s.hd);
        quant::DequantizeRow(GgmlType::Q8_0, q8.data(), q.data(), s.hd);
      } else if (c.k_type() == KvType::kF16) {
        for (float& x : q) x = quant::Fp16ToFp32(quant::Fp32ToFp16(x));
      }
      std::vector<double> w;
      double mx = s.sinks ? double(r.sink[size_t(h)]) : -INFINITY;
      for (int32_t j = lo; j <= p; ++j) {
        const std::vector<float> k = CacheRow(c, false, j);
        double dot = 0.0;
        for (int32_t d = 0; d < s.hd; ++d) dot += double(q[size_t(d)]) * k[size_t(g * s.hd + d)];
        dot *= ap.scale;
        if (ap.softcap > 0.0f) dot = ap.softcap * std::tanh(dot / ap.softcap);
        w.push_back(dot);
        mx = std::max(mx, dot);
      }
      double sum = s.sinks ? std::exp(double(r.sink[size_t(h)]) - mx) : 0.0;
      for (double& x : w) sum += (x = std::exp(x - mx));
      float* o_row = out.data() + (size_t(t) * s.n_head + h) * s.hd;
      for (int32_t e = 0; e < s.hd; ++e) {
        double o = 0.0;
        for (int32_t j = lo; j <= p; ++j) o += w[size_t(j - lo)] * CacheRow(c, true, j)[size_t(g * s.hd + e)];
        o_row[e] = float(o / sum);
      }
      if (kvq::Rotated(c.v_type())) kvq::Rotate32(o_row, s.hd);  // rotated V rows: rotate back
    }
  }
  return out;
}

const std::pair<KvType, KvType> kTypes[] = {
    {KvType::kQ8_0, KvType::kQ8_0}, {KvType::kQ4_0, KvType::kQ4_0}, {KvType::kF16, KvType::kQ8_0},
    {KvType::kQ8_0, KvType::kF16},  {KvType::kQ4_0, KvType::kQ8_0}, {KvType::kF32, KvType::kQ4_0},
};

std::string Name(KvType k, KvType v) { return std::string("K ") + KvTypeName(k) + " V " + KvTypeName(v); }

TEST(KvQuantAttention, MatchesPlainLoop) {
  CpuBackend be(2);
  for (const auto& [kt, vt] : kTypes) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(Name(kt, vt) + " hd " + std::to_string(s.hd) + " heads " + std::to_string(s.n_head));
      KvRun r;
      Prepare(be, kt, vt, s, &r);
      std::vector<float> out(size_t(s.n_tok) * size_t(s.n_head * s.hd), NAN);
      be.Attention(*r.kv, 1, r.q.data(), s.n_tok, s.pos0, r.ap, out.data());
      const std::vector<float> want = PlainAttention(r, s);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-4f * (1.0f + std::fabs(want[i]))) << i;
    }
  }
}

// One call for the whole prompt = two chunks = one token at a time = batched decode rows, bit for
// bit, exact-prefill backend or not (quantized K/V always take the per-row path).
TEST(KvQuantAttention, PrefillChunksDecodeAndBatchAreBitIdentical) {
  for (bool exact : {true, false}) {
    CpuBackend be(2);
    be.SetBatchInvariant(exact);
    for (const auto& [kt, vt] : kTypes) {
      for (const Shape& s : kShapes) {
        SCOPED_TRACE(Name(kt, vt) + " hd " + std::to_string(s.hd) + (exact ? " exact" : " fast"));
        KvRun r;
        Prepare(be, kt, vt, s, &r);
        const size_t row = size_t(s.n_head * s.hd);
        std::vector<float> whole(size_t(s.n_tok) * row), parts(whole.size()), one(whole.size()), batch(whole.size());
        be.Attention(*r.kv, 1, r.q.data(), s.n_tok, s.pos0, r.ap, whole.data());
        const int32_t cut = s.n_tok / 3 + 1;
        be.Attention(*r.kv, 1, r.q.data(), cut, s.pos0, r.ap, parts.data());
        be.Attention(*r.kv, 1, r.q.data() + cut * row, s.n_tok - cut, s.pos0 + cut, r.ap, parts.data() + cut * row);
        std::vector<Backend::DecodeRow> rows;
        for (int32_t t = 0; t < s.n_tok; ++t) {
          be.Attention(*r.kv, 1, r.q.data() + t * row, 1, s.pos0 + t, r.ap, one.data() + t * row);
          rows.push_back({r.kv.get(), r.q.data() + t * row, s.pos0 + t, batch.data() + t * row});
        }
        be.AttentionRows(1, rows.data(), int32_t(rows.size()), r.ap);
        ASSERT_EQ(std::memcmp(whole.data(), parts.data(), whole.size() * 4), 0) << "chunks";
        ASSERT_EQ(std::memcmp(whole.data(), one.data(), whole.size() * 4), 0) << "one token at a time";
        ASSERT_EQ(std::memcmp(whole.data(), batch.data(), whole.size() * 4), 0) << "batched rows";
      }
    }
  }
}

// Rows copied out as planes and into another cache (session state, prefix cache) give the same
// attention, bit for bit.
TEST(KvQuantCache, PlanesRoundTrip) {
  CpuBackend be(1);
  const Shape s = kShapes[0];
  KvRun r;
  Prepare(be, KvType::kQ4_0, KvType::kQ8_0, s, &r);
  const int32_t n_pos = s.pos0 + s.n_tok;
  std::vector<uint8_t> bytes(r.kv->StateBytes(n_pos));
  ASSERT_EQ(bytes.size(), size_t(2) * size_t(n_pos) * (KvRowBytes(KvType::kQ4_0, 192) + KvRowBytes(KvType::kQ8_0, 192)));
  ASSERT_TRUE(r.kv->ReadRows(0, n_pos, bytes.data()).ok());
  std::unique_ptr<KvCache> copy;
  ASSERT_TRUE(be.CreateKv(2, n_pos + 5, 192, 192, KvType::kQ4_0, KvType::kQ8_0, &copy).ok());
  ASSERT_TRUE(copy->WriteRows(0, n_pos, bytes.data()).ok());
  const size_t n = size_t(s.n_tok) * size_t(s.n_head * s.hd);
  std::vector<float> a(n), b(n);
  be.Attention(*r.kv, 1, r.q.data(), s.n_tok, s.pos0, r.ap, a.data());
  be.Attention(*copy, 1, r.q.data(), s.n_tok, s.pos0, r.ap, b.data());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0);
}

}  // namespace
}  // namespace zf::engine

// The packed prefill GEMM (quant/gemm_packed.h): packing reproduces DequantizeRow exactly, and
// the dispatched kernel (AVX-512 where available) matches the scalar reference and the float
// product of the dequantized rows, for every packable type, row/token tails and extreme scales.
#include "quant/gemm_packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/kernels.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

// Random bytes are valid blocks once the F16 scale words are set to finite values of the given
// magnitude (d, and m/dmin where the type has one).
std::vector<uint8_t> RandomWeights(GgmlType t, int64_t rows, int64_t k, float scale, uint32_t seed) {
  std::vector<uint8_t> v(RowSize(t, k) * size_t(rows));
  std::mt19937 rng(seed);
  for (auto& b : v) b = uint8_t(rng());
  const size_t block = GetTypeTraits(t)->type_size;
  for (size_t off = 0; off + block <= v.size(); off += block) {
    const uint16_t d = Fp32ToFp16(scale * (0.5f + 0.1f * float(rng() % 10)));
    const uint16_t m = Fp32ToFp16(-scale * 0.3f);
    if (t == GgmlType::Q6_K) {
      std::memcpy(&v[off + 208], &d, 2);  // ql, qh, scales, then d
      continue;
    }
    std::memcpy(&v[off], &d, 2);
    if (t != GgmlType::Q8_0 && t != GgmlType::Q4_0 && t != GgmlType::Q5_0) std::memcpy(&v[off + 2], &m, 2);
  }
  return v;
}

std::vector<uint8_t> RandomActivations(int64_t n_tok, int64_t k, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(size_t(n_tok * k));
  for (float& v : x) v = nd(rng);
  if (n_tok > 1) std::fill(x.begin() + k, x.begin() + 2 * k, 0.0f);  // an all-zero token (scale 0)
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> q(row * size_t(n_tok));
  for (int64_t t = 0; t < n_tok; ++t) QuantizeActivations(GgmlType::Q8_0, x.data() + t * k, q.data() + row * size_t(t), k);
  return q;
}

// The product under test: the dispatched one, or one ISA's kernel called directly (so an
// AVX-512 machine also checks the AVX2 kernel, and a dot-product aarch64 CPU the baseline NEON
// one).
using GemmFn = void (*)(const void*, int64_t, int, int64_t, const PackedActs&, int64_t, float*, int64_t);

// The lower-level kernels this CPU can run besides the dispatched one.
std::vector<GemmFn> DirectKernels() {
#if defined(__x86_64__) || defined(__i386__)
  if (CpuHasAvx2Fma16()) return {avx2::GemmPacked};
#elif defined(__aarch64__)
  return {asimd::GemmPacked};
#endif
  return {};
}

void Check(GgmlType t, int64_t rows, int64_t n_tok, int64_t k, float w_scale, float a_scale, GemmFn gemm = GemmPacked) {
  SCOPED_TRACE(std::string(TypeName(t)) + " rows " + std::to_string(rows) + " tokens " + std::to_string(n_tok) +
               " k " + std::to_string(k) + " w_scale " + std::to_string(w_scale) + " a_scale " + std::to_string(a_scale));
  const int group = PackGroup(t);
  ASSERT_NE(group, 0);
  const int64_t ng = k / group, nb = k / 32;
  const size_t w_row = RowSize(t, k), a_row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> w = RandomWeights(t, rows, k, w_scale, 11), a = RandomActivations(n_tok, k, a_scale, 12);
  const int offset = PackOffset(t);
  std::vector<float> ad(size_t(n_tok * nb)), asum(size_t(n_tok * ng));
  std::vector<int32_t> aoff(size_t(n_tok * ng));
  for (int64_t j = 0; j < n_tok; ++j) {
    Q8_0Scales(a.data() + a_row * size_t(j), k, group, offset, &ad[size_t(j * nb)], &asum[size_t(j * ng)], &aoff[size_t(j * ng)]);
  }
  // Fixed-offset formats are checked both ways: offset in the integer dot (as the engine runs
  // them) and through m * asum.
  for (bool use_aoff : {offset != 0, false}) {
  SCOPED_TRACE(use_aoff ? "integer offset" : "m * asum");
  const PackedActs acts{a.data(), a_row, ad.data(), asum.data(), use_aoff ? aoff.data() : nullptr, offset};

  std::vector<float> y(size_t(rows * n_tok), NAN), y_ref(size_t(rows * n_tok), NAN);
  std::vector<uint8_t> tile(PackedTileBytes(k, group)), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
  std::vector<float> deq(static_cast<size_t>(k)), af(static_cast<size_t>(k));
  std::vector<double> absw(size_t(rows * k));  // |d * q| + |m|: the size of the kernel's terms
  for (int64_t r0 = 0; r0 < rows; r0 += kPackRows) {
    const int64_t n = std::min<int64_t>(kPackRows, rows - r0);
    PackTile(t, w.data() + w_row * size_t(r0), w_row, n, k, tile.data(), scratch.data());
    // Exact packing: d * q + m equals the reference dequantization (up to the rounding of the
    // float products themselves, e.g. Q6_K's d * scale * q can need 25 bits).
    for (int64_t r = 0; r < n; ++r) {
      DequantizeRow(t, w.data() + w_row * size_t(r0 + r), deq.data(), k);
      for (int64_t i = 0; i < k; ++i) {
        const uint8_t* o = tile.data() + size_t(i / group) * (size_t(16 * group) + 128);
        float d, m;
        std::memcpy(&d, o + 16 * group + 4 * r, 4);
        std::memcpy(&m, o + 16 * group + 64 + 4 * r, 4);
        const float q = float(o[64 * ((i % group) / 4) + 4 * r + i % 4]);
        const double v = double(d) * q + double(m);
        ASSERT_NEAR(v, deq[size_t(i)], 1.2e-7 * (std::fabs(double(d) * q) + std::fabs(double(m))))
            << "row " << r0 + r << " element " << i;
        absw[size_t((r0 + r) * k + i)] = std::fabs(double(d) * q) + std::fabs(double(m));
      }
    }
    gemm(tile.data(), k, group, n, acts, n_tok, y.data() + r0, rows);
    ref::GemmPacked(tile.data(), k, group, n, acts, n_tok, y_ref.data() + r0, rows);
  }
  for (int64_t j = 0; j < n_tok; ++j) {
    DequantizeRow(GgmlType::Q8_0, a.data() + a_row * size_t(j), af.data(), k);
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRow(t, w.data() + w_row * size_t(r), deq.data(), k);
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        exact += double(deq[size_t(i)]) * af[size_t(i)];
        mag += absw[size_t(r * k + i)] * std::fabs(double(af[size_t(i)]));
      }
      const float got = y[size_t(j * rows + r)], want = y_ref[size_t(j * rows + r)];
      // Offsets folded into m cancel against the activation sums, so float rounding is relative
      // to the size of the unshifted terms (mag), not to the result.
      ASSERT_NEAR(got, want, 1e-5 * mag + 1e-30) << "(" << r << ", " << j << ") vs reference";
      ASSERT_NEAR(got, exact, 1e-5 * mag + 1e-30) << "(" << r << ", " << j << ") vs float product";
    }
  }
  }
}

const GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

TEST(GemmPacked, AllTypesWithRowAndTokenTails) {
  for (GgmlType t : kTypes) {
    for (int64_t rows : {1, 5, 16, 33}) {
      for (int64_t n_tok : {1, 7, 8, 19}) Check(t, rows, n_tok, 512, 0.01f, 1.0f);
    }
  }
}

TEST(GemmPacked, OddBlockCountsForLegacyTypes) {
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0}) {
    for (int64_t k : {32, 96, 608}) Check(t, 17, 9, k, 0.01f, 1.0f);
  }
}

TEST(GemmPacked, ExtremeScales) {
  for (GgmlType t : kTypes) {
    Check(t, 16, 9, 256, 1e-4f, 1e-3f);
    Check(t, 16, 9, 256, 8.0f, 1e3f);
  }
}

TEST(GemmPacked, LowerLevelKernelsWithTailsAndExtremeScales) {
  const std::vector<GemmFn> kernels = DirectKernels();
  if (kernels.empty()) GTEST_SKIP() << "no lower-level SIMD kernel runs on this CPU";
  for (GemmFn gemm : kernels) {
    for (GgmlType t : kTypes) {
      for (int64_t rows : {1, 8, 9, 33}) {
        for (int64_t n_tok : {1, 2, 3, 7}) Check(t, rows, n_tok, 512, 0.01f, 1.0f, gemm);
      }
      Check(t, 16, 9, 256, 1e-4f, 1e-3f, gemm);
      Check(t, 16, 9, 256, 8.0f, 1e3f, gemm);
    }
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q5_1, GgmlType::Q8_0}) Check(t, 17, 4, 96, 0.01f, 1.0f, gemm);
  }
}

TEST(GemmPacked, LowerLevelKernelsQ8ExtremeQuantsDoNotSaturate) {
  const std::vector<GemmFn> kernels = DirectKernels();
  if (kernels.empty()) GTEST_SKIP() << "no lower-level SIMD kernel runs on this CPU";
  // Q8_0 weights of -128 / 127 against activations of +-127: the largest int16 pairs (AVX2) and
  // products (baseline NEON).
  const int64_t k = 64, rows = 16, n_tok = 2;
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> w(row * rows), a(row * n_tok);
  const uint16_t one = Fp32ToFp16(1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      uint8_t* blk = w.data() + row * size_t(r) + size_t(b) * 34;
      std::memcpy(blk, &one, 2);
      for (int i = 0; i < 32; ++i) blk[2 + i] = uint8_t(r % 2 ? 0x80 : 0x7F);
    }
  }
  for (int64_t j = 0; j < n_tok; ++j) {
    for (int64_t b = 0; b < k / 32; ++b) {
      uint8_t* blk = a.data() + row * size_t(j) + size_t(b) * 34;
      std::memcpy(blk, &one, 2);
      for (int i = 0; i < 32; ++i) blk[2 + i] = uint8_t(((i + j) % 2) ? 127 : -127);
    }
  }
  std::vector<float> ad(size_t(n_tok * k / 32)), asum(ad.size());
  std::vector<int32_t> aoff(ad.size());
  for (int64_t j = 0; j < n_tok; ++j) {
    Q8_0Scales(a.data() + row * size_t(j), k, 32, 128, &ad[size_t(j * k / 32)], &asum[size_t(j * k / 32)],
               &aoff[size_t(j * k / 32)]);
  }
  std::vector<uint8_t> tile(PackedTileBytes(k, 32)), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
  PackTile(GgmlType::Q8_0, w.data(), row, rows, k, tile.data(), scratch.data());
  const PackedActs acts{a.data(), row, ad.data(), asum.data(), aoff.data(), 128};
  std::vector<float> y(size_t(rows * n_tok));
  for (GemmFn gemm : kernels) {
    gemm(tile.data(), k, 32, rows, acts, n_tok, y.data(), rows);
    for (int64_t j = 0; j < n_tok; ++j) {
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(y[size_t(j * rows + r)],
                  VecDot(GgmlType::Q8_0, k, w.data() + row * size_t(r), a.data() + row * size_t(j)))
            << "row " << r << " token " << j;
      }
    }
  }
}

TEST(GemmPacked, LowerLevelKernelsLargestQuantsDoNotOverflowInt16) {
  const std::vector<GemmFn> kernels = DirectKernels();
  if (kernels.empty()) GTEST_SKIP() << "no lower-level SIMD kernel runs on this CPU";
  // Every quant at its format's maximum (all bits set) against activations all +127: the int16
  // partial sums reach their bounds (4 x 2 x 31 x 127 for the 32-element groups, 2 x 2 x 63 x
  // 127 for Q6_K's 16-element groups).
  const int64_t k = 512, rows = 16, n_tok = 4;
  for (GgmlType t : kTypes) {
    SCOPED_TRACE(TypeName(t));
    std::vector<uint8_t> w(RowSize(t, k) * size_t(rows), 0xFF);
    const size_t block = GetTypeTraits(t)->type_size;
    const uint16_t d = Fp32ToFp16(0.01f), m = Fp32ToFp16(-0.003f);
    for (size_t off = 0; off + block <= w.size(); off += block) {
      std::memcpy(&w[off + (t == GgmlType::Q6_K ? 208 : 0)], &d, 2);
      if (t == GgmlType::Q4_1 || t == GgmlType::Q5_1 || t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
        std::memcpy(&w[off + 2], &m, 2);
      }
    }
    const std::vector<float> x(size_t(n_tok * k), 1.0f);
    const size_t a_row = RowSize(GgmlType::Q8_0, k);
    std::vector<uint8_t> a(a_row * size_t(n_tok));
    for (int64_t j = 0; j < n_tok; ++j) QuantizeActivations(GgmlType::Q8_0, x.data() + j * k, a.data() + a_row * size_t(j), k);
    const int group = PackGroup(t), offset = PackOffset(t);
    const int64_t ng = k / group, nb = k / 32;
    std::vector<float> ad(size_t(n_tok * nb)), asum(size_t(n_tok * ng));
    std::vector<int32_t> aoff(size_t(n_tok * ng));
    for (int64_t j = 0; j < n_tok; ++j) {
      Q8_0Scales(a.data() + a_row * size_t(j), k, group, offset, &ad[size_t(j * nb)], &asum[size_t(j * ng)],
                 &aoff[size_t(j * ng)]);
    }
    std::vector<uint8_t> tile(PackedTileBytes(k, group)), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
    PackTile(t, w.data(), RowSize(t, k), rows, k, tile.data(), scratch.data());
    const PackedActs acts{a.data(), a_row, ad.data(), asum.data(), offset != 0 ? aoff.data() : nullptr, offset};
    std::vector<float> y(size_t(rows * n_tok)), y_ref(y.size());
    ref::GemmPacked(tile.data(), k, group, rows, acts, n_tok, y_ref.data(), rows);
    for (GemmFn gemm : kernels) {
      gemm(tile.data(), k, group, rows, acts, n_tok, y.data(), rows);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-4f * (1.0f + std::fabs(y_ref[i]))) << i;
    }
  }
}

TEST(GemmPacked, OffsetsMatchTheUnpackedMins) {
  for (GgmlType t : kTypes) {
    if (PackOffset(t) == 0) continue;
    std::vector<uint8_t> w = RandomWeights(t, 3, 256, 0.01f, 5);
    std::vector<uint8_t> tile(PackedTileBytes(256, PackGroup(t))), scratch(256 + 2 * 16 * 4);
    PackTile(t, w.data(), RowSize(t, 256), 3, 256, tile.data(), scratch.data());
    const int g = PackGroup(t);
    for (int64_t grp = 0; grp < 256 / g; ++grp) {
      for (int r = 0; r < 3; ++r) {
        float d, m;
        std::memcpy(&d, tile.data() + size_t(grp) * size_t(16 * g + 128) + size_t(16 * g + 4 * r), 4);
        std::memcpy(&m, tile.data() + size_t(grp) * size_t(16 * g + 128) + size_t(16 * g + 64 + 4 * r), 4);
        ASSERT_EQ(m, -float(PackOffset(t)) * d) << TypeName(t);
      }
    }
  }
}

// The dispatched (SIMD) packer writes exactly the bytes of the portable one.
TEST(GemmPacked, PackerMatchesReferenceBytes) {
  for (GgmlType t : kTypes) {
    const bool k_quant = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
    for (int64_t k : {int64_t{256}, int64_t{768}, k_quant ? int64_t{256} : int64_t{96}}) {
      for (int64_t rows : {1, 7, 16}) {
        std::vector<uint8_t> w = RandomWeights(t, rows, k, 0.02f, uint32_t(rows + k));
        const size_t bytes = PackedTileBytes(k, PackGroup(t));
        std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0xCD), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
        PackTile(t, w.data(), RowSize(t, k), rows, k, a.data(), scratch.data());
        ref::PackTile(t, w.data(), RowSize(t, k), rows, k, b.data(), scratch.data());
        ASSERT_EQ(a, b) << TypeName(t) << " k " << k << " rows " << rows;
      }
    }
  }
}

// A tile made straight from a decode-layout group (packed.h) holds PackTile's bytes.
TEST(GemmPacked, TileFromDecodeLayoutMatchesPackTile) {
  bool ran = false;
  for (GgmlType t : kTypes) {
    const bool k_quant = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
    for (int64_t k : {int64_t{256}, int64_t{768}, k_quant ? int64_t{512} : int64_t{96}}) {
      if (PackedGroupBytes(t, k) == 0) continue;  // no decode layout (Q5_K)
      for (int64_t rows : {1, 7, 9, 16}) {
        SCOPED_TRACE(std::string(TypeName(t)) + " k " + std::to_string(k) + " rows " + std::to_string(rows));
        std::vector<uint8_t> w = RandomWeights(t, rows, k, 0.02f, uint32_t(3 * rows + k));
        std::vector<uint8_t> group(PackedGroupBytes(t, k) + 64);
        uint8_t* g = group.data() + (64 - reinterpret_cast<uintptr_t>(group.data()) % 64) % 64;
        PackDecodeGroup(t, w.data(), RowSize(t, k), k, rows, g);
        const size_t bytes = PackedTileBytes(k, PackGroup(t));
        std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0xCD), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
        if (!PackTileFromDecode(t, g, rows, k, a.data())) continue;  // no packer on this CPU
        ran = true;
        PackTile(t, w.data(), RowSize(t, k), rows, k, b.data(), scratch.data());
        ASSERT_EQ(a, b);
      }
    }
  }
  if (!ran) GTEST_SKIP() << "no decode-layout tile packer on this CPU";
}

TEST(GemmPacked, UnsupportedTypesAreNotPacked) {
  EXPECT_EQ(PackGroup(GgmlType::F32), 0);
  EXPECT_EQ(PackGroup(GgmlType::F16), 0);
  EXPECT_EQ(PackGroup(GgmlType::Q2_K), 0);
  EXPECT_EQ(PackGroup(GgmlType::Q3_K), 0);
}

}  // namespace
}  // namespace zf::quant

namespace zf::quant {
namespace {

// The fused quantizer (dispatched) writes the reference quantizer's bytes and Q8_0Scales' tables.
TEST(GemmPacked, FusedQuantizerMatchesReference) {
  const int64_t k = 640;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(k));
  for (float& v : x) v = nd(rng);
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f);  // an all-zero block (scale 0)
  for (int i = 0; i < 32; ++i) x[size_t(96 + i)] = float(i - 16) * 0.5f;  // exact halves after scaling
  x[200] = 1e6f;                                   // one huge value
  for (int group : {32, 16}) {
    for (int offset : {0, 16, 128}) {
      const size_t row = RowSize(GgmlType::Q8_0, k);
      std::vector<uint8_t> a(row), b(row);
      std::vector<float> ad_a(size_t(k / 32)), ad_b(size_t(k / 32)), as_a(size_t(k / group)), as_b(size_t(k / group));
      std::vector<int32_t> ao_a(size_t(k / group), 7), ao_b(size_t(k / group), 7);
      QuantizeQ8_0Tables(x.data(), k, a.data(), group, offset, ad_a.data(), as_a.data(), ao_a.data());
      ref::QuantizeActivations(GgmlType::Q8_0, x.data(), b.data(), k);
      Q8_0Scales(b.data(), k, group, offset, ad_b.data(), as_b.data(), ao_b.data());
      EXPECT_EQ(a, b) << "group " << group;
      EXPECT_EQ(ad_a, ad_b);
      EXPECT_EQ(as_a, as_b);
      EXPECT_EQ(ao_a, ao_b);
    }
  }
}

}  // namespace
}  // namespace zf::quant

// The multi-token Q8_0 kernel (prefill) against one VecDot per (row, token), on random rows,
// odd row/token counts (tile tails) and extreme scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"

namespace zf::quant {
namespace {

std::vector<uint8_t> QuantRows(int64_t rows, int64_t k, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(size_t(rows * k));
  for (float& v : x) v = d(rng);
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> q(row * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) QuantizeActivations(GgmlType::Q8_0, x.data() + r * k, q.data() + row * size_t(r), k);
  return q;
}

void Check(int64_t rows, int64_t n_tok, int64_t k, float scale) {
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> w = QuantRows(rows, k, scale, 1), a = QuantRows(n_tok, k, 1.0f, 2);
  std::vector<float> y(size_t(rows * n_tok), -1.0f);
  GemmQ8_0(k, w.data(), row, rows, a.data(), row, n_tok, y.data(), rows);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      const float ref = VecDot(GgmlType::Q8_0, k, w.data() + row * size_t(r), a.data() + row * size_t(t));
      ASSERT_NEAR(y[size_t(t * rows + r)], ref, 1e-4f * (std::fabs(ref) + 1.0f) * scale)
          << "rows " << rows << " tokens " << n_tok << " k " << k << " at (" << r << ", " << t << ")";
    }
  }
}

TEST(GemmQ8_0, MatchesVecDotIncludingTails) {
  for (int64_t rows : {1, 2, 3, 16, 17}) {
    for (int64_t n_tok : {1, 3, 4, 5, 9}) Check(rows, n_tok, 640, 1.0f);
  }
}

TEST(GemmQ8_0, LongRowsAndExtremeScales) {
  Check(5, 6, 32 * 600, 1.0f);  // beyond the kernel's stack staging: falls back to VecDot
  Check(4, 8, 2048, 1e-4f);
  Check(4, 8, 2048, 1e4f);
}

}  // namespace
}  // namespace zf::quant

namespace zf::quant {
namespace {

// Random bytes are valid blocks of every affine type once the F16 scale words at the start of
// each block (d, and m or dmin) are set to small values.
std::vector<uint8_t> RandomBlocks(GgmlType t, int64_t rows, int64_t k, uint32_t seed) {
  std::vector<uint8_t> v(RowSize(t, k) * size_t(rows));
  std::mt19937 rng(seed);
  for (auto& b : v) b = uint8_t(rng());
  const size_t block = GetTypeTraits(t)->type_size;
  for (size_t off = 0; off + block <= v.size(); off += block) {
    const uint16_t d = Fp32ToFp16(0.01f + 0.001f * float(rng() % 10)), m = Fp32ToFp16(-0.05f);
    std::memcpy(&v[off], &d, 2);
    std::memcpy(&v[off + 2], &m, 2);
  }
  return v;
}

// The affine unpacking reproduces DequantizeRow exactly, and GemmAffine (dispatched) matches
// its scalar definition and the float dot of the dequantized rows.
TEST(GemmAffine, UnpackIsExactAndProductMatches) {
  const int64_t k = 512, rows = 5, n_tok = 6, nb = k / 32;
  for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K}) {
    std::vector<uint8_t> w = RandomBlocks(t, rows, k, 7);
    const size_t wrow = RowSize(t, k);
    std::vector<float> d(size_t(rows * nb)), m(size_t(rows * nb));
    std::vector<float> deq(static_cast<size_t>(k));
    std::vector<uint8_t> q(size_t(rows * k));
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(UnpackAffine32(t, w.data() + wrow * size_t(r), k, &d[size_t(r * nb)], &m[size_t(r * nb)], &q[size_t(r * k)]));
      DequantizeRow(t, w.data() + wrow * size_t(r), deq.data(), k);
      for (int64_t i = 0; i < k; ++i) {
        const float v = d[size_t(r * nb + i / 32)] * float(q[size_t(r * k + i)]) + m[size_t(r * nb + i / 32)];
        ASSERT_NEAR(v, deq[size_t(i)], 1e-6f * std::fabs(deq[size_t(i)]) + 1e-30f) << TypeName(t) << " row " << r << " i " << i;
      }
    }
    std::vector<uint8_t> a = QuantRows(n_tok, k, 1.0f, 3);
    const size_t arow = RowSize(GgmlType::Q8_0, k);
    std::vector<float> asum(size_t(n_tok * nb));
    for (int64_t tt = 0; tt < n_tok; ++tt) Q8_0BlockSums(a.data() + arow * size_t(tt), k, &asum[size_t(tt * nb)]);
    std::vector<float> y(size_t(rows * n_tok));
    GemmAffine(k, AffineRows{d.data(), m.data(), q.data()}, rows, a.data(), arow, asum.data(), n_tok, y.data(), rows);
    for (int64_t tt = 0; tt < n_tok; ++tt) {
      std::vector<float> af(static_cast<size_t>(k));
      DequantizeRow(GgmlType::Q8_0, a.data() + arow * size_t(tt), af.data(), k);
      for (int64_t r = 0; r < rows; ++r) {
        DequantizeRow(t, w.data() + wrow * size_t(r), deq.data(), k);
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          ref += double(deq[size_t(i)]) * af[size_t(i)];
          mag += std::fabs(double(deq[size_t(i)]) * af[size_t(i)]);
        }
        ASSERT_NEAR(y[size_t(tt * rows + r)], ref, 1e-4 * mag + 1e-6) << TypeName(t) << " (" << r << ", " << tt << ")";
      }
    }
  }
}

}  // namespace
}  // namespace zf::quant

namespace zf::quant {
namespace {

// The decode GEMV (dispatched: AVX-512, VNNI or AVX2) equals one reference dot per row, for
// even/odd block counts, row counts with tails, and rows longer than the kernel's staging.
TEST(Gemv, MatchesReferenceDotPerRow) {
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL,
                     GgmlType::MXFP4, GgmlType::IQ4_XS}) {
    for (int64_t k : {int64_t(32), int64_t(96), int64_t(640), int64_t(32 * 600), int64_t(256 * 3)}) {
      if (k % GetTypeTraits(t)->block_size != 0) continue;
      const int64_t rows = 7;
      std::vector<uint8_t> w = t == GgmlType::Q8_0 ? QuantRows(rows, k, 1.0f, 11) : RandomBlocks(t, rows, k, 12);
      if (t == GgmlType::MXFP4) {  // exponents near 2^-7 (RandomBlocks' fp16 bytes would be ~2^-97)
        for (size_t off = 0; off < w.size(); off += 17) w[off] = uint8_t(119 + off % 5);
      }
      const GgmlType at = VecDotType(t);
      std::vector<float> x(static_cast<size_t>(k));
      std::mt19937 rng(5);
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (float& v : x) v = d(rng);
      std::vector<uint8_t> a(RowSize(at, k));
      QuantizeActivations(at, x.data(), a.data(), k);
      std::vector<float> y(static_cast<size_t>(rows));
      const size_t stride = RowSize(t, k);
      Gemv(t, k, w.data(), stride, rows, a.data(), y.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float ref = ref::VecDot(t, k, w.data() + stride * size_t(r), a.data());
        ASSERT_NEAR(y[size_t(r)], ref, 1e-4f * (std::fabs(ref) + 1.0f)) << TypeName(t) << " k " << k << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace zf::quant

// The multi-token Q8_0 kernel (prefill) against one VecDot per (row, token), on random rows,
// odd row/token counts (tile tails) and extreme scales.
#include <gtest/gtest.h>

#include <cmath>
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

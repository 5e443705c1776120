// The row-interleaved decode layout (quant/packed.h): packing + the dispatched kernel and the
// scalar reference against one VecDot per row, on tails (rows not a multiple of 16), group
// sub-ranges (how threads split the work), long rows (several staging passes) and extreme scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

std::vector<uint8_t> Q8Rows(int64_t rows, int64_t k, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> x(size_t(rows * k));
  for (float& v : x) v = d(rng);
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> q(row * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) QuantizeActivations(GgmlType::Q8_0, x.data() + r * k, q.data() + row * size_t(r), k);
  return q;
}

std::vector<uint8_t> Pack(const std::vector<uint8_t>& w, int64_t rows, int64_t k) {
  const size_t row = RowSize(GgmlType::Q8_0, k), gbytes = PackedGroupBytes(GgmlType::Q8_0, k);
  EXPECT_EQ(gbytes % 64, 0u);
  EXPECT_GE(gbytes, size_t(16) * row) << "16 rows' quants and scales";
  EXPECT_LT(gbytes, size_t(16) * row + 64) << "plus at most the alignment padding";
  std::vector<uint8_t> p(size_t(PackedGroups(rows)) * gbytes + 64);
  // 64-byte aligned start, as the kernel's aligned loads expect.
  uint8_t* base = p.data() + (64 - reinterpret_cast<uintptr_t>(p.data()) % 64) % 64;
  for (int64_t g = 0; g < PackedGroups(rows); ++g) {
    const int64_t n = std::min<int64_t>(kPackRows, rows - g * kPackRows);
    PackQ8_0Group(w.data() + size_t(g * kPackRows) * row, row, k, n, base + size_t(g) * gbytes);
  }
  return p;  // read back through Aligned()
}

const uint8_t* Aligned(const std::vector<uint8_t>& p) {
  return p.data() + (64 - reinterpret_cast<uintptr_t>(p.data()) % 64) % 64;
}

void Check(int64_t rows, int64_t k, float scale) {
  const size_t row = RowSize(GgmlType::Q8_0, k);
  const std::vector<uint8_t> w = Q8Rows(rows, k, scale, 7), a = Q8Rows(1, k, 1.0f, 8);
  const std::vector<uint8_t> p = Pack(w, rows, k);
  const int64_t groups = PackedGroups(rows);
  std::vector<float> fast(size_t(groups * kPackRows), -1.0f), slow(fast);
  GemvPackedQ8_0(k, Aligned(p), 0, groups, rows, a.data(), fast.data());
  ref::GemvPackedQ8_0(k, Aligned(p), 0, groups, rows, a.data(), slow.data());
  for (int64_t r = 0; r < rows; ++r) {
    const float want = VecDot(GgmlType::Q8_0, k, w.data() + row * size_t(r), a.data());
    const float tol = 1e-4f * (std::fabs(want) + 1.0f) * scale;
    ASSERT_NEAR(fast[size_t(r)], want, tol) << "rows " << rows << " k " << k << " row " << r;
    ASSERT_NEAR(slow[size_t(r)], want, tol) << "rows " << rows << " k " << k << " row " << r;
  }
  for (size_t r = size_t(rows); r < fast.size(); ++r) {
    EXPECT_EQ(fast[r], -1.0f) << "padding row " << r << " was written";
    EXPECT_EQ(slow[r], -1.0f) << "padding row " << r << " was written";
  }
  if (groups >= 3) {  // a sub-range writes only its own rows, from y[0]
    std::vector<float> part(size_t(kPackRows), -1.0f);
    GemvPackedQ8_0(k, Aligned(p), 1, 2, rows, a.data(), part.data());
    for (int64_t r = 0; r < kPackRows; ++r) EXPECT_EQ(part[size_t(r)], fast[size_t(kPackRows + r)]);
  }
}

TEST(PackedQ8_0, MatchesVecDotWithTails) {
  for (int64_t rows : {1, 15, 16, 17, 48, 50}) {
    for (int64_t k : {32, 64, 96, 576, 640}) Check(rows, k, 1.0f);
  }
}

TEST(PackedQ8_0, LongRowsAndExtremeScales) {
  Check(20, 32 * 300, 1.0f);  // more blocks than one staging pass holds
  Check(33, 2048, 1e-4f);
  Check(33, 2048, 1e4f);
}

TEST(PackedQ8_0, ExtremeQuantsAreExact) {
  // Weights of -128 (allowed in files) and 127 against activations of +-127: the +128 bias
  // and its correction must stay exact in int32.
  const int64_t k = 64, rows = 16;
  const size_t row = RowSize(GgmlType::Q8_0, k);
  std::vector<uint8_t> w(row * rows), a(row);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      uint8_t* blk = w.data() + row * size_t(r) + size_t(b) * 34;
      const uint16_t one = Fp32ToFp16(1.0f);
      std::memcpy(blk, &one, 2);
      for (int i = 0; i < 32; ++i) blk[2 + i] = uint8_t(r % 2 ? 0x80 : 0x7F);  // -128 or 127
    }
  }
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint16_t one = Fp32ToFp16(1.0f);
    std::memcpy(a.data() + size_t(b) * 34, &one, 2);
    for (int i = 0; i < 32; ++i) a[size_t(b) * 34 + 2 + size_t(i)] = uint8_t(i % 2 ? 127 : -127);
  }
  const std::vector<uint8_t> p = Pack(w, rows, k);
  std::vector<float> y(rows);
  GemvPackedQ8_0(k, Aligned(p), 0, 1, rows, a.data(), y.data());
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(y[size_t(r)], VecDot(GgmlType::Q8_0, k, w.data() + row * size_t(r), a.data())) << "row " << r;
  }
}

}  // namespace
}  // namespace zf::quant

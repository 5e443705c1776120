// The AVX-512 packed decode kernels (packed_avx512.cpp) against the scalar reference, run
// through SIMDe on any AVX2 machine (avx512_on_avx2.h): every packable format (MXFP4 with
// exponents across the E8M0 range), odd block
// counts (a half-padded last unit), rows longer than one activation staging pass, partial
// last groups, and a group range that does not start at 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/random_data.h"
#include "quant/kernels.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::quant::avx512_emulated {
bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
}  // namespace zf::quant::avx512_emulated

namespace zf::quant {
namespace {

TEST(PackedAvx512Emulated, MatchesTheScalarReference) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K,
                     GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::IQ4_XS}) {
    const bool super = t == GgmlType::Q4_K || t == GgmlType::Q6_K || t == GgmlType::IQ4_XS;
    // 3 blocks (odd), 130 blocks (past one staging pass of 128); 2 and 18 super-blocks.
    for (int64_t k : {super ? int64_t{512} : int64_t{96}, super ? int64_t{4608} : int64_t{4160}}) {
      SCOPED_TRACE(std::string(TypeName(t)) + " k=" + std::to_string(k));
      const int64_t rows = 37, groups = PackedGroups(rows);
      const size_t row = RowSize(t, k), gbytes = PackedGroupBytes(t, k);
      std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, 1.0f, 11);
      if (t == GgmlType::MXFP4) {  // E8M0 exponents across the range (0 and 1: subnormal scales)
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t b = 0; b < k / 32; ++b) w[size_t(r) * row + size_t(b) * 17] = uint8_t((r * 37 + b * 11) % 231);
        }
      }
      std::vector<uint8_t> buf(size_t(groups) * gbytes + 64);
      uint8_t* p = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;  // aligned loads
      for (int64_t g = 0; g < groups; ++g) {
        PackDecodeGroup(t, w.data() + size_t(g * kPackRows) * row, row, k, std::min<int64_t>(kPackRows, rows - g * kPackRows),
                        p + size_t(g) * gbytes);
      }
      const std::vector<float> x = testing::RandomFloats(size_t(k), 12);
      std::vector<uint8_t> a(RowSize(VecDotType(t), k));
      QuantizeActivations(VecDotType(t), x.data(), a.data(), k);
      std::vector<float> want(size_t(groups * kPackRows)), got(want.size(), -1.0f);
      ref::GemvPacked(t, k, p, 0, groups, rows, a.data(), want.data());
      ASSERT_TRUE(avx512_emulated::GemvPacked(t, k, p, 0, groups, rows, a.data(), got.data()));
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_NEAR(got[size_t(r)], want[size_t(r)], 1e-4f * (1.0f + std::fabs(want[size_t(r)]))) << "row " << r;
      }
      // Groups [1, 3) only: y starts at group 1's first row.
      std::vector<float> part(size_t(2 * kPackRows), -1.0f);
      ASSERT_TRUE(avx512_emulated::GemvPacked(t, k, p, 1, groups, rows, a.data(), part.data()));
      for (int64_t r = kPackRows; r < rows; ++r) {
        EXPECT_NEAR(part[size_t(r - kPackRows)], want[size_t(r)], 1e-4f * (1.0f + std::fabs(want[size_t(r)])));
      }
    }
  }
}

}  // namespace
}  // namespace zf::quant

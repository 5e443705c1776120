// The AVX-512 prefill GEMM file (gemm_avx512.cpp: PackTile, GemmPacked, QuantizeQ8_0Tables)
// against the scalar reference, run through SIMDe on any AVX2 machine (avx512_on_avx2.h):
// every tile format, a row tail (rows 16..20 of 21), token counts across the kernel's
// 8-token blocks, fixed-offset formats both with the integer offset and through m x asum.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/random_data.h"
#include "quant/gemm_packed.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::quant::avx512_emulated {
void QuantizeQ8_0Tables(const float* x, int64_t k, void* dst, int group, int offset, float* ad, float* asum,
                        int32_t* aoff);
void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch);
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride);
}  // namespace zf::quant::avx512_emulated

namespace zf::quant {
namespace {

constexpr GgmlType kTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                               GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

TEST(GemmAvx512Emulated, PackTileAndGemmMatchTheScalarReference) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  const int64_t k = 512, rows = 21, n_tok = 11;
  for (GgmlType t : kTypes) {
    SCOPED_TRACE(TypeName(t));
    const int group = PackGroup(t), offset = PackOffset(t);
    ASSERT_NE(group, 0);
    const size_t w_row = RowSize(t, k), a_row = RowSize(GgmlType::Q8_0, k);
    const std::vector<uint8_t> w = testing::RandomQuantRows(t, rows, k, 1.0f, 21);
    const std::vector<float> x = testing::RandomFloats(size_t(n_tok * k), 22);
    const int64_t nb = k / 32, ng = k / group;
    std::vector<uint8_t> a(a_row * size_t(n_tok));
    std::vector<float> ad(size_t(n_tok * nb)), asum(size_t(n_tok * ng));
    std::vector<int32_t> aoff(size_t(n_tok * ng));
    for (int64_t j = 0; j < n_tok; ++j) {
      QuantizeActivations(GgmlType::Q8_0, x.data() + j * k, a.data() + a_row * size_t(j), k);
      Q8_0Scales(a.data() + a_row * size_t(j), k, group, offset, &ad[size_t(j * nb)], &asum[size_t(j * ng)],
                 &aoff[size_t(j * ng)]);
    }
    std::vector<uint8_t> tile(PackedTileBytes(k, group)), want_tile(tile.size()), scratch(size_t(k) + 2 * size_t(k / 16) * 4);
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
      const int64_t n = std::min<int64_t>(16, rows - r0);
      ref::PackTile(t, w.data() + size_t(r0) * w_row, w_row, n, k, want_tile.data(), scratch.data());
      avx512_emulated::PackTile(t, w.data() + size_t(r0) * w_row, w_row, n, k, tile.data(), scratch.data());
      ASSERT_EQ(tile, want_tile) << "tile of rows " << r0 << "..";
      for (bool use_aoff : {offset != 0, false}) {
        const PackedActs acts{a.data(), a_row, ad.data(), asum.data(), use_aoff ? aoff.data() : nullptr, offset};
        std::vector<float> want(size_t(n * n_tok)), got(want.size(), NAN);
        ref::GemmPacked(tile.data(), k, group, n, acts, n_tok, want.data(), n);
        avx512_emulated::GemmPacked(tile.data(), k, group, n, acts, n_tok, got.data(), n);
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_NEAR(got[i], want[i], 1e-3f * (1.0f + std::fabs(want[i]))) << "row+token " << i << (use_aoff ? " aoff" : "");
        }
      }
    }
  }
}

TEST(GemmAvx512Emulated, FusedQuantizerMatchesQuantizeThenScales) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  const int64_t k = 640;
  std::vector<float> x = testing::RandomFloats(size_t(k), 23, 3.0f);
  for (int64_t i = 0; i < 32; ++i) x[size_t(i)] = 0.0f;  // an all-zero block (scale 0)
  for (int group : {32, 16}) {
    for (int offset : {0, 8, 32}) {
      const int64_t nb = k / 32, ng = k / group;
      std::vector<uint8_t> want_q(RowSize(GgmlType::Q8_0, k)), got_q(want_q.size());
      const size_t nbs = static_cast<size_t>(nb), ngs = static_cast<size_t>(ng);
      std::vector<float> want_ad(nbs), got_ad(nbs), want_as(ngs), got_as(ngs);
      std::vector<int32_t> want_off(ngs), got_off(ngs);
      QuantizeActivations(GgmlType::Q8_0, x.data(), want_q.data(), k);
      Q8_0Scales(want_q.data(), k, group, offset, want_ad.data(), want_as.data(), want_off.data());
      avx512_emulated::QuantizeQ8_0Tables(x.data(), k, got_q.data(), group, offset, got_ad.data(), got_as.data(),
                                          got_off.data());
      EXPECT_EQ(got_q, want_q) << "group " << group << " offset " << offset;
      EXPECT_EQ(got_ad, want_ad);
      for (int64_t i = 0; i < ng; ++i) EXPECT_NEAR(got_as[size_t(i)], want_as[size_t(i)], 1e-4f * (1.0f + std::fabs(want_as[size_t(i)])));
      if (offset != 0) EXPECT_EQ(got_off, want_off);
    }
  }
}

}  // namespace
}  // namespace zf::quant

// quant::f16's encoder GEMMs against a double-precision reference: Gemm for every k it takes
// (k % 8 == 0 for the kernels; the AVX-512 kernel's 8-element tail, 72-wide attention heads,
// included; any k through the dispatcher) and GemmT
// (weights transposed) for every column count, at token, row and column counts that reach every
// tile shape and remainder, with inputs read at strides wider than used (poisoned past the end);
// TransposeToF16 (attention's K and V) against the portable conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/f16_gemm.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
using GemmFn = void (*)(int64_t, const uint16_t*, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t);

// Each product checked to within F32 rounding of the sum of |terms| (the kernels sum in their own order).
void CheckGemm(GemmFn gemm, std::vector<int64_t> ks = {8, 16, 24, 72, 136}) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t k : ks) {
    const int64_t ld = k + 8;  // rows at a stride past k: the tail must not read into it
    for (int64_t rows : {1, 3, 4, 7}) {
      for (int64_t n_tok : {1, 2, 3, 4, 5, 6, 13, 16}) {
        std::vector<uint16_t> w(size_t(rows * ld));
        for (auto& x : w) x = Fp32ToFp16(nd(rng));
        std::vector<float> a(size_t(n_tok * ld));
        for (auto& x : a) x = Fp16ToFp32(Fp32ToFp16(nd(rng)));
        // Poison past k: a kernel reading beyond k would turn the sums into NaN.
        for (int64_t r = 0; r < rows; ++r) w[size_t(r * ld + k)] = 0x7E00;
        for (int64_t t = 0; t < n_tok; ++t) a[size_t(t * ld + k)] = NAN;
        std::vector<float> y(size_t(n_tok * rows), -1.0f);
        gemm(k, w.data(), ld, rows, a.data(), ld, n_tok, y.data(), rows);
        for (int64_t t = 0; t < n_tok; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              const double p = double(a[size_t(t * ld + i)]) * double(Fp16ToFp32(w[size_t(r * ld + i)]));
              ref += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y[size_t(t * rows + r)], ref, 1e-6 * mag + 1e-6)
                << "k " << k << " rows " << rows << " n_tok " << n_tok << " t " << t << " r " << r;
          }
      }
    }
  }
}

// GemmT: y[t][c] = sum_i a[t][i] * wt[i][c], cols a multiple of `step`; outputs past cols untouched.
void CheckGemmT(GemmFn gemm, int64_t step) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t k : {1, 8, 72}) {
    for (int64_t cols = step; cols <= 8 * step; cols += step) {
      const int64_t ldw = cols + 16, lda = k + 4, ldy = cols + 8;
      for (int64_t n_tok : {1, 2, 3, 4, 5, 6, 13, 32}) {
        std::vector<uint16_t> w(size_t(k * ldw));
        for (auto& x : w) x = Fp32ToFp16(nd(rng));
        for (int64_t i = 0; i < k; ++i) w[size_t(i * ldw + cols)] = 0x7E00;  // NaN past the columns
        std::vector<float> a(size_t(n_tok * lda));
        for (auto& x : a) x = Fp16ToFp32(Fp32ToFp16(nd(rng)));
        for (int64_t t = 0; t < n_tok; ++t) a[size_t(t * lda + k)] = NAN;
        std::vector<float> y(size_t(n_tok * ldy), -7.0f);
        gemm(k, w.data(), ldw, cols, a.data(), lda, n_tok, y.data(), ldy);
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t c = 0; c < cols; ++c) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              const double p = double(a[size_t(t * lda + i)]) * double(Fp16ToFp32(w[size_t(i * ldw + c)]));
              ref += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y[size_t(t * ldy + c)], ref, 1e-6 * mag + 1e-6)
                << "k " << k << " cols " << cols << " n_tok " << n_tok << " t " << t << " c " << c;
          }
          for (int64_t c = cols; c < ldy; ++c) ASSERT_EQ(y[size_t(t * ldy + c)], -7.0f) << "wrote past cols " << cols;
        }
      }
    }
  }
}

TEST(F16Gemm, DispatchedGemmMatchesReference) {
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  CheckGemm(&f16::Gemm);
}

TEST(F16Gemm, DispatchedGemmTakesWidthsNoMultipleOfEight) {
  // Gemm adds the k % 8 the kernels leave (Qwen-VL's 588-wide patches), k < 8 alone included.
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  CheckGemm(&f16::Gemm, {1, 5, 12, 23, 588});
}

TEST(F16Gemm, Avx2GemmMatchesReference) {
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  CheckGemm(&f16::avx2::GemmF16);
}

TEST(F16Gemm, Avx512GemmMatchesReferenceWithEightWideTail) {
  if (!CpuHasAvx512Vnni()) GTEST_SKIP() << "no AVX-512";
  CheckGemm(&f16::avx512::GemmF16);
}
TEST(F16Gemm, DispatchedTransposedGemmMatchesReference) {
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  CheckGemmT(&f16::GemmT, 16);
}

TEST(F16Gemm, Avx2TransposedGemmMatchesReference) {
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  CheckGemmT(&f16::avx2::GemmF16T, 8);
}

TEST(F16Gemm, Avx512TransposedGemmMatchesReference) {
  if (!CpuHasAvx512Vnni()) GTEST_SKIP() << "no AVX-512";
  CheckGemmT(&f16::avx512::GemmF16T, 16);
}

TEST(F16Gemm, TransposeToF16RoundsEveryElementToItsPlace) {
  // Whole 8 x 8 register blocks and the row and column remainders, read at a wider stride and
  // written at one wider than the rows; what lies past them stays untouched.
  if (!f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 100.0f);
  for (int64_t rows : {1, 7, 8, 13, 64}) {
    for (int64_t cols : {1, 8, 9, 72}) {
      const int64_t ldx = cols + 5, ldd = rows + 3;
      std::vector<float> x(size_t(rows * ldx));
      for (float& v : x) v = nd(rng);
      std::vector<uint16_t> d(size_t(cols * ldd), 0xABCD);
      f16::avx2::TransposeToF16(x.data(), ldx, rows, cols, d.data(), ldd);
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < rows; ++r)
          ASSERT_EQ(d[size_t(c * ldd + r)], Fp32ToFp16(x[size_t(r * ldx + c)])) << "rows " << rows << " cols " << cols;
        for (int64_t r = rows; r < ldd; ++r) ASSERT_EQ(d[size_t(c * ldd + r)], 0xABCD) << "wrote past the rows";
      }
    }
  }
}
#endif

}  // namespace
}  // namespace zf::quant

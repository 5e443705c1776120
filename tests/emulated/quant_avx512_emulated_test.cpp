// The row-layout AVX-512 kernels (quant_vnni_avx512.cpp: dot products, activation quantizers,
// GEMV/GEMM; quant_avx512.cpp: the Q8_0 ones) against the scalar reference, run through SIMDe on
// any AVX2 machine (avx512_on_avx2.h). The quantizers must be bit-exact; dot products agree to
// float summation order.
#define avx512 avx512_emulated  // before any include: kernels.h then declares the emulated copies
#define vnni vnni_emulated

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/random_data.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

using testing::RandomFloats;
using testing::RandomQuantRows;

struct DotCase {
  GgmlType t;
  float (*fn)(int64_t, const void*, const void*);
};

// Weights of type t: quant rows with valid scales, or floats converted by the reference.
std::vector<uint8_t> Weights(GgmlType t, int64_t rows, int64_t n, uint32_t seed) {
  if (t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16) return RandomQuantRows(t, rows, n, 1.0f, seed);
  const std::vector<float> f = RandomFloats(size_t(rows * n), seed);
  std::vector<uint8_t> w(RowSize(t, n) * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    ref::QuantizeActivations(t, f.data() + r * n, w.data() + RowSize(t, n) * size_t(r), n);
  }
  return w;
}

TEST(QuantAvx512Emulated, VecDotsMatchTheReference) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  const DotCase cases[] = {{GgmlType::F32, vnni::VecDotF32},   {GgmlType::F16, vnni::VecDotF16},
                           {GgmlType::BF16, vnni::VecDotBF16}, {GgmlType::Q4_0, vnni::VecDotQ4_0},
                           {GgmlType::Q4_1, vnni::VecDotQ4_1}, {GgmlType::Q5_0, vnni::VecDotQ5_0},
                           {GgmlType::Q5_1, vnni::VecDotQ5_1}, {GgmlType::Q8_0, vnni::VecDotQ8_0},
                           {GgmlType::Q8_0, avx512::VecDotQ8_0}, {GgmlType::Q4_K, vnni::VecDotQ4_K},
                           {GgmlType::Q5_K, vnni::VecDotQ5_K}, {GgmlType::Q6_K, vnni::VecDotQ6_K},
                           {GgmlType::IQ4_NL, vnni::VecDotIQ4_NL}, {GgmlType::MXFP4, vnni::VecDotMXFP4},
                           {GgmlType::IQ4_XS, vnni::VecDotIQ4_XS}};
  for (const DotCase& c : cases) {
    for (int64_t n : {int64_t{256}, int64_t{2304}}) {
      SCOPED_TRACE(std::string(TypeName(c.t)) + " n=" + std::to_string(n));
      const std::vector<uint8_t> w = Weights(c.t, 1, n, 31);
      const GgmlType at = VecDotType(c.t);
      const std::vector<float> x = RandomFloats(size_t(n), 32);
      std::vector<uint8_t> a(RowSize(at, n));
      ref::QuantizeActivations(at, x.data(), a.data(), n);
      const float want = ref::VecDot(c.t, n, w.data(), a.data());
      EXPECT_NEAR(c.fn(n, w.data(), a.data()), want, 1e-3f * (1.0f + std::fabs(want)));
    }
  }
}

TEST(QuantAvx512Emulated, QuantizersAreBitExact) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  std::vector<float> x = RandomFloats(768, 33, 3.0f);
  for (int i = 256; i < 288; ++i) x[size_t(i)] = 0.0f;                      // a zero block
  for (int i = 0; i < 32; ++i) x[size_t(512 + i)] = float(i - 16) + 0.5f;  // ties
  x[300] = 1e30f;
  const struct {
    GgmlType t;
    void (*fn)(const float*, void*, int64_t);
  } cases[] = {{GgmlType::Q8_0, vnni::QuantizeQ8_0}, {GgmlType::Q8_1, vnni::QuantizeQ8_1},
               {GgmlType::Q8_K, vnni::QuantizeQ8_K}, {GgmlType::F16, vnni::QuantizeF16}};
  for (const auto& c : cases) {
    const int64_t n = int64_t(x.size());
    std::vector<uint8_t> got(RowSize(c.t, n)), want(RowSize(c.t, n));
    c.fn(x.data(), got.data(), n);
    ref::QuantizeActivations(c.t, x.data(), want.data(), n);
    EXPECT_EQ(got, want) << TypeName(c.t);
  }
  std::vector<uint16_t> h(1003);
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i * 40503u);
  std::vector<float> got(h.size()), want(h.size());
  vnni::DequantizeF16(h.data(), got.data(), int64_t(h.size()));
  for (size_t i = 0; i < h.size(); ++i) {
    want[i] = Fp16ToFp32(h[i]);
    if (!std::isnan(want[i])) EXPECT_EQ(got[i], want[i]) << h[i];
  }
}

TEST(QuantAvx512Emulated, GemvAndGemmMatchRowDots) {
  if (!CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  const int64_t n = 640, rows = 19, n_tok = 5;
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q4_K,
                     GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    if (t == GgmlType::Q4_K || t == GgmlType::Q6_K) continue;  // 640 is not a multiple of 256
    SCOPED_TRACE(TypeName(t));
    const size_t row = RowSize(t, n);
    const std::vector<uint8_t> w = Weights(t, rows, n, 34);
    const GgmlType at = VecDotType(t);
    const size_t a_row = RowSize(at, n);
    const std::vector<float> x = RandomFloats(size_t(n * n_tok), 35);
    std::vector<uint8_t> a(a_row * size_t(n_tok));
    for (int64_t j = 0; j < n_tok; ++j) ref::QuantizeActivations(at, x.data() + j * n, a.data() + a_row * size_t(j), n);
    std::vector<float> want(size_t(rows * n_tok));
    for (int64_t j = 0; j < n_tok; ++j) {
      for (int64_t r = 0; r < rows; ++r) {
        want[size_t(j * rows + r)] = ref::VecDot(t, n, w.data() + row * size_t(r), a.data() + a_row * size_t(j));
      }
    }
    for (auto gemv : {vnni::Gemv, avx512::Gemv}) {
      std::vector<float> y(size_t(rows), NAN);
      if (!gemv(t, n, w.data(), row, rows, a.data(), y.data())) continue;  // not this kernel's type
      for (int64_t r = 0; r < rows; ++r) EXPECT_NEAR(y[size_t(r)], want[size_t(r)], 1e-3f * (1.0f + std::fabs(want[size_t(r)])));
    }
    if (t != GgmlType::Q8_0) continue;
    for (auto gemm : {vnni::GemmQ8_0, avx512::GemmQ8_0}) {
      std::vector<float> y(size_t(rows * n_tok), NAN);
      gemm(n, w.data(), row, rows, a.data(), a_row, n_tok, y.data(), rows);
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-3f * (1.0f + std::fabs(want[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace zf::quant

// Non-finite values from a broken model: the load-time scale scan (quant/scales.h) finds them,
// and the activation quantizers keep NaN/Inf activations away from undefined float-to-int
// conversions (bounded quants, consistent sums). Run under UBSan by scripts/sanitize.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "quant/blocks.h"
#include "quant/gemm_packed.h"
#include "quant/quant.h"
#include "quant/scales.h"

namespace zf::quant {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(NonFinite, ScanFindsTheFirstBadBlockOfEveryScaledType) {
  struct Case {
    GgmlType t;
    size_t bytes, off;
  };
  for (const Case& c : {Case{GgmlType::Q4_0, 18, 0}, Case{GgmlType::Q4_1, 20, 2}, Case{GgmlType::Q5_0, 22, 0},
                        Case{GgmlType::Q5_1, 24, 2}, Case{GgmlType::Q8_0, 34, 0}, Case{GgmlType::Q2_K, 84, 82},
                        Case{GgmlType::Q3_K, 110, 108}, Case{GgmlType::Q4_K, 144, 2}, Case{GgmlType::Q5_K, 176, 0},
                        Case{GgmlType::Q6_K, 210, 208}, Case{GgmlType::IQ4_NL, 18, 0},
                        Case{GgmlType::IQ4_XS, 136, 0}}) {
    std::vector<uint8_t> d(c.bytes * 8, 0);  // all-zero blocks: finite
    EXPECT_EQ(FindNonFiniteBlock(c.t, d.data(), d.size()), -1) << TypeName(c.t);
    const uint16_t inf = 0x7C00, nan = 0xFE01;
    std::memcpy(&d[6 * c.bytes + c.off], &inf, 2);
    EXPECT_EQ(FindNonFiniteBlock(c.t, d.data(), d.size()), 6) << TypeName(c.t);
    std::memcpy(&d[2 * c.bytes + c.off], &nan, 2);
    EXPECT_EQ(FindNonFiniteBlock(c.t, d.data(), d.size()), 2) << TypeName(c.t);
  }
  // MXFP4: E8M0 0xFF is NaN, and exponents from 253 make 12 * 2^(e - 128) overflow a float.
  std::vector<uint8_t> mx(17 * 8, 0);
  mx[17 * 3] = 252;  // 12 * 2^124 is finite
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::MXFP4, mx.data(), mx.size()), -1);
  mx[17 * 5] = 253;
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::MXFP4, mx.data(), mx.size()), 5);
  mx[17 * 4] = 0xFF;
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::MXFP4, mx.data(), mx.size()), 4);
  std::vector<float> f(16, 1.0f);
  const auto* fb = reinterpret_cast<const uint8_t*>(f.data());
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::F32, fb, 64), -1);
  f[11] = -kInf;
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::F32, fb, 64), 11);
  std::vector<uint16_t> h(8, 0x3C00);
  h[5] = 0x7E00;
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::F16, reinterpret_cast<const uint8_t*>(h.data()), 16), 5);
  h[5] = 0x7F80;  // bf16 +Inf; as f16 it is a NaN too
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::BF16, reinterpret_cast<const uint8_t*>(h.data()), 16), 5);
  h[5] = 0x7BFF;  // largest finite f16
  EXPECT_EQ(FindNonFiniteBlock(GgmlType::F16, reinterpret_cast<const uint8_t*>(h.data()), 16), -1);
}

// A row with one NaN block, one +Inf block and one -Inf block among finite ones.
std::vector<float> PoisonedRow(int64_t n, int64_t block) {
  std::vector<float> x(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = std::sin(float(i) * 0.37f) * 3.0f;
  x[size_t(block) + 5] = kNaN;
  x[size_t(2 * block) + 1] = kInf;
  x[size_t(3 * block) + 7] = -kInf;
  return x;
}

TEST(NonFinite, ActivationQuantizersStayBoundedAndConsistent) {
  const int64_t n = 4 * 256;
  for (bool simd : {true, false}) {
    {
      const std::vector<float> x = PoisonedRow(n, 32);
      std::vector<BlockQ8_0> q(size_t(n / 32)), r(size_t(n / 32));
      if (simd) QuantizeActivations(GgmlType::Q8_0, x.data(), q.data(), n);
      else ref::QuantizeActivations(GgmlType::Q8_0, x.data(), q.data(), n);
      ref::QuantizeActivations(GgmlType::Q8_0, x.data(), r.data(), n);
      for (size_t b = 0; b < q.size(); ++b) {
        for (int j = 0; j < 32; ++j) EXPECT_GE(q[b].qs[j], -127) << b;  // never a saturated INT_MIN
        if (b >= 4) EXPECT_EQ(std::memcmp(&q[b], &r[b], sizeof q[b]), 0) << "finite block " << b << " changed";
      }
    }
    {
      const std::vector<float> x = PoisonedRow(n, 32);
      std::vector<BlockQ8_1> q(size_t(n / 32));
      if (simd) QuantizeActivations(GgmlType::Q8_1, x.data(), q.data(), n);
      else ref::QuantizeActivations(GgmlType::Q8_1, x.data(), q.data(), n);
      for (const BlockQ8_1& b : q) {
        for (int j = 0; j < 32; ++j) EXPECT_GE(b.qs[j], -127);
      }
    }
    {
      const std::vector<float> x = PoisonedRow(n, 256);
      std::vector<BlockQ8_K> q(size_t(n / 256));
      if (simd) QuantizeActivations(GgmlType::Q8_K, x.data(), q.data(), n);
      else ref::QuantizeActivations(GgmlType::Q8_K, x.data(), q.data(), n);
      for (const BlockQ8_K& b : q) {
        for (int g = 0; g < 16; ++g) {
          int sum = 0;
          for (int j = 0; j < 16; ++j) {
            EXPECT_GE(b.qs[16 * g + j], -127);
            sum += b.qs[16 * g + j];
          }
          EXPECT_EQ(b.bsums[g], sum);
        }
      }
    }
  }
}

// The fused quantizer behind the packed GEMM (AVX-512 where available): UBSan used to report a
// signed overflow in its offset table for a NaN activation.
TEST(NonFinite, FusedQ8_0TablesStayBounded) {
  const int64_t k = 256;
  const std::vector<float> x = PoisonedRow(k, 32);
  std::vector<BlockQ8_0> q(size_t(k / 32));
  std::vector<float> ad(size_t(k / 32)), asum(size_t(k / 16));
  std::vector<int32_t> aoff(size_t(k / 16));
  for (int group : {32, 16}) {
    QuantizeQ8_0Tables(x.data(), k, q.data(), group, 8, ad.data(), asum.data(), aoff.data());
    for (size_t b = 0; b < q.size(); ++b) {
      int sum = 0;
      for (int j = 0; j < 32; ++j) {
        EXPECT_GE(q[b].qs[j], -127);
        sum += q[b].qs[j];
      }
      if (group == 32) EXPECT_EQ(aoff[b], -8 * sum) << b;
    }
  }
}

}  // namespace
}  // namespace zf::quant

// The AVX-512 attention kernels (blocked prefill, grouped F16 decode) and SiLU against their
// scalar references, run through SIMDe on any AVX2 machine (avx512_on_avx2.h), on the shapes
// and edge cases the unit tests use for the other ISAs (common/attention_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/attention_checks.h"
#include "common/random_data.h"
#include "engine/cpu/activation_kernels.h"
#include "quant/kernels.h"

namespace zf::engine::attn {
void RunBlockAvx512Emulated(const Block& b);
void RunDecodeAvx512Emulated(const DecodeGroup& g);
}  // namespace zf::engine::attn
namespace zf::engine::act {
void SiluMulAvx512Emulated(float* gate, const float* up, int64_t n);
}  // namespace zf::engine::act

namespace zf::engine {
namespace {

TEST(AttentionAvx512Emulated, BlockMatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  testing::CheckBlockKernel(attn::RunBlockAvx512Emulated);
}

TEST(AttentionAvx512Emulated, DecodeMatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  testing::CheckDecodeKernel(attn::RunDecodeAvx512Emulated, {64, 256});  // it takes multiples of 16
}

TEST(SiluMulAvx512Emulated, MatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  std::vector<float> g = zf::testing::RandomFloats(1003, 7, 4.0f), u = zf::testing::RandomFloats(1003, 8);
  g[0] = -100.0f, g[1] = 100.0f, g[2] = 0.0f, g[3] = -88.5f, g[4] = 30.0f;
  for (int64_t n : {int64_t(g.size()), int64_t{5}}) {  // a masked tail, and a row shorter than a vector
    std::vector<float> a = g, b = g;
    act::SiluMulAvx512Emulated(a.data(), u.data(), n);
    act::SiluMulRef(b.data(), u.data(), n);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6f * (1.0f + std::fabs(b[i]))) << i << " x " << g[i];
  }
}

}  // namespace
}  // namespace zf::engine

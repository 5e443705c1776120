// The AVX-512 delta rule and Mamba-2 scan against their reference, bit for bit, run through
// SIMDe on any AVX2 machine (avx512_on_avx2.h), with the unit tests' cases
// (common/recurrent_checks.h).
#include <gtest/gtest.h>

#include "common/recurrent_checks.h"
#include "quant/kernels.h"

namespace zf::engine::rec {
void DeltaRuleAvx512Emulated(const DeltaRuleArgs& a, int32_t c0, int32_t c1);
void ScanAvx512Emulated(const ScanArgs& a);

namespace {

TEST(RecurrentAvx512Emulated, DeltaRuleMatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  testing::CheckDeltaRuleKernel(DeltaRuleAvx512Emulated);
}

TEST(RecurrentAvx512Emulated, ScanMatchesReference) {
  if (!quant::CpuHasAvx2Fma16()) GTEST_SKIP() << "the emulation is built for AVX2 + FMA + F16C";
  testing::CheckScanKernel(ScanAvx512Emulated);
}

}  // namespace
}  // namespace zf::engine::rec

// The recurrent mixers' kernels (engine/cpu/recurrent_kernels.h): every ISA's delta rule and
// Mamba-2 scan give the reference's bits, and so does any split into column blocks or steps
// (the exactness rule: one token at a time = chunks = a cached prefix).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/random_data.h"
#include "common/recurrent_checks.h"
#include "engine/cpu/recurrent_kernels.h"
#include "quant/kernels.h"

namespace zf::engine::rec {
namespace {

using testing::DeltaCase;
using testing::DeltaFn;
using testing::ScanCase;
using testing::ScanFn;

std::vector<DeltaFn> DeltaKernels() {
  std::vector<DeltaFn> k = {DeltaRule};
#if defined(__x86_64__) || defined(__i386__)
  if (quant::CpuHasAvx2Fma16()) k.push_back(DeltaRuleAvx2);
  if (quant::CpuHasAvx512Vnni()) k.push_back(DeltaRuleAvx512);
#endif
  return k;
}

std::vector<ScanFn> ScanKernels() {
  std::vector<ScanFn> k = {Scan};
#if defined(__x86_64__) || defined(__i386__)
  if (quant::CpuHasAvx2Fma16()) k.push_back(ScanAvx2);
  if (quant::CpuHasAvx512Vnni()) k.push_back(ScanAvx512);
#endif
  return k;
}

TEST(DeltaRule, EveryKernelAndSplitGivesTheReferenceBits) {
  for (DeltaFn fn : DeltaKernels()) testing::CheckDeltaRuleKernel(fn);
}

// The delta rule itself: with g = 1, b = 1 and a zero state, one step stores k v^T and reads
// (k . q) v back.
TEST(DeltaRule, FirstStepWritesKeyTimesValue) {
  DeltaCase c(32, 32, 1, 5);
  c.g[0] = 1.0f;
  c.b[0] = 1.0f;
  std::vector<float> S(c.S0.size(), 0.0f), o(32);
  c.Run(DeltaRule, &S, &o, 0, 1, 0, 32);
  const float* q = c.qkv.data();
  const float* k = q + 32;
  const float* v = q + 64;
  float kq = 0.0f;
  for (int i = 0; i < 32; ++i) kq += k[i] * q[i];
  for (int j = 0; j < 32; ++j) {
    EXPECT_NEAR(S[size_t(5 * 32 + j)], k[5] * v[j], 1e-6f);
    EXPECT_NEAR(o[size_t(j)], kq * v[j] / std::sqrt(32.0f), 1e-5f);
  }
}

TEST(MambaScan, EveryKernelAndSplitGivesTheReferenceBits) {
  for (ScanFn fn : ScanKernels()) testing::CheckScanKernel(fn);
}

// The scan itself against a plain double-precision loop: s = s dA + B x dt, y = C . s + D x.
TEST(MambaScan, MatchesThePlainRecurrence) {
  const ScanCase c(6, 40, 4, 11);
  std::vector<float> s = c.s0, y(size_t(6 * 4));
  c.Run(Scan, &s, &y, 0, 4);
  std::vector<double> sd(c.s0.begin(), c.s0.end());
  for (int32_t t = 0; t < 4; ++t) {
    const float* B = c.bc.data() + size_t(t) * 80;
    for (int32_t i = 0; i < 6; ++i) {
      double sum = 0.0;
      for (int32_t n = 0; n < 40; ++n) {
        double& e = sd[size_t(i * 40 + n)];
        e = e * c.dA[size_t(t)] + double(B[n]) * c.x[size_t(t * 6 + i)] * c.dt[size_t(t)];
        sum += e * B[40 + n];
      }
      EXPECT_NEAR(y[size_t(t * 6 + i)], sum + 0.75 * c.x[size_t(t * 6 + i)], 1e-4) << t << " " << i;
    }
  }
}

}  // namespace
}  // namespace zf::engine::rec

// Scalar reference of the recurrent mixers' kernels and their dispatch (recurrent_kernels.h).
#include "engine/cpu/recurrent_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/cpu/activation_kernels.h"
#include "quant/kernels.h"

namespace zf::engine::rec {

void DeltaRuleRef(const DeltaRuleArgs& a, int32_t c0, int32_t c1) {
  const size_t dv = size_t(a.dv);
  for (int32_t t = 0; t < a.n_tok; ++t) {
    const float* q = a.q + size_t(t) * a.qk_stride;
    const float* k = a.k + size_t(t) * a.qk_stride;
    const float* v = a.v + size_t(t) * a.v_stride;
    float* o = a.o + size_t(t) * a.o_stride;
    const float g = a.g[t], b = a.b[t];
    for (int32_t j = c0; j < c1; ++j) {
      float acc = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) acc = std::fma(a.S[size_t(i) * dv + size_t(j)] * g, k[i], acc);
      const float d = (v[j] - acc) * b;
      float out = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) {
        float& s = a.S[size_t(i) * dv + size_t(j)];
        s = std::fma(k[i], d, s * g);
        out = std::fma(s, q[i], out);
      }
      o[j] = out * a.scale;
    }
  }
}

void ScanRef(const ScanArgs& a) {
  const size_t N = size_t(a.N);
  for (int32_t t = 0; t < a.n_tok; ++t) {
    const float* x = a.x + size_t(t) * a.x_stride;
    const float* B = a.B + size_t(t) * a.bc_stride;
    const float* C = a.C + size_t(t) * a.bc_stride;
    float* y = a.y + size_t(t) * a.y_stride;
    const float dt = a.dt[t], dA = a.dA[t];
    for (int32_t i = 0; i < a.P; ++i) {
      const float xdt = x[i] * dt;
      float* si = a.s + size_t(i) * N;
      float part[16] = {};
      size_t n = 0;
      for (; n + 16 <= N; n += 16) {
        for (size_t j = 0; j < 16; ++j) {
          si[n + j] = std::fma(B[n + j], xdt, si[n + j] * dA);
          part[j] = std::fma(si[n + j], C[n + j], part[j]);
        }
      }
      for (size_t w = 8; w >= 1; w /= 2) {
        for (size_t j = 0; j < w; ++j) part[j] += part[j + w];
      }
      float sum = part[0];
      for (; n < N; ++n) {
        si[n] = std::fma(B[n], xdt, si[n] * dA);
        sum = std::fma(si[n], C[n], sum);
      }
      y[i] = std::fma(x[i], a.D, sum);
    }
  }
}

int32_t DeltaRuleBlock(int32_t dk) {
  // 64 columns (4 AVX-512 vectors, 8 AVX2 ones) while [dk][64] fits 32 KiB, else 16.
  return dk <= 128 ? 64 : 16;
}

namespace {
using DeltaFn = void (*)(const DeltaRuleArgs&, int32_t, int32_t);
DeltaFn PickDelta() {
  switch (quant::SelectedIsa()) {
#if defined(__x86_64__) || defined(__i386__)
    case quant::Isa::kAvx512: return DeltaRuleAvx512;
    case quant::Isa::kAvx2: return DeltaRuleAvx2;
#endif
    default: break;
  }
  return DeltaRuleRef;
}
using ScanFn = void (*)(const ScanArgs&);
ScanFn PickScan() {
  switch (quant::SelectedIsa()) {
#if defined(__x86_64__) || defined(__i386__)
    case quant::Isa::kAvx512: return ScanAvx512;
    case quant::Isa::kAvx2: return ScanAvx2;
#endif
    default: break;
  }
  return ScanRef;
}
}  // namespace

void Scan(const ScanArgs& a) {
  static const ScanFn fn = PickScan();
  fn(a);
}

void DeltaRule(const DeltaRuleArgs& a, int32_t c0, int32_t c1) {
  static const DeltaFn fn = PickDelta();
  fn(a, c0, c1);
}

namespace {
constexpr int64_t kSiluChunk = 256;  // on the stack
}  // namespace

void SiluInPlace(float* x, int64_t n) {
  // silu(x) * 1: the product by one is exact.
  static const std::array<float, kSiluChunk> kOnes = [] {
    std::array<float, kSiluChunk> a{};
    a.fill(1.0f);
    return a;
  }();
  for (int64_t i = 0; i < n; i += kSiluChunk) act::SiluMul(x + i, kOnes.data(), std::min(kSiluChunk, n - i));
}

void SiluGate(float* y, const float* z, int64_t n) {
  float g[kSiluChunk];
  for (int64_t i = 0; i < n; i += kSiluChunk) {
    const int64_t m = std::min(kSiluChunk, n - i);
    std::copy(z + i, z + i + m, g);
    act::SiluMul(g, y + i, m);  // silu(z) * y: y * silu(z) with the operands swapped
    std::copy(g, g + m, y + i);
  }
}

}  // namespace zf::engine::rec

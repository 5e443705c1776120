// Scalar reference of the activation kernels and their dispatch (activation_kernels.h).
#include "engine/cpu/activation_kernels.h"

#include <cmath>
#include <cstdlib>

#include "quant/kernels.h"

namespace zf::engine::act {

void SiluMulRef(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {
using SiluFn = void (*)(float*, const float*, int64_t);
SiluFn Pick() {
  switch (quant::SelectedIsa()) {
#if defined(__x86_64__) || defined(__i386__)
    case quant::Isa::kAvx512: return SiluMulAvx512;
    case quant::Isa::kAvx2: return SiluMulAvx2;
#endif
#if defined(__aarch64__)
    case quant::Isa::kNeon: case quant::Isa::kNeonDot: return SiluMulAsimd;
#endif
    default: break;
  }
  return SiluMulRef;
}
}  // namespace

void SiluMul(float* gate, const float* up, int64_t n) {
  static const SiluFn fn = Pick();
  fn(gate, up, n);
}

}  // namespace zf::engine::act

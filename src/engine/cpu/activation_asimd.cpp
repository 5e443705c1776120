// NEON SiLU x up (activation_kernels.h), every aarch64 CPU: e^-x from the shared polynomial
// (vec_math_neon.h), then an exact division, 4 lanes at a time; the tail goes through a padded
// vector, so every element takes the same Exp.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/vec_math_neon.h"

namespace zf::engine::act {

namespace {
inline float32x4_t SiluTimes(float32x4_t x, float32x4_t u) {
  const float32x4_t e = vecn::Exp(vnegq_f32(x));
  return vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}
}  // namespace

void SiluMulAsimd(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(gate + i, SiluTimes(vld1q_f32(gate + i), vld1q_f32(up + i)));
  if (i < n) {
    float g[4] = {0.0f, 0.0f, 0.0f, 0.0f}, u[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t t = 0; t < n - i; ++t) g[t] = gate[i + t], u[t] = up[i + t];
    vst1q_f32(g, SiluTimes(vld1q_f32(g), vld1q_f32(u)));
    for (int64_t t = 0; t < n - i; ++t) gate[i + t] = g[t];
  }
}

}  // namespace zf::engine::act

#endif  // __aarch64__

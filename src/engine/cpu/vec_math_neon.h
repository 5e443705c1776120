// Inline NEON math shared by the engine's *_asimd.cpp kernels (baseline Advanced SIMD: every
// aarch64 CPU). Include only from files compiled for aarch64.
#pragma once

#include <arm_neon.h>

namespace zf::engine::vecn {
namespace {  // internal linkage, as quant/neon_inline.h

// e^x for x <= ~88, the same polynomial and clamping as vec2::Exp (vec_math_avx2.h): inputs
// below -87 give e^-87, not 0 (2^n is built in the exponent field, which holds no denormals).
inline float32x4_t Exp(float32x4_t x) {
  x = vmaxq_f32(x, vdupq_n_f32(-87.0f));
  x = vminq_f32(x, vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // ln 2 split in two parts
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));            // |r| <= ln2 / 2
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);                    // Taylor to r^6: < 1.2e-7
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);  // 2^n, n in [-126, 127]
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

}  // namespace
}  // namespace zf::engine::vecn

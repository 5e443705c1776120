// AArch64 baseline Advanced SIMD (every ARMv8-A CPU, no compiler flags needed) float dot
// products for the F32 and F16 rows: the portable attention's q.k and the F32/F16 matrices.
// The scalar reference sums in double, one element at a time; here 16 lanes of float partial
// sums (4 independent FMA chains) are added at the end, as the AVX2 versions do. Picked at run
// time on every aarch64 CPU (quant.cpp); on other CPUs this file compiles to nothing.
//
// Why: measured under qemu (bench/aarch64_insns.sh, guest instructions), the reference q.k dot
// products were 11% of a 70-token SmolLM2 prefill once the matmuls ran on NEON.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "quant/kernels.h"

namespace zf::quant::asimd {
namespace {

inline float Finish(float32x4_t s0, float32x4_t s1, float32x4_t s2, float32x4_t s3) {
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

}  // namespace

float VecDotF32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(x + i), vld1q_f32(y + i));
    s1 = vfmaq_f32(s1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(x + i + 8), vld1q_f32(y + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(x + i + 12), vld1q_f32(y + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(x + i), vld1q_f32(y + i));
  float sum = Finish(s0, s1, s2, s3);
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

float VecDotF16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  auto f32 = [](const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); };
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, f32(x + i), f32(y + i));
    s1 = vfmaq_f32(s1, f32(x + i + 4), f32(y + i + 4));
    s2 = vfmaq_f32(s2, f32(x + i + 8), f32(y + i + 8));
    s3 = vfmaq_f32(s3, f32(x + i + 12), f32(y + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, f32(x + i), f32(y + i));
  float sum = Finish(s0, s1, s2, s3);
  for (; i < n; ++i) sum += Fp16ToFp32(x[i]) * Fp16ToFp32(y[i]);
  return sum;
}

}  // namespace zf::quant::asimd

#endif  // __aarch64__

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
#include "quant/neon_inline.h"

namespace zf::quant::asimd {
namespace {

inline float32x4_t Load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t Load4(const uint16_t* p) { return F16x4(p); }
inline float ToFloat(float v) { return v; }
inline float ToFloat(uint16_t h) { return Fp16ToFp32(h); }

template <typename T>
float Dot(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const T*>(w);
  const auto* y = static_cast<const T*>(a);
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, Load4(x + i), Load4(y + i));
    s1 = vfmaq_f32(s1, Load4(x + i + 4), Load4(y + i + 4));
    s2 = vfmaq_f32(s2, Load4(x + i + 8), Load4(y + i + 8));
    s3 = vfmaq_f32(s3, Load4(x + i + 12), Load4(y + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, Load4(x + i), Load4(y + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  for (; i < n; ++i) sum += ToFloat(x[i]) * ToFloat(y[i]);
  return sum;
}

}  // namespace

float VecDotF32(int64_t n, const void* w, const void* a) { return Dot<float>(n, w, a); }
float VecDotF16(int64_t n, const void* w, const void* a) { return Dot<uint16_t>(n, w, a); }

}  // namespace zf::quant::asimd

#endif  // __aarch64__

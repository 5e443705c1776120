// AVX2 SiLU x up (activation_kernels.h): e^-x from the shared polynomial (vec_math_avx2.h),
// then an exact division, 8 lanes at a time with a masked tail.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/vec_math_avx2.h"

namespace zf::engine::act {

void SiluMulAvx2(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const bool full = n - i >= 8;
    const __m256i m = vec2::TailMask8(long(n - i));
    const __m256 x = full ? _mm256_loadu_ps(gate + i) : _mm256_maskload_ps(gate + i, m);
    const __m256 u = full ? _mm256_loadu_ps(up + i) : _mm256_maskload_ps(up + i, m);
    const __m256 e = vec2::Exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 r = _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), u);
    if (full) {
      _mm256_storeu_ps(gate + i, r);
    } else {
      _mm256_maskstore_ps(gate + i, m, r);
    }
  }
}

}  // namespace zf::engine::act

#endif  // x86

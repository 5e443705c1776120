// AVX-512 SiLU x up (activation_kernels.h): e^-x from the shared polynomial (about 1 ulp), then
// an exact division, 16 lanes at a time with a masked tail.
#if defined(__x86_64__) || defined(__i386__)

// GCC 12 reports false "(maybe) uninitialized" warnings inside its own AVX-512 intrinsics.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/vec_math_avx512.h"

namespace zf::engine::act {

void SiluMulAvx512(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = vec::Exp(_mm512_sub_ps(_mm512_setzero_ps(), x));
    const __m512 s = _mm512_div_ps(x, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace zf::engine::act

#endif  // x86

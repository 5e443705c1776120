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

// 16 lanes: F16 bits by a rounding conversion (nearest even, as the reference's table index), a
// gather from the table, then the two saturating ranges by masks.
void GeluTableMulAvx512(const float* table, float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512i h = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, h, table, 4);
    g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GE_OQ), x);
    g = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-10.0f), _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), g);
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace zf::engine::act

#endif  // x86

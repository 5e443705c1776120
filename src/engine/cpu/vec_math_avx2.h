// Inline AVX2 math shared by the engine's *_avx2.cpp kernels. Include only from files compiled
// with AVX2 + FMA flags (the *_avx2.cpp suffix).
#pragma once

#include <immintrin.h>

namespace zf::engine::vec2 {

// e^x for x <= ~88 (the softmax feeds x - max <= 0), the same polynomial as the AVX-512 Exp.
// Inputs below -87 give e^-87 (~1.6e-38, not 0): 2^n is built in the exponent field, which
// holds no denormals; against the softmax's largest weight of 1 that is below float rounding.
inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln 2 split in two parts
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);      // |r| <= ln2 / 2
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);                         // Taylor to r^6: < 1.2e-7
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n for n in [-126, 127]: (n + 127) in the exponent field. For x = 88, n = 127 and p < 1.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float HsumPs(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HmaxPs(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes [0, n) set (n clamped to 0..8): the mask of _mm256_maskload_ps / maskstore_ps.
inline __m256i TailMask8(long n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n < 0 ? 0 : n > 8 ? 8 : n)), idx);
}

}  // namespace zf::engine::vec2

// softmax.h's numerators on AVX-512F: softmax_avx2.cpp's exp (the same operations, so the same
// values) 16 lanes at a time, the row's tail under a mask.
#include "quant/avx512_intrinsics.h"  // immintrin.h without GCC 12's false maybe-uninitialized

#include <cmath>

#include "vision/softmax.h"

namespace zf::vision::avx512 {
namespace {

inline __m512 ExpNonPositive(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - k ln2, ln2 split in two for precision.
  const __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), x));
  const float c[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  __m512 p = _mm512_set1_ps(c[0]);
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[i]));
  const __m512i two_k = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(two_k));
}

// The 16 lanes' sum into two double accumulators.
inline void AddPd(__m512 e, __m512d* acc0, __m512d* acc1) {
  *acc0 = _mm512_add_pd(*acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  *acc1 = _mm512_add_pd(*acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}

}  // namespace

double SoftmaxNumerators(float* s, int64_t n, float scale) {
  const __m512 vs = _mm512_set1_ps(scale);
  const __mmask16 tail = __mmask16((1u << (n % 16)) - 1u);
  const int64_t n16 = n - n % 16;
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n16; i += 16) vmax = _mm512_max_ps(vmax, _mm512_mul_ps(_mm512_loadu_ps(s + i), vs));
  if (tail != 0) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + n16), vs));
  const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n16; i += 16) {
    const __m512 e = ExpNonPositive(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(s + i), vs), vm));
    _mm512_storeu_ps(s + i, e);
    AddPd(e, &acc0, &acc1);
  }
  if (tail != 0) {
    const __m512 e = _mm512_maskz_mov_ps(tail, ExpNonPositive(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + n16), vs), vm)));
    _mm512_mask_storeu_ps(s + n16, tail, e);
    AddPd(e, &acc0, &acc1);
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

}  // namespace zf::vision::avx512

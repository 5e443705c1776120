// softmax.h's AVX2 + FMA row (compiled with -mavx2 -mfma for x86 only). exp by range reduction
// to [-ln2/2, ln2/2] and a degree-6 polynomial: relative error ~2e-7, as close to expf as the
// F32 sums that follow can tell (softmax_avx512.cpp computes the same values 16 at a time).
#include <immintrin.h>

#include <cmath>

#include "vision/softmax.h"

namespace zf::vision::avx2 {
namespace {

inline __m256 ExpNonPositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - k ln2, ln2 split in two for precision.
  const __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x));
  const float c[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  __m256 p = _mm256_set1_ps(c[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c[i]));
  const __m256i two_k = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_k));
}

}  // namespace

double SoftmaxNumerators(float* s, int64_t n, float scale) {
  const __m256 vs = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_mul_ps(_mm256_loadu_ps(s + i), vs));
  float lanes[8];
  _mm256_storeu_ps(lanes, vmax);
  float mx = lanes[0];
  for (int l = 1; l < 8; ++l) mx = std::fmax(mx, lanes[l]);
  for (; i < n; ++i) mx = std::fmax(mx, s[i] *= scale);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = ExpNonPositive(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i), vs), vm));
    _mm256_storeu_ps(s + i, e);
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double d[4];
  _mm256_storeu_pd(d, _mm256_add_pd(acc0, acc1));
  double sum = d[0] + d[1] + d[2] + d[3];
  for (; i < n; ++i) sum += double(s[i] = std::exp(s[i] - mx));
  return sum;
}

void SoftmaxRow(float* s, int64_t n, float scale) {
  const float inv = float(1.0 / SoftmaxNumerators(s, n, scale));
  const __m256 vi = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(s + i, _mm256_mul_ps(_mm256_loadu_ps(s + i), vi));
  for (; i < n; ++i) s[i] *= inv;
}

}  // namespace zf::vision::avx2

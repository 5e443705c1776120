// AVX2 kernels of the recurrent mixers (recurrent_kernels.h): the delta rule on blocks of 16
// value columns (2 vectors, so that a pass's sums stay in the 16 registers), then 8, then the
// scalar reference for the rest; each column's operations are the reference's, so the bits are.
// The Mamba-2 scan four state rows at a time, with the reference's 16 partial sums.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cmath>

#include "engine/cpu/recurrent_kernels.h"
#include "engine/cpu/vec_math_avx2.h"  // HsumPs: lanes j + j + 4, then + 2, + 1, the reference's order

namespace zf::engine::rec {
namespace {

// Position t's update of the block's rows, with (kNext) position t + 1's first sum on the same
// pass over the state: acc_next = sum over i of (S'[i] * g_next) * k_next[i] of the new rows S',
// the reference's sum for t + 1 (one pass over the state per position instead of two).
template <int NV, bool kNext>
void DeltaPass(float* S, size_t dv, int32_t dk, const float* k, const float* q, const __m256* d, __m256 g,
               const float* k_next, __m256 g_next, __m256* out, __m256* acc_next) {
  for (int u = 0; u < NV; ++u) {
    out[u] = _mm256_setzero_ps();
    acc_next[u] = _mm256_setzero_ps();
  }
  for (int32_t i = 0; i < dk; ++i) {
    float* row = S + size_t(i) * dv;
    const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
    for (int u = 0; u < NV; ++u) {
      const __m256 s = _mm256_fmadd_ps(ki, d[u], _mm256_mul_ps(_mm256_loadu_ps(row + 8 * u), g));
      _mm256_storeu_ps(row + 8 * u, s);
      out[u] = _mm256_fmadd_ps(s, qi, out[u]);
      if (kNext) acc_next[u] = _mm256_fmadd_ps(_mm256_mul_ps(s, g_next), _mm256_set1_ps(k_next[i]), acc_next[u]);
    }
  }
}

template <int NV>
void DeltaBlock(const DeltaRuleArgs& a, int32_t c0) {
  const size_t dv = size_t(a.dv);
  float* S = a.S + c0;
  const __m256 scale = _mm256_set1_ps(a.scale);
  __m256 acc[NV], d[NV], out[NV];
  for (int u = 0; u < NV; ++u) acc[u] = _mm256_setzero_ps();
  if (a.n_tok > 0) {  // position 0's sum on its own pass
    const __m256 g = _mm256_set1_ps(a.g[0]);
    for (int32_t i = 0; i < a.dk; ++i) {
      const float* row = S + size_t(i) * dv;
      const __m256 ki = _mm256_set1_ps(a.k[i]);
      for (int u = 0; u < NV; ++u) acc[u] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(row + 8 * u), g), ki, acc[u]);
    }
  }
  for (int32_t t = 0; t < a.n_tok; ++t) {
    const float* q = a.q + size_t(t) * a.qk_stride;
    const float* k = a.k + size_t(t) * a.qk_stride;
    const float* v = a.v + size_t(t) * a.v_stride + c0;
    float* o = a.o + size_t(t) * a.o_stride + c0;
    const __m256 g = _mm256_set1_ps(a.g[t]), b = _mm256_set1_ps(a.b[t]);
    for (int u = 0; u < NV; ++u) d[u] = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + 8 * u), acc[u]), b);
    if (t + 1 < a.n_tok) {
      DeltaPass<NV, true>(S, dv, a.dk, k, q, d, g, k + a.qk_stride, _mm256_set1_ps(a.g[t + 1]), out, acc);
    } else {
      DeltaPass<NV, false>(S, dv, a.dk, k, q, d, g, nullptr, g, out, acc);
    }
    for (int u = 0; u < NV; ++u) _mm256_storeu_ps(o + 8 * u, _mm256_mul_ps(out[u], scale));
  }
}


// R rows of the scan at one position: the 16 partial sums of a row in two vectors (entries
// n % 16 < 8, then >= 8), 2 R fma chains.
template <int R>
void ScanRows(const ScanArgs& a, int32_t i, const float* x, const float* B, const float* C, float dt, float dA,
              float* y) {
  const size_t N = size_t(a.N), N16 = N / 16 * 16;
  const __m256 vdA = _mm256_set1_ps(dA);
  __m256 xdt[R], lo[R], hi[R];
  float* s[R];
  for (int r = 0; r < R; ++r) {
    xdt[r] = _mm256_set1_ps(x[i + r] * dt);
    lo[r] = hi[r] = _mm256_setzero_ps();
    s[r] = a.s + size_t(i + r) * N;
  }
  for (size_t n = 0; n < N16; n += 16) {
    const __m256 b0 = _mm256_loadu_ps(B + n), b1 = _mm256_loadu_ps(B + n + 8);
    const __m256 c0 = _mm256_loadu_ps(C + n), c1 = _mm256_loadu_ps(C + n + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 v0 = _mm256_fmadd_ps(b0, xdt[r], _mm256_mul_ps(_mm256_loadu_ps(s[r] + n), vdA));
      const __m256 v1 = _mm256_fmadd_ps(b1, xdt[r], _mm256_mul_ps(_mm256_loadu_ps(s[r] + n + 8), vdA));
      _mm256_storeu_ps(s[r] + n, v0);
      _mm256_storeu_ps(s[r] + n + 8, v1);
      lo[r] = _mm256_fmadd_ps(v0, c0, lo[r]);
      hi[r] = _mm256_fmadd_ps(v1, c1, hi[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float sum = vec2::HsumPs(_mm256_add_ps(lo[r], hi[r]));
    const float xd = x[i + r] * dt;
    for (size_t n = N16; n < N; ++n) {
      s[r][n] = std::fma(B[n], xd, s[r][n] * dA);
      sum = std::fma(s[r][n], C[n], sum);
    }
    y[i + r] = std::fma(x[i + r], a.D, sum);
  }
}

}  // namespace

void ScanAvx2(const ScanArgs& a) {
  for (int32_t t = 0; t < a.n_tok; ++t) {
    const float* x = a.x + size_t(t) * a.x_stride;
    const float* B = a.B + size_t(t) * a.bc_stride;
    const float* C = a.C + size_t(t) * a.bc_stride;
    float* y = a.y + size_t(t) * a.y_stride;
    int32_t i = 0;
    for (; i + 4 <= a.P; i += 4) ScanRows<4>(a, i, x, B, C, a.dt[t], a.dA[t], y);
    for (; i < a.P; ++i) ScanRows<1>(a, i, x, B, C, a.dt[t], a.dA[t], y);
  }
}

void DeltaRuleAvx2(const DeltaRuleArgs& a, int32_t c0, int32_t c1) {
  int32_t j = c0;
  for (; j + 16 <= c1; j += 16) DeltaBlock<2>(a, j);
  for (; j + 8 <= c1; j += 8) DeltaBlock<1>(a, j);
  if (j < c1) DeltaRuleRef(a, j, c1);
}

}  // namespace zf::engine::rec

#endif  // x86

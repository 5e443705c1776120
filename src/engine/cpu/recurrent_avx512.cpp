// AVX-512 kernels of the recurrent mixers (recurrent_kernels.h): the delta rule on blocks of 64
// value columns (4 vectors: independent fma chains per key row), then 16, then the scalar
// reference for the rest; each column's operations are the reference's, so the bits are too.
// The Mamba-2 scan: for the usual state sizes, tiles of 16 positions with the state in registers
// and the reference's 16 partial sums folded 16 positions at a time; else four state rows at a
// time, one position after another.
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
void DeltaPass(float* S, size_t dv, int32_t dk, const float* k, const float* q, const __m512* d, __m512 g,
               const float* k_next, __m512 g_next, __m512* out, __m512* acc_next) {
  for (int u = 0; u < NV; ++u) {
    out[u] = _mm512_setzero_ps();
    acc_next[u] = _mm512_setzero_ps();
  }
  for (int32_t i = 0; i < dk; ++i) {
    float* row = S + size_t(i) * dv;
    const __m512 ki = _mm512_set1_ps(k[i]), qi = _mm512_set1_ps(q[i]);
    for (int u = 0; u < NV; ++u) {
      const __m512 s = _mm512_fmadd_ps(ki, d[u], _mm512_mul_ps(_mm512_loadu_ps(row + 16 * u), g));
      _mm512_storeu_ps(row + 16 * u, s);
      out[u] = _mm512_fmadd_ps(s, qi, out[u]);
      if (kNext) acc_next[u] = _mm512_fmadd_ps(_mm512_mul_ps(s, g_next), _mm512_set1_ps(k_next[i]), acc_next[u]);
    }
  }
}

template <int NV>
void DeltaBlock(const DeltaRuleArgs& a, int32_t c0) {
  const size_t dv = size_t(a.dv);
  float* S = a.S + c0;
  const __m512 scale = _mm512_set1_ps(a.scale);
  __m512 acc[NV], d[NV], out[NV];
  for (int u = 0; u < NV; ++u) acc[u] = _mm512_setzero_ps();
  if (a.n_tok > 0) {  // position 0's sum on its own pass
    const __m512 g = _mm512_set1_ps(a.g[0]);
    for (int32_t i = 0; i < a.dk; ++i) {
      const float* row = S + size_t(i) * dv;
      const __m512 ki = _mm512_set1_ps(a.k[i]);
      for (int u = 0; u < NV; ++u) acc[u] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(row + 16 * u), g), ki, acc[u]);
    }
  }
  for (int32_t t = 0; t < a.n_tok; ++t) {
    const float* q = a.q + size_t(t) * a.qk_stride;
    const float* k = a.k + size_t(t) * a.qk_stride;
    const float* v = a.v + size_t(t) * a.v_stride + c0;
    float* o = a.o + size_t(t) * a.o_stride + c0;
    const __m512 g = _mm512_set1_ps(a.g[t]), b = _mm512_set1_ps(a.b[t]);
    for (int u = 0; u < NV; ++u) d[u] = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + 16 * u), acc[u]), b);
    if (t + 1 < a.n_tok) {
      DeltaPass<NV, true>(S, dv, a.dk, k, q, d, g, k + a.qk_stride, _mm512_set1_ps(a.g[t + 1]), out, acc);
    } else {
      DeltaPass<NV, false>(S, dv, a.dk, k, q, d, g, nullptr, g, out, acc);
    }
    for (int u = 0; u < NV; ++u) _mm512_storeu_ps(o + 16 * u, _mm512_mul_ps(out[u], scale));
  }
}


// The two 256-bit halves of a vector added (lane j + lane j + 8), through memory: the casts and
// extracts trip GCC 12's maybe-uninitialized, and SIMDe's emulation has no extractf32x8.
inline __m256 AddHalves(__m512 x) {
  alignas(64) float f[16];
  _mm512_store_ps(f, x);
  return _mm256_add_ps(_mm256_load_ps(f), _mm256_load_ps(f + 8));
}

// R rows of the scan at one position: 16 state entries of each row per vector, R fma chains.
template <int R>
void ScanRows(const ScanArgs& a, int32_t i, const float* x, const float* B, const float* C, float dt, float dA,
              float* y) {
  const size_t N = size_t(a.N), N16 = N / 16 * 16;
  const __m512 vdA = _mm512_set1_ps(dA);
  __m512 xdt[R], acc[R];
  float* s[R];
  for (int r = 0; r < R; ++r) {
    xdt[r] = _mm512_set1_ps(x[i + r] * dt);
    acc[r] = _mm512_setzero_ps();
    s[r] = a.s + size_t(i + r) * N;
  }
  for (size_t n = 0; n < N16; n += 16) {
    const __m512 b = _mm512_loadu_ps(B + n), c = _mm512_loadu_ps(C + n);
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_fmadd_ps(b, xdt[r], _mm512_mul_ps(_mm512_loadu_ps(s[r] + n), vdA));
      _mm512_storeu_ps(s[r] + n, v);
      acc[r] = _mm512_fmadd_ps(v, c, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float sum = vec2::HsumPs(AddHalves(acc[r]));
    const float xd = x[i + r] * dt;
    for (size_t n = N16; n < N; ++n) {
      s[r][n] = std::fma(B[n], xd, s[r][n] * dA);
      sum = std::fma(s[r][n], C[n], sum);
    }
    y[i + r] = std::fma(x[i + r], a.D, sum);
  }
}

// Lane j of a + lane j of b for the lanes of a and b that idx_u and idx_v pick
// (_mm512_permutex2var_ps: 0-15 from a, 16-31 from b). Not shuffle_f32x4 / shuffle_ps: GCC 12's
// headers give those an undefined source that -Werror=uninitialized refuses.
inline __m512 AddPicked(__m512 a, __m512 b, __m512i idx_u, __m512i idx_v) {
  return _mm512_add_ps(_mm512_permutex2var_ps(a, idx_u, b), _mm512_permutex2var_ps(a, idx_v, b));
}

// The reference's fold of 16 partial sums (lane j + lane j + 8, then + 4, + 2, + 1) for 16
// positions at once: each step adds the same two lanes as the reference, two positions' lanes
// moved side by side per vector. v[k] holds position k's partials (k < nt, the rest read as
// zero); out[k] gets its sum.
void FoldSums16(const float (*v)[16], int32_t nt, float* out) {
  __m512 a[16];
  for (int32_t k = 0; k < 16; ++k) a[k] = k < nt ? _mm512_load_ps(v[k]) : _mm512_setzero_ps();
  // + 8: lanes 0-7 of c[k] are position 2k's, 8-15 position 2k + 1's.
  const __m512i u8 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i v8 = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  // + 4: block k (4 lanes) of e[m] is position 4m + k.
  const __m512i u4 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i v4 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  // + 2: block k of g[p] is positions 8p + k (lanes 0-1) and 8p + 4 + k (lanes 2-3).
  const __m512i u2 = _mm512_setr_epi32(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
  const __m512i v2 = _mm512_setr_epi32(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
  // + 1: lane 4k + q is position 4q + k.
  const __m512i u1 = _mm512_setr_epi32(0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30);
  const __m512i v1 = _mm512_setr_epi32(1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31);
  __m512 c[8], e[4], g[2];
  for (int k = 0; k < 8; ++k) c[k] = AddPicked(a[2 * k], a[2 * k + 1], u8, v8);
  for (int m = 0; m < 4; ++m) e[m] = AddPicked(c[2 * m], c[2 * m + 1], u4, v4);
  for (int p = 0; p < 2; ++p) g[p] = AddPicked(e[2 * p], e[2 * p + 1], u2, v2);
  alignas(64) float f[16];
  _mm512_store_ps(f, AddPicked(g[0], g[1], u1, v1));
  for (int32_t k = 0; k < nt; ++k) out[k] = f[4 * (k % 4) + k / 4];
}

// R rows of N = 16 * NB state entries over nt <= 16 positions from t0, the rows' state held in
// registers across the positions (one load and store per tile instead of per position); each
// position's 16 partial sums go to memory and are folded 16 positions at a time.
template <int NB, int R>
void ScanTile(const ScanArgs& a, int32_t i, int32_t t0, int32_t nt) {
  __m512 s[R][NB];
  float* row[R];
  for (int r = 0; r < R; ++r) {
    row[r] = a.s + size_t(i + r) * size_t(a.N);
    for (int nb = 0; nb < NB; ++nb) s[r][nb] = _mm512_loadu_ps(row[r] + 16 * nb);
  }
  alignas(64) float part[R][16][16];
  for (int32_t k = 0; k < nt; ++k) {
    const size_t t = size_t(t0 + k);
    const float* x = a.x + t * a.x_stride;
    const float* B = a.B + t * a.bc_stride;
    const float* C = a.C + t * a.bc_stride;
    const __m512 dA = _mm512_set1_ps(a.dA[t]);
    __m512 xdt[R], acc[R];
    for (int r = 0; r < R; ++r) {
      xdt[r] = _mm512_set1_ps(x[i + r] * a.dt[t]);
      acc[r] = _mm512_setzero_ps();
    }
    for (int nb = 0; nb < NB; ++nb) {
      const __m512 b = _mm512_loadu_ps(B + 16 * nb), c = _mm512_loadu_ps(C + 16 * nb);
      for (int r = 0; r < R; ++r) {
        s[r][nb] = _mm512_fmadd_ps(b, xdt[r], _mm512_mul_ps(s[r][nb], dA));
        acc[r] = _mm512_fmadd_ps(s[r][nb], c, acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) _mm512_store_ps(part[r][k], acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    for (int nb = 0; nb < NB; ++nb) _mm512_storeu_ps(row[r] + 16 * nb, s[r][nb]);
    float sum[16];
    FoldSums16(part[r], nt, sum);
    for (int32_t k = 0; k < nt; ++k) {
      const size_t t = size_t(t0 + k);
      const float xi = a.x[t * a.x_stride + size_t(i + r)];
      a.y[t * a.y_stride + size_t(i + r)] = std::fma(xi, a.D, sum[k]);
    }
  }
}

// Tiles of 16 positions (their B and C rows stay in L1), rows two at a time (one at a time when
// a row's state takes 16 vectors).
template <int NB>
void ScanTiled(const ScanArgs& a) {
  constexpr int R = NB <= 8 ? 2 : 1;
  for (int32_t t0 = 0; t0 < a.n_tok; t0 += 16) {
    const int32_t nt = a.n_tok - t0 < 16 ? a.n_tok - t0 : 16;
    int32_t i = 0;
    for (; i + R <= a.P; i += R) ScanTile<NB, R>(a, i, t0, nt);
    for (; i < a.P; ++i) ScanTile<NB, 1>(a, i, t0, nt);
  }
}

}  // namespace

void ScanAvx512(const ScanArgs& a) {
  // Tiles for prefill with the state sizes of the released models (128) and their neighbours;
  // a decode step (or a few positions) takes the per-position rows below: a tile's fold costs as
  // much for one position as for 16.
  if (a.n_tok >= 4) {
    switch (a.N) {
      case 32: return ScanTiled<2>(a);
      case 64: return ScanTiled<4>(a);
      case 128: return ScanTiled<8>(a);
      case 256: return ScanTiled<16>(a);
      default: break;
    }
  }
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

void DeltaRuleAvx512(const DeltaRuleArgs& a, int32_t c0, int32_t c1) {
  int32_t j = c0;
  for (; j + 64 <= c1; j += 64) DeltaBlock<4>(a, j);
  for (; j + 16 <= c1; j += 16) DeltaBlock<1>(a, j);
  if (j < c1) DeltaRuleRef(a, j, c1);
}

}  // namespace zf::engine::rec

#endif  // x86

// AVX-512 exact prefill tiles (attention_kernels.h, ExactTile): the decode kernel's bits
// (attention_avx512.cpp: DecodeScores, Softmax, DecodeValues) for many rows at once.
//
// The decode kernel's score of key k is, per lane j (0..15), the FMA chain over the head
// dimensions d = j, j+16, j+32, ... from zero, then the 16 lanes summed in ReduceAdd's pairs
// (lane i + i+8, then + i+4, then + i+2, then the last pair). Here lane j's chain runs for 16
// keys at once down the rows of K^T (q[d] broadcast), and the pairs are vertical adds: the same
// operations on the same values, so the same bits, without the horizontal sums (a third of the
// decode kernel's score instructions) and with each K^T vector serving 4 rows.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/cpu/attention_kernels.h"

namespace zf::engine::attn {
namespace {

constexpr int kGroup = 4;  // rows sharing each K^T / V load

// Lanes j and j+8's chains of G rows for 16 keys (kt at the panel's first key): a[g] = sum over
// d = j, j+16, ... of q[g][d] * K^T[d], fused and in order, from zero (as DecodeScores'
// accumulators), b[g] the same from j+8; the two lanes' chains interleaved (2G independent FMA
// chains in flight). M: d_k / 16 when fixed at compile time (the chains unrolled), 0 for any d_k.
template <int G, int M>
[[gnu::always_inline]] inline void LaneChains(const float* const* q, const float* kt, int64_t kts, int32_t d_k, int j,
                                              __m512* a, __m512* b) {
  if constexpr (M > 0) d_k = 16 * M;
  for (int g = 0; g < G; ++g) a[g] = b[g] = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int32_t d = j; d < d_k; d += 16) {
    const __m512 ka = _mm512_loadu_ps(kt + d * kts), kb = _mm512_loadu_ps(kt + (d + 8) * kts);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      a[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g][d]), ka, a[g]);
      b[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g][d + 8]), kb, b[g]);
    }
  }
}

// ReduceAdd's tree, one level per step: Pairs<W>(i) = the sum of lanes i, i + W, ... as the
// tree adds them; W = 8 is the first level (lane i + lane i+8).
template <int G, int M, int W>
[[gnu::always_inline]] inline void Pairs(const float* const* q, const float* kt, int64_t kts, int32_t d_k, int i,
                                         __m512* o) {
  __m512 a[G], b[G];
  if constexpr (W == 8) {
    LaneChains<G, M>(q, kt, kts, d_k, i, a, b);
  } else {
    Pairs<G, M, W * 2>(q, kt, kts, d_k, i, a);
    Pairs<G, M, W * 2>(q, kt, kts, d_k, i + W, b);
  }
  for (int g = 0; g < G; ++g) o[g] = _mm512_add_ps(a[g], b[g]);
}

// Raw scores of G rows for the 16 keys of one K^T panel into s[g][0..15].
template <int G, int M>
void ScorePanel(const float* const* q, const float* kt, int64_t kts, int32_t d_k, float* const* s) {
  __m512 r[G];
  Pairs<G, M, 1>(q, kt, kts, d_k, 0, r);  // (lanes 0, 2 ... ) + (lanes 1, 3 ...): the last pair
  for (int g = 0; g < G; ++g) _mm512_storeu_ps(s[g], r[g]);
}

// out[g][e0 .. e0 + 16 NC) = inv[g] * sum over keys j in [lo[g], hi[g]] of p[g][j] v_j, each chain in key
// order from zero (DecodeValues' accumulators; a row takes no step outside its keys, not even
// with weight 0, which could turn a -0 sum into +0). p[g] indexed by j - base.
template <int G, int NC>
[[gnu::noinline]] void ValueChunk(const ExactTile& t, int32_t e0, const float* const* p, int32_t base, const int32_t* lo,
                const int32_t* hi, const float* inv, float* const* out) {
  int32_t first = lo[0], last = hi[0], all_lo = lo[0], all_hi = hi[0];  // all rows: [all_lo, all_hi]
  for (int g = 1; g < G; ++g) {
    first = std::min(first, lo[g]), last = std::max(last, hi[g]);
    all_lo = std::max(all_lo, lo[g]), all_hi = std::min(all_hi, hi[g]);
  }
  if (all_lo > all_hi) all_lo = last + 1, all_hi = last;  // no key for all: every step checks
  __m512 acc[G][NC];
  for (auto& row : acc) for (__m512& a : row) a = _mm512_setzero_ps();
  // (Both lambdas always inlined and this function kept out of line: a lambda call or inlining
  // into the caller made GCC keep the accumulators in memory.)
  const auto load = [&](int32_t j, __m512* vv) __attribute__((always_inline)) {
    const float* v = t.v + j * t.v_stride + e0;
    for (int c = 0; c < NC; ++c) vv[c] = _mm512_loadu_ps(v + 16 * c);
  };
  const auto some = [&](int32_t j) __attribute__((always_inline)) {  // the rows whose keys include j
    __m512 vv[NC];
    load(j, vv);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      if (j < lo[g] || j > hi[g]) continue;
      const __m512 w = _mm512_set1_ps(p[g][j - base]);
      for (int c = 0; c < NC; ++c) acc[g][c] = _mm512_fmadd_ps(w, vv[c], acc[g][c]);
    }
  };
  int32_t j = first;
  for (; j < all_lo; ++j) some(j);
  for (; j <= all_hi; ++j) {
    __m512 vv[NC];
    load(j, vv);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m512 w = _mm512_set1_ps(p[g][j - base]);
      for (int c = 0; c < NC; ++c) acc[g][c] = _mm512_fmadd_ps(w, vv[c], acc[g][c]);
    }
  }
  for (; j <= last; ++j) some(j);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m512 iv = _mm512_set1_ps(inv[g]);
    for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out[g] + e0 + 16 * c, _mm512_mul_ps(acc[g][c], iv));
  }
}

// ValueChunk over all of d_v: 64 dimensions at a time (the decode kernel's chunks; each output
// element's chain is the same whatever the chunking), then the 16-wide rest.
template <int G>
void ValueRows(const ExactTile& t, const float* const* p, int32_t base, const int32_t* lo, const int32_t* hi,
               const float* inv, float* const* out) {
  int32_t e0 = 0;
  for (; e0 + 64 <= t.d_v; e0 += 64) ValueChunk<G, 4>(t, e0, p, base, lo, hi, inv, out);
  switch ((t.d_v - e0) / 16) {
    case 1: ValueChunk<G, 1>(t, e0, p, base, lo, hi, inv, out); break;
    case 2: ValueChunk<G, 2>(t, e0, p, base, lo, hi, inv, out); break;
    case 3: ValueChunk<G, 3>(t, e0, p, base, lo, hi, inv, out); break;
    default: break;
  }
}

// Scores of rows [r, r + n) for one panel, d_k's chains unrolled for the common head sizes.
template <int G>
void ScoreRows(const float* const* q, const float* kt, int64_t kts, int32_t d_k, float* const* s) {
  switch (d_k) {
    case 64: ScorePanel<G, 4>(q, kt, kts, d_k, s); break;
    case 128: ScorePanel<G, 8>(q, kt, kts, d_k, s); break;
    case 256: ScorePanel<G, 16>(q, kt, kts, d_k, s); break;
    default: ScorePanel<G, 0>(q, kt, kts, d_k, s); break;
  }
}

}  // namespace

void RunExactTileAvx512(const ExactTile& t) {
  int32_t first = t.lo[0], last = t.hi[0];
  for (int32_t r = 1; r < t.rows; ++r) first = std::min(first, t.lo[r]), last = std::max(last, t.hi[r]);
  const int32_t base = first & ~15;  // score row r holds key j at j - base
  // Scores: K panels of 16 keys outside (d_k x 16 floats, from L1 for every row group), groups
  // of kGroup rows inside; a group skips the panels none of its rows sees.
  for (int32_t j0 = base; j0 <= last; j0 += 16) {
    const float* kt = t.kt + (j0 / 16) * t.kt_stride;  // d_k rows of 16 keys, contiguous
    for (int32_t r = 0; r < t.rows; r += kGroup) {
      const int n = std::min<int32_t>(kGroup, t.rows - r);
      const float* q[kGroup];
      float* s[kGroup];
      bool seen = false;
      for (int g = 0; g < n; ++g) {
        q[g] = t.q + int64_t{r + g} * t.d_k;
        s[g] = t.s + (r + g) * t.ss + (j0 - base);
        seen = seen || (t.lo[r + g] <= j0 + 15 && t.hi[r + g] >= j0);
      }
      if (!seen) continue;
      switch (n) {
        case 1: ScoreRows<1>(q, kt, 16, t.d_k, s); break;
        case 2: ScoreRows<2>(q, kt, 16, t.d_k, s); break;
        case 3: ScoreRows<3>(q, kt, 16, t.d_k, s); break;
        default: ScoreRows<4>(q, kt, 16, t.d_k, s); break;
      }
    }
  }
  // Softmax per row over its own keys: the decode kernel's function and count (a partial one as
  // a split decode's block: no sink, the max and sum kept, inv 1).
  float inv[kExactRows];
  const float* p[kExactRows];
  for (int32_t r = 0; r < t.rows; ++r) {
    float mx;
    float* s = t.s + r * t.ss;
    p[r] = s;
    const int64_t n = int64_t{t.hi[r]} - t.lo[r] + 1;
    if (t.part != nullptr) {
      t.part[r].sum = SoftmaxSumAvx512(s + (t.lo[r] - base), n, t.scale, t.softcap, -INFINITY, &t.part[r].max);
      inv[r] = 1.0f;
      continue;
    }
    inv[r] = 1.0f / SoftmaxSumAvx512(s + (t.lo[r] - base), n, t.scale, t.softcap,
                                     t.sink != nullptr ? t.sink[r] : -INFINITY, &mx);
  }
  for (int32_t r = 0; r < t.rows; r += kGroup) {
    switch (std::min<int32_t>(kGroup, t.rows - r)) {
      case 1: ValueRows<1>(t, p + r, base, t.lo + r, t.hi + r, inv + r, t.out + r); break;
      case 2: ValueRows<2>(t, p + r, base, t.lo + r, t.hi + r, inv + r, t.out + r); break;
      case 3: ValueRows<3>(t, p + r, base, t.lo + r, t.hi + r, inv + r, t.out + r); break;
      default: ValueRows<4>(t, p + r, base, t.lo + r, t.hi + r, inv + r, t.out + r); break;
    }
  }
}

}  // namespace zf::engine::attn

#endif  // x86

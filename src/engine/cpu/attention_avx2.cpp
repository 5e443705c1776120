// AVX2 attention kernels (see attention_kernels.h; loops in attention_drivers.h): blocked
// prefill and grouped decode, the AVX-512 kernels' tiles at half the width. Register tiles of 4 query rows x 16 keys
// (S = Q K^T: per head dimension, 2 loads of K^T and 4 broadcasts of Q feed 8 FMAs) and 4 rows
// x 16 value dimensions (O = P V); 8 accumulators leave registers for the operands in the 16
// YMM registers. Results differ from the scalar reference by float rounding only.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/cpu/attention_drivers.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/vec_math_avx2.h"

namespace zf::engine::attn {
namespace {

using vec2::Exp;
using vec2::HmaxPs;
using vec2::HsumPs;
using vec2::TailMask8;

// S[a..a+3][j0 .. j0+63] for keys j0.. (all 64 computed; K^T is padded), 16 keys at a time.
inline void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss) {
  const float* q0 = b.q + int64_t{a} * b.d_k;
  for (int64_t jj = j0; jj < j0 + 64; jj += 16) {
    __m256 acc[4][2];
    for (auto& row : acc) for (__m256& v : row) v = _mm256_setzero_ps();
    const float* kt = b.kt + jj;
    for (int32_t d = 0; d < b.d_k; ++d) {
      const float* kd = kt + d * b.kt_stride;
      const __m256 k0 = _mm256_loadu_ps(kd), k1 = _mm256_loadu_ps(kd + 8);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m256 qv = _mm256_set1_ps(q0[i * b.d_k + d]);
        acc[i][0] = _mm256_fmadd_ps(qv, k0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(qv, k1, acc[i][1]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_storeu_ps(s + (a + i) * ss + jj, acc[i][0]);
      _mm256_storeu_ps(s + (a + i) * ss + jj + 8, acc[i][1]);
    }
  }
}

// Softmax of x[0, n) in place after scaling (and the softcap): exp(s - max), unnormalized;
// returns the sum and the max in *mx_out (Softmax: 1 / sum). A finite sink joins the max and the
// sum (attention sinks) without a value; -INFINITY (no sink) adds nothing.
float SoftmaxSumImpl(float* x, int64_t n, float scale, float softcap, float sink, float* mx_out) {
  if (softcap > 0.0f) {
    for (int64_t j = 0; j < n; ++j) x[j] = softcap * std::tanh(x[j] * scale / softcap);
  } else {
    const __m256 sc = _mm256_set1_ps(scale);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), sc));
    for (; j < n; ++j) x[j] *= scale;
  }
  __m256 mx = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + j));
  float m = HmaxPs(mx);
  for (int64_t t = j; t < n; ++t) m = std::max(m, x[t]);
  m = std::max(m, sink);
  const __m256 mv = _mm256_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
    _mm256_storeu_ps(x + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (j < n) {  // the tail through a masked vector (same Exp as the body)
    const __m256i mk = TailMask8(n - j);
    const __m256 e = Exp(_mm256_sub_ps(_mm256_maskload_ps(x + j, mk), mv));
    _mm256_maskstore_ps(x + j, mk, e);
    sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(mk)));
  }
  *mx_out = m;
  return HsumPs(sum) + (sink > -INFINITY ? std::exp(sink - m) : 0.0f);
}

float Softmax(float* x, int64_t n, float scale, float softcap, float sink) {
  float mx;
  return 1.0f / SoftmaxSumImpl(x, n, scale, softcap, sink, &mx);
}

// out[i][e0 .. e0+15] = inv[i] * ((acc_in ? out[i] : 0) + sum over keys j in [ulo, uhi] of
// p[i][j] * V[j][e0 ..]) for the na (<= 4) rows of a tile (inv null: stored unscaled, a partial
// sum over one chunk of keys); kFull: all 16 dimensions exist (else masked loads and stores).
template <bool kFull>
void ValueTile(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t e0, int32_t na,
               const float* inv, float* const* out, bool acc_in) {
  const __m256i mk0 = TailMask8(int64_t{b.d_v} - e0), mk1 = TailMask8(int64_t{b.d_v} - e0 - 8);
  const int64_t vs = b.v_stride;
  const float* v = b.v + e0;
  const float* p0 = p;
  const float* p1 = p + ss;
  const float* p2 = p + 2 * ss;
  const float* p3 = p + 3 * ss;
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
  if (acc_in) {
    const auto load = [&](int i, __m256& x0, __m256& x1) {
      const float* o = out[i] + e0;
      x0 = kFull ? _mm256_loadu_ps(o) : _mm256_maskload_ps(o, mk0);
      x1 = kFull ? _mm256_loadu_ps(o + 8) : _mm256_maskload_ps(o + 8, mk1);
    };
    load(0, a00, a01);
    if (na > 1) load(1, a10, a11);
    if (na > 2) load(2, a20, a21);
    if (na > 3) load(3, a30, a31);
  }
  for (int32_t j = ulo; j <= uhi; ++j) {
    const float* vj = v + j * vs;
    const __m256 v0 = kFull ? _mm256_loadu_ps(vj) : _mm256_maskload_ps(vj, mk0);
    const __m256 v1 = kFull ? _mm256_loadu_ps(vj + 8) : _mm256_maskload_ps(vj + 8, mk1);
    __m256 w = _mm256_set1_ps(p0[j]);
    a00 = _mm256_fmadd_ps(w, v0, a00), a01 = _mm256_fmadd_ps(w, v1, a01);
    w = _mm256_set1_ps(p1[j]);
    a10 = _mm256_fmadd_ps(w, v0, a10), a11 = _mm256_fmadd_ps(w, v1, a11);
    w = _mm256_set1_ps(p2[j]);
    a20 = _mm256_fmadd_ps(w, v0, a20), a21 = _mm256_fmadd_ps(w, v1, a21);
    w = _mm256_set1_ps(p3[j]);
    a30 = _mm256_fmadd_ps(w, v0, a30), a31 = _mm256_fmadd_ps(w, v1, a31);
  }
  const auto store = [&](int i, __m256 x0, __m256 x1) {
    float* o = out[i] + e0;
    if (inv != nullptr) {
      const __m256 iv = _mm256_set1_ps(inv[i]);
      x0 = _mm256_mul_ps(x0, iv), x1 = _mm256_mul_ps(x1, iv);
    }
    if (kFull) {
      _mm256_storeu_ps(o, x0);
      _mm256_storeu_ps(o + 8, x1);
    } else {
      _mm256_maskstore_ps(o, mk0, x0);
      _mm256_maskstore_ps(o + 8, mk1, x1);
    }
  };
  store(0, a00, a01);
  if (na > 1) store(1, a10, a11);
  if (na > 2) store(2, a20, a21);
  if (na > 3) store(3, a30, a31);
}

inline __m256 LoadF16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Raw scores of NQ heads: s[h][j] = q_h . k_j. Each key row is converted once for all heads.
template <int NQ>
void DecodeScores(const DecodeGroup& g) {
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint16_t* k = g.k + j * g.k_stride;
    __m256 acc[NQ];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int32_t d = 0; d < g.d_k; d += 8) {
      const __m256 kv = LoadF16(k + d);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(g.q + h * g.d_k + d), kv, acc[h]);
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = HsumPs(acc[h]);
  }
}

// out[h][e0 .. e0+15] = inv[h] * sum_j p[h][j] v_j[e0 ..]: each value row converted once, the
// NQ x 2 accumulators in registers.
template <int NQ>
void DecodeValues(const DecodeGroup& g, const float* inv) {
  for (int32_t e0 = 0; e0 < g.d_v; e0 += 16) {
    const bool two = g.d_v - e0 >= 16;  // d_v % 8 == 0: a tile has 1 or 2 chunks of 8
    __m256 acc[NQ][2];
    for (auto& row : acc) for (__m256& a : row) a = _mm256_setzero_ps();
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint16_t* v = g.v + j * g.v_stride + e0;
      const __m256 v0 = LoadF16(v), v1 = two ? LoadF16(v + 8) : _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m256 w = _mm256_set1_ps(g.s[h * g.n_keys + j]);
        acc[h][0] = _mm256_fmadd_ps(w, v0, acc[h][0]);
        acc[h][1] = _mm256_fmadd_ps(w, v1, acc[h][1]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      const __m256 iv = _mm256_set1_ps(inv[h]);
      _mm256_storeu_ps(g.out[h] + e0, _mm256_mul_ps(acc[h][0], iv));
      if (two) _mm256_storeu_ps(g.out[h] + e0 + 8, _mm256_mul_ps(acc[h][1], iv));
    }
  }
}

// Vector width 8: the ops of the shared loops (attention_drivers.h).
struct Avx2Ops {
  static void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss) {
    attn::ScoreTile(b, a, j0, s, ss);
  }
  static float Softmax(float* x, int64_t n, float scale, float softcap, float sink) {
    return attn::Softmax(x, n, scale, softcap, sink);
  }
  static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
    return SoftmaxSumImpl(x, n, scale, softcap, sink, mx);
  }
  static void ValueTiles(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t na,
                         const float* inv, float* const* out, bool acc_in) {
    int32_t e0 = 0;  // 16 value dimensions at a time, a masked tile for the rest
    for (; e0 + 16 <= b.d_v; e0 += 16) ValueTile<true>(b, p, ss, ulo, uhi, e0, na, inv, out, acc_in);
    if (e0 < b.d_v) ValueTile<false>(b, p, ss, ulo, uhi, e0, na, inv, out, acc_in);
  }
  template <int NQ>
  static void DecodeScores(const DecodeGroup& g) {
    attn::DecodeScores<NQ>(g);
  }
  template <int NQ>
  static void DecodeValues(const DecodeGroup& g, const float* inv) {
    attn::DecodeValues<NQ>(g, inv);
  }
};

}  // namespace

float SoftmaxSumAvx2(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
  return SoftmaxSumImpl(x, n, scale, softcap, sink, mx);
}
void RunDecodeAvx2(const DecodeGroup& g) { RunDecodeWith<Avx2Ops>(g); }
void RunBlockAvx2(const Block& b) { RunBlockWith<Avx2Ops>(b); }

}  // namespace zf::engine::attn

#endif  // x86

// AVX-512 attention kernels (see attention_kernels.h; loops in attention_drivers.h): blocked
// prefill and grouped decode.
//
// Register tiles of 4 query rows x 64 keys (S = Q K^T: per head dimension, 4 loads of K^T and 4
// broadcasts of Q feed 16 FMAs) and 4 rows x 64 value dimensions (O = P V: per key, 4 loads of
// V and 4 broadcasts of P feed 16 FMAs); 16 accumulators leave registers for the operands.
// exp is a degree-6 polynomial after range reduction (about 1 ulp, as accurate as needed for
// softmax weights). Results differ from the scalar reference by float rounding only.
#if defined(__x86_64__) || defined(__i386__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "engine/cpu/attention_drivers.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/vec_math_avx512.h"

namespace zf::engine::attn {
namespace {

using vec::Exp;

inline __mmask16 TailMask(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

// S[a..a+3][j0 .. j0+63] for keys j0.. (all 64 computed; K^T is padded).
inline void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss) {
  __m512 acc[4][4];
  for (auto& row : acc) for (__m512& v : row) v = _mm512_setzero_ps();
  const float* q0 = b.q + int64_t{a} * b.d_k;
  const float* kt = b.kt + j0;
  for (int32_t d = 0; d < b.d_k; ++d) {
    const float* kd = kt + d * b.kt_stride;
    const __m512 k0 = _mm512_loadu_ps(kd), k1 = _mm512_loadu_ps(kd + 16);
    const __m512 k2 = _mm512_loadu_ps(kd + 32), k3 = _mm512_loadu_ps(kd + 48);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512 qv = _mm512_set1_ps(q0[i * b.d_k + d]);
      acc[i][0] = _mm512_fmadd_ps(qv, k0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(qv, k1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(qv, k2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(qv, k3, acc[i][3]);
    }
  }
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(s + (a + i) * ss + j0 + 16 * c, acc[i][c]);
  }
}

// Softmax of x[0, n) in place after scaling (and the softcap): exp(s - max), unnormalized;
// returns the sum and the max in *mx_out (Softmax: 1 / sum). A finite sink joins the max and the
// sum (attention sinks) without a value; -INFINITY (no sink) adds nothing.
float SoftmaxSumImpl(float* x, int64_t n, float scale, float softcap, float sink, float* mx_out) {
  if (softcap > 0.0f) {
    for (int64_t j = 0; j < n; ++j) x[j] = softcap * std::tanh(x[j] * scale / softcap);
  } else {
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = TailMask(n - j);
      _mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), sc));
    }
  }
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = TailMask(n - j);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, x + j));
  }
  const float mxs = std::max(_mm512_reduce_max_ps(mx), sink);
  const __m512 mv = _mm512_set1_ps(mxs);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = TailMask(n - j);
    const __m512 e = Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), mv));
    _mm512_mask_storeu_ps(x + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  *mx_out = mxs;
  return _mm512_reduce_add_ps(sum) + (sink > -INFINITY ? std::exp(sink - mxs) : 0.0f);
}

float Softmax(float* x, int64_t n, float scale, float softcap, float sink) {
  float mx;
  return 1.0f / SoftmaxSumImpl(x, n, scale, softcap, sink, &mx);
}

// out[i][e0 .. e0+63] = inv[i] * ((acc_in ? out[i] : 0) + sum over keys j in [ulo, uhi] of
// p[i][j] * V[j][e0 ..]) for the na (<= 4) rows of a tile (inv null: stored unscaled, a partial
// sum over one chunk of keys). Every loop over the 4 rows is unrolled and the row count handled
// by `if`, so that the 16 accumulators stay in registers.
void ValueTile(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t e0, int32_t na,
               const float* inv, float* const* out, bool acc_in) {
  __mmask16 mk[4];
  for (int c = 0; c < 4; ++c) mk[c] = TailMask(std::max<int64_t>(0, int64_t{b.d_v} - e0 - 16 * c));
  const int64_t vs = b.v_stride;
  const float* v = b.v + e0;
  const float* p0 = p;
  const float* p1 = p + ss;
  const float* p2 = p + 2 * ss;
  const float* p3 = p + 3 * ss;
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
  if (acc_in) {
    const auto load = [&](int i, __m512& x0, __m512& x1, __m512& x2, __m512& x3) {
      const float* o = out[i] + e0;
      x0 = _mm512_maskz_loadu_ps(mk[0], o), x1 = _mm512_maskz_loadu_ps(mk[1], o + 16);
      x2 = _mm512_maskz_loadu_ps(mk[2], o + 32), x3 = _mm512_maskz_loadu_ps(mk[3], o + 48);
    };
    load(0, a00, a01, a02, a03);
    if (na > 1) load(1, a10, a11, a12, a13);
    if (na > 2) load(2, a20, a21, a22, a23);
    if (na > 3) load(3, a30, a31, a32, a33);
  }
  for (int32_t j = ulo; j <= uhi; ++j) {
    const float* vj = v + j * vs;
    const __m512 v0 = _mm512_maskz_loadu_ps(mk[0], vj), v1 = _mm512_maskz_loadu_ps(mk[1], vj + 16);
    const __m512 v2 = _mm512_maskz_loadu_ps(mk[2], vj + 32), v3 = _mm512_maskz_loadu_ps(mk[3], vj + 48);
    __m512 w = _mm512_set1_ps(p0[j]);
    a00 = _mm512_fmadd_ps(w, v0, a00), a01 = _mm512_fmadd_ps(w, v1, a01);
    a02 = _mm512_fmadd_ps(w, v2, a02), a03 = _mm512_fmadd_ps(w, v3, a03);
    w = _mm512_set1_ps(p1[j]);
    a10 = _mm512_fmadd_ps(w, v0, a10), a11 = _mm512_fmadd_ps(w, v1, a11);
    a12 = _mm512_fmadd_ps(w, v2, a12), a13 = _mm512_fmadd_ps(w, v3, a13);
    w = _mm512_set1_ps(p2[j]);
    a20 = _mm512_fmadd_ps(w, v0, a20), a21 = _mm512_fmadd_ps(w, v1, a21);
    a22 = _mm512_fmadd_ps(w, v2, a22), a23 = _mm512_fmadd_ps(w, v3, a23);
    w = _mm512_set1_ps(p3[j]);
    a30 = _mm512_fmadd_ps(w, v0, a30), a31 = _mm512_fmadd_ps(w, v1, a31);
    a32 = _mm512_fmadd_ps(w, v2, a32), a33 = _mm512_fmadd_ps(w, v3, a33);
  }
  const auto store = [&](int i, __m512 x0, __m512 x1, __m512 x2, __m512 x3) {
    float* o = out[i] + e0;
    if (inv != nullptr) {
      const __m512 iv = _mm512_set1_ps(inv[i]);
      x0 = _mm512_mul_ps(x0, iv), x1 = _mm512_mul_ps(x1, iv), x2 = _mm512_mul_ps(x2, iv), x3 = _mm512_mul_ps(x3, iv);
    }
    _mm512_mask_storeu_ps(o, mk[0], x0);
    _mm512_mask_storeu_ps(o + 16, mk[1], x1);
    _mm512_mask_storeu_ps(o + 32, mk[2], x2);
    _mm512_mask_storeu_ps(o + 48, mk[3], x3);
  };
  store(0, a00, a01, a02, a03);
  if (na > 1) store(1, a10, a11, a12, a13);
  if (na > 2) store(2, a20, a21, a22, a23);
  if (na > 3) store(3, a30, a31, a32, a33);
}

inline __m512 LoadF16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The sum of a vector's 16 lanes in a fixed tree, the one GCC's _mm512_reduce_add_ps adds in:
// lane i + lane i+8, then those i + i+4, then i + i+2, then the last pair. Written out so that
// every compiler adds the same pairs as ReduceAdd16 below.
inline float ReduceAdd(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

// out[k] = ReduceAdd(v[k]) for 16 vectors at once, bit for bit (the same pairs added, 16 at a
// time): a horizontal sum per key took most of the decode kernel's score time. Each step adds
// two halves of two vectors at once; the pairing (kPair) makes the last step's lanes keys 0..15.
inline void ReduceAdd16(const __m512* v, float* out) {
  static constexpr int kPair[8][2] = {{0, 4}, {8, 12}, {1, 5}, {9, 13}, {2, 6}, {10, 14}, {3, 7}, {11, 15}};
  __m512 w[8], u[4];
  for (int m = 0; m < 8; ++m) {  // 256-bit halves: [a lo + a hi, b lo + b hi]
    const __m512 a = v[kPair[m][0]], b = v[kPair[m][1]];
    w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  for (int n = 0; n < 4; ++n) {  // 128-bit quarters: four vectors' partial sums, one per lane
    const __m512 a = w[2 * n], b = w[2 * n + 1];
    u[n] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
  const __m512 z0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x44), _mm512_shuffle_ps(u[0], u[1], 0xEE));
  const __m512 z1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], 0x44), _mm512_shuffle_ps(u[2], u[3], 0xEE));
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_ps(z0, z1, 0x88), _mm512_shuffle_ps(z0, z1, 0xDD)));
}

// Raw scores of NQ heads: s[h][j] = q_h . k_j. Each key row is converted once for all heads; the
// lanes of 16 keys' sums are added together (ReduceAdd16), the same bits as one key at a time,
// so a score does not depend on which 16 keys share its pass (n_keys and k0 differ between a
// prompt's rows and decode steps).
template <int NQ>
void DecodeScores(const DecodeGroup& g) {
  const auto dot = [&](int32_t j, __m512* acc) {
    const uint16_t* k = g.k + j * g.k_stride;
    for (int h = 0; h < NQ; ++h) acc[h] = _mm512_setzero_ps();
    for (int32_t d = 0; d < g.d_k; d += 16) {
      const __m512 kv = LoadF16(k + d);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) acc[h] = _mm512_fmadd_ps(_mm512_loadu_ps(g.q + h * g.d_k + d), kv, acc[h]);
    }
  };
  int32_t j = 0;
  for (; j + 16 <= g.n_keys; j += 16) {
    __m512 acc[NQ][16];
    // 4 keys at a time: 4 x NQ independent FMA chains (one key's chain alone waited on its
    // latency); each key's chain is the same FMAs in the same order as dot().
    for (int k0 = 0; k0 < 16; k0 += 4) {
      __m512 a[NQ][4];
      for (int h = 0; h < NQ; ++h) {
        for (int k = 0; k < 4; ++k) a[h][k] = _mm512_setzero_ps();
      }
      const uint16_t* k = g.k + (j + k0) * g.k_stride;
      for (int32_t d = 0; d < g.d_k; d += 16) {
        __m512 kv[4];
        for (int i = 0; i < 4; ++i) kv[i] = LoadF16(k + i * g.k_stride + d);
#pragma GCC unroll 4
        for (int h = 0; h < NQ; ++h) {
          const __m512 qv = _mm512_loadu_ps(g.q + h * g.d_k + d);
          for (int i = 0; i < 4; ++i) a[h][i] = _mm512_fmadd_ps(qv, kv[i], a[h][i]);
        }
      }
      for (int h = 0; h < NQ; ++h) {
        for (int i = 0; i < 4; ++i) acc[h][k0 + i] = a[h][i];
      }
    }
    for (int h = 0; h < NQ; ++h) ReduceAdd16(acc[h], g.s + h * g.n_keys + j);
  }
  for (; j < g.n_keys; ++j) {
    __m512 acc[NQ];
    dot(j, acc);
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = ReduceAdd(acc[h]);
  }
}

// out[h][e0 .. e0+63] = inv[h] * sum_j p[h][j] v_j[e0 ..]: each value row converted once, the
// NQ x 4 accumulators in registers.
template <int NQ>
void DecodeValues(const DecodeGroup& g, const float* inv) {
  for (int32_t e0 = 0; e0 < g.d_v; e0 += 64) {
    const int32_t nc = std::min(4, (g.d_v - e0) / 16);  // 16-wide chunks in this tile
    __m512 acc[NQ][4];
    for (auto& row : acc) for (__m512& a : row) a = _mm512_setzero_ps();
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint16_t* v = g.v + j * g.v_stride + e0;
      __m512 vv[4];
      for (int c = 0; c < 4; ++c) vv[c] = c < nc ? LoadF16(v + 16 * c) : _mm512_setzero_ps();
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m512 w = _mm512_set1_ps(g.s[h * g.n_keys + j]);
        for (int c = 0; c < 4; ++c) acc[h][c] = _mm512_fmadd_ps(w, vv[c], acc[h][c]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      const __m512 iv = _mm512_set1_ps(inv[h]);
      for (int c = 0; c < nc; ++c) _mm512_storeu_ps(g.out[h] + e0 + 16 * c, _mm512_mul_ps(acc[h][c], iv));
    }
  }
}

// Vector width 16: the ops of the shared loops (attention_drivers.h).
struct Avx512Ops {
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
    for (int32_t e0 = 0; e0 < b.d_v; e0 += 64) ValueTile(b, p, ss, ulo, uhi, e0, na, inv, out, acc_in);  // masked tails
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

float SoftmaxSumAvx512(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
  return SoftmaxSumImpl(x, n, scale, softcap, sink, mx);
}
void RunDecodeAvx512(const DecodeGroup& g) { RunDecodeWith<Avx512Ops>(g); }
void RunBlockAvx512(const Block& b) { RunBlockWith<Avx512Ops>(b); }

}  // namespace zf::engine::attn

#endif  // x86

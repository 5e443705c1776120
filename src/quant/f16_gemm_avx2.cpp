// The encoders' products on F16 weights with AVX2 + FMA + F16C (f16_gemm.h; compiled for x86
// only, picked at run time by f16::Gemm): 4 tokens x 3 rows per register tile, and the F16
// helpers (softmax, GELU, rounding, K and V to transposed F16) the encoders use beside it.
#include "quant/f16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace zf::quant::f16::avx2 {
namespace {

inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

inline __m256 W8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// e^x for x <= 0 (softmax arguments): 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2], p of degree 6
// (relative error ~2e-7, below the F16 rounding the probabilities get next).
inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

}  // namespace

void SoftmaxF16(float* s, int64_t n, float scale) {
  __m256 vmx = _mm256_set1_ps(-INFINITY);
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(s + i), vs);
    _mm256_storeu_ps(s + i, v);
    vmx = _mm256_max_ps(vmx, v);
  }
  float mx = -INFINITY;
  for (; i < n; ++i) mx = std::max(mx, s[i] *= scale);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmx);
  for (float l : lanes) mx = std::max(mx, l);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(s + i), vm));
    _mm256_storeu_ps(s + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  double sum = Sum8(vsum);
  for (; i < n; ++i) sum += (s[i] = std::exp(s[i] - mx));
  const __m256 inv = _mm256_set1_ps(float(1.0 / sum));
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(s + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(s + i), inv), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; ++i) s[i] = _cvtsh_ss(_cvtss_sh(s[i] * float(1.0 / sum), _MM_FROUND_TO_NEAREST_INT));
}

void GeluF16(float* x, int64_t n, const uint16_t* table) {
  int64_t i = 0;
  alignas(16) uint16_t h[8];
  alignas(16) uint16_t g[8];
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    for (int j = 0; j < 8; ++j) g[j] = table[h[j]];
    __m256 r = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(g)));
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
    r = _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
    _mm256_storeu_ps(x + i, r);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : _cvtsh_ss(table[_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)]);
  }
}

void RoundToF16(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; ++i) x[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= n_tok; t += 4) {
    const float* a0 = a + t * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    int64_t r = 0;
    for (; r + 3 <= rows; r += 3) {
      const uint16_t* w0 = w + r * ldw;
      const uint16_t* w1 = w0 + ldw;
      const uint16_t* w2 = w1 + ldw;
      __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
      __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
      for (int64_t i = 0; i < k; i += 8) {
        const __m256 x0 = W8(w0 + i), x1 = W8(w1 + i), x2 = W8(w2 + i);
        __m256 v = _mm256_loadu_ps(a0 + i);
        c00 = _mm256_fmadd_ps(v, x0, c00); c01 = _mm256_fmadd_ps(v, x1, c01); c02 = _mm256_fmadd_ps(v, x2, c02);
        v = _mm256_loadu_ps(a1 + i);
        c10 = _mm256_fmadd_ps(v, x0, c10); c11 = _mm256_fmadd_ps(v, x1, c11); c12 = _mm256_fmadd_ps(v, x2, c12);
        v = _mm256_loadu_ps(a2 + i);
        c20 = _mm256_fmadd_ps(v, x0, c20); c21 = _mm256_fmadd_ps(v, x1, c21); c22 = _mm256_fmadd_ps(v, x2, c22);
        v = _mm256_loadu_ps(a3 + i);
        c30 = _mm256_fmadd_ps(v, x0, c30); c31 = _mm256_fmadd_ps(v, x1, c31); c32 = _mm256_fmadd_ps(v, x2, c32);
      }
      float* y0 = y + t * ldy + r;
      y0[0] = Sum8(c00); y0[1] = Sum8(c01); y0[2] = Sum8(c02);
      y0 += ldy; y0[0] = Sum8(c10); y0[1] = Sum8(c11); y0[2] = Sum8(c12);
      y0 += ldy; y0[0] = Sum8(c20); y0[1] = Sum8(c21); y0[2] = Sum8(c22);
      y0 += ldy; y0[0] = Sum8(c30); y0[1] = Sum8(c31); y0[2] = Sum8(c32);
    }
    for (; r < rows; ++r) {
      const uint16_t* w0 = w + r * ldw;
      __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
      for (int64_t i = 0; i < k; i += 8) {
        const __m256 x0 = W8(w0 + i);
        c0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i), x0, c0);
        c1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + i), x0, c1);
        c2 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + i), x0, c2);
        c3 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + i), x0, c3);
      }
      y[t * ldy + r] = Sum8(c0);
      y[(t + 1) * ldy + r] = Sum8(c1);
      y[(t + 2) * ldy + r] = Sum8(c2);
      y[(t + 3) * ldy + r] = Sum8(c3);
    }
  }
  for (; t < n_tok; ++t) {
    const float* a0 = a + t * lda;
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* w0 = w + r * ldw;
      __m256 c0 = _mm256_setzero_ps();
      for (int64_t i = 0; i < k; i += 8) c0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i), W8(w0 + i), c0);
      y[t * ldy + r] = Sum8(c0);
    }
  }
}

}  // namespace zf::quant::f16::avx2

namespace zf::quant::f16::avx2 {
namespace {

// NT tokens x NC 8-column vectors of GemmF16T (f16_gemm_avx512.cpp's TileT on 8 lanes); 4 x 3
// uses 12 accumulators.
template <int NT, int NC>
inline void TileT(int64_t k, const uint16_t* w, int64_t ldw, const float* a, int64_t lda, float* y, int64_t ldy) {
  __m256 c[NT][NC];
  for (auto& row : c)
    for (auto& v : row) v = _mm256_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    __m256 x[NC];
    for (int j = 0; j < NC; ++j) x[j] = W8(w + i * ldw + 8 * j);
    for (int q = 0; q < NT; ++q) {
      const __m256 v = _mm256_broadcast_ss(a + q * lda + i);
      for (int j = 0; j < NC; ++j) c[q][j] = _mm256_fmadd_ps(v, x[j], c[q][j]);
    }
  }
  for (int q = 0; q < NT; ++q)
    for (int j = 0; j < NC; ++j) _mm256_storeu_ps(y + q * ldy + 8 * j, c[q][j]);
}

template <int NC>
inline void ColBlockT(int64_t k, const uint16_t* w, int64_t ldw, const float* a, int64_t lda, int64_t n_tok, float* y,
                      int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= n_tok; t += 4) TileT<4, NC>(k, w, ldw, a + t * lda, lda, y + t * ldy, ldy);
  for (; t < n_tok; ++t) TileT<1, NC>(k, w, ldw, a + t * lda, lda, y + t * ldy, ldy);
}

}  // namespace

void GemmF16T(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
              float* y, int64_t ldy) {
  int64_t c = 0;
  for (; c + 24 <= cols; c += 24) ColBlockT<3>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy);
  if (cols - c == 16) ColBlockT<2>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy);
  if (cols - c == 8) ColBlockT<1>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy);
}

}  // namespace zf::quant::f16::avx2

namespace zf::quant::f16::avx2 {
namespace {

// Four 8-lane FMA chains of one weight row against N activation rows over 32-element steps, the
// chains summed as quant's AVX2 VecDotF16 sums them ((c0 + c1) + (c2 + c3), then the 8 lanes).
template <int N>
inline void DotRowExact(int64_t k, const uint16_t* w, const float* const* a, float* const* y) {
  __m256 c[N][4];
  for (auto& t : c)
    for (auto& v : t) v = _mm256_setzero_ps();
  for (int64_t i = 0; i < k; i += 32) {
    const __m256 x0 = W8(w + i), x1 = W8(w + i + 8), x2 = W8(w + i + 16), x3 = W8(w + i + 24);
    for (int t = 0; t < N; ++t) {
      c[t][0] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(a[t] + i), c[t][0]);
      c[t][1] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(a[t] + i + 8), c[t][1]);
      c[t][2] = _mm256_fmadd_ps(x2, _mm256_loadu_ps(a[t] + i + 16), c[t][2]);
      c[t][3] = _mm256_fmadd_ps(x3, _mm256_loadu_ps(a[t] + i + 24), c[t][3]);
    }
  }
  for (int t = 0; t < N; ++t) *y[t] = Sum8(_mm256_add_ps(_mm256_add_ps(c[t][0], c[t][1]), _mm256_add_ps(c[t][2], c[t][3])));
}

}  // namespace

void DotRowsF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
                float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* wr = w + r * ldw;
    int64_t t = 0;
    for (; t + 3 <= n_tok; t += 3) {
      const float* ap[3] = {a + t * lda, a + (t + 1) * lda, a + (t + 2) * lda};
      float* yp[3] = {y + t * ldy + r, y + (t + 1) * ldy + r, y + (t + 2) * ldy + r};
      DotRowExact<3>(k, wr, ap, yp);
    }
    for (; t < n_tok; ++t) {
      const float* ap[1] = {a + t * lda};
      float* yp[1] = {y + t * ldy + r};
      DotRowExact<1>(k, wr, ap, yp);
    }
  }
}

}  // namespace zf::quant::f16::avx2

namespace zf::quant::f16::avx2 {

void TransposeToF16(const float* x, int64_t ldx, int64_t rows, int64_t cols, uint16_t* dst, int64_t ldd) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      // 8 x 8 floats transposed in registers, each column then 8 F16 values in a row of dst.
      __m256 v[8], t[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(x + (r + i) * ldx + c);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        v[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        v[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        v[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        v[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int i = 0; i < 4; ++i) {
        t[i] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x31);
      }
      for (int i = 0; i < 8; ++i)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (c + i) * ldd + r), _mm256_cvtps_ph(t[i], _MM_FROUND_TO_NEAREST_INT));
    }
    for (; c < cols; ++c)
      for (int64_t i = r; i < r + 8; ++i) dst[c * ldd + i] = _cvtss_sh(x[i * ldx + c], _MM_FROUND_TO_NEAREST_INT);
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ldd + r] = _cvtss_sh(x[r * ldx + c], _MM_FROUND_TO_NEAREST_INT);
}

}  // namespace zf::quant::f16::avx2

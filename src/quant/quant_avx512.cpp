// AVX-512 (F, BW, VL, VNNI) kernels for the Q8_0 products that dominate decode (Gemma's 262k x
// 640 output projection) and prefill (every weight tile requantized to Q8_0): two 32-element
// blocks per 512-bit register and one VPDPBUSD per block pair instead of the AVX2
// maddubs + madd pair. Compiled with AVX-512 flags (file name suffix) and only called after the
// run-time check in quant.cpp. Integer parts are exact; results differ from the scalar
// reference only by float summation order.
//
// Signed products use |w| (unsigned) times a with w's sign applied: activation quants never hold
// -128, weights may (|-128| = 128 still fits the unsigned operand).
#if defined(__x86_64__) || defined(__i386__)

#include "quant/avx512_intrinsics.h"

#include <algorithm>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace zf::quant::avx512 {
namespace {

inline float H(uint16_t h) { return _cvtsh_ss(h); }

// The quants of blocks b and b+1 in one register.
inline __m512i Load2(const BlockQ8_0* x) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[0].qs));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[1].qs));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// 16 int32 lanes: lanes 0-7 sum block b's products, lanes 8-15 block b+1's.
inline __m512i Dot2(__m512i w_abs, __mmask64 w_neg, __m512i a) {
  const __m512i a_signed = _mm512_mask_sub_epi8(a, w_neg, _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w_abs, a_signed);
}

// Scale vector: s0 in lanes 0-7, s1 in lanes 8-15.
inline __m512 Scale2(float s0, float s1) {
  return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

inline float HsumF32(__m512 v) { return _mm512_reduce_add_ps(v); }

}  // namespace

float VecDotQ8_0(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const int64_t nb = n / kQK;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const __m512i w0 = Load2(x + b), w1 = Load2(x + b + 2);
    const __m512i p0 = Dot2(_mm512_abs_epi8(w0), _mm512_movepi8_mask(w0), Load2(y + b));
    const __m512i p1 = Dot2(_mm512_abs_epi8(w1), _mm512_movepi8_mask(w1), Load2(y + b + 2));
    acc0 = _mm512_fmadd_ps(Scale2(H(x[b].d) * H(y[b].d), H(x[b + 1].d) * H(y[b + 1].d)), _mm512_cvtepi32_ps(p0), acc0);
    acc1 = _mm512_fmadd_ps(Scale2(H(x[b + 2].d) * H(y[b + 2].d), H(x[b + 3].d) * H(y[b + 3].d)),
                           _mm512_cvtepi32_ps(p1), acc1);
  }
  for (; b + 2 <= nb; b += 2) {
    const __m512i w0 = Load2(x + b);
    const __m512i p0 = Dot2(_mm512_abs_epi8(w0), _mm512_movepi8_mask(w0), Load2(y + b));
    acc0 = _mm512_fmadd_ps(Scale2(H(x[b].d) * H(y[b].d), H(x[b + 1].d) * H(y[b + 1].d)), _mm512_cvtepi32_ps(p0), acc0);
  }
  float sum = HsumF32(_mm512_add_ps(acc0, acc1));
  for (; b < nb; ++b) {  // odd block count: the last block on its own
    int32_t s = 0;
    for (int i = 0; i < kQK; ++i) s += int32_t(x[b].qs[i]) * int32_t(y[b].qs[i]);
    sum += H(x[b].d) * H(y[b].d) * float(s);
  }
  return sum;
}

// Decode on Q8_0 rows: the activation's block scales are staged once as lane vectors for all
// rows; each row then costs, per block pair, its two scales, one VPDPBUSD and one FMA.
void GemvQ8_0(int64_t k, const void* w, size_t stride, int64_t rows, const void* a, float* y) {
  const int64_t nb = k / kQK;
  const auto* wbase = static_cast<const uint8_t*>(w);
  const BlockQ8_0* ab = static_cast<const BlockQ8_0*>(a);
  constexpr int64_t kMaxPairs = 256;
  if (nb > 2 * kMaxPairs || nb % 2 != 0) {
    for (int64_t r = 0; r < rows; ++r) y[r] = VecDotQ8_0(k, wbase + size_t(r) * stride, a);
    return;
  }
  const int64_t np = nb / 2;
  __m512 av[kMaxPairs];
  __m512i aq[kMaxPairs];
  for (int64_t q = 0; q < np; ++q) {
    av[q] = Scale2(H(ab[2 * q].d), H(ab[2 * q + 1].d));
    aq[q] = Load2(ab + 2 * q);
  }
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    const auto* w0 = reinterpret_cast<const BlockQ8_0*>(wbase + size_t(r) * stride);
    const auto* w1 = reinterpret_cast<const BlockQ8_0*>(wbase + size_t(r + 1) * stride);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t q = 0; q < np; ++q) {
      const __m512i x0 = Load2(w0 + 2 * q), x1 = Load2(w1 + 2 * q);
      const __m512i p0 = Dot2(_mm512_abs_epi8(x0), _mm512_movepi8_mask(x0), aq[q]);
      const __m512i p1 = Dot2(_mm512_abs_epi8(x1), _mm512_movepi8_mask(x1), aq[q]);
      acc0 = _mm512_fmadd_ps(_mm512_mul_ps(Scale2(H(w0[2 * q].d), H(w0[2 * q + 1].d)), av[q]),
                             _mm512_cvtepi32_ps(p0), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_mul_ps(Scale2(H(w1[2 * q].d), H(w1[2 * q + 1].d)), av[q]),
                             _mm512_cvtepi32_ps(p1), acc1);
    }
    y[r] = HsumF32(acc0);
    y[r + 1] = HsumF32(acc1);
  }
  for (; r < rows; ++r) y[r] = VecDotQ8_0(k, wbase + size_t(r) * stride, a);
}

bool Gemv(GgmlType t, int64_t n, const void* w, size_t stride, int64_t rows, const void* a, float* y) {
  if (t != GgmlType::Q8_0) return vnni::Gemv(t, n, w, stride, rows, a, y);  // 256-bit VNNI kernels
  GemvQ8_0(n, w, stride, rows, a, y);
  return true;
}

// Tiles of 2 weight rows x 4 tokens, two blocks per step (see the AVX2 version for the tiling).
// Block scales are staged as ready lane vectors ([s_b x8 | s_b+1 x8]): the activations' once per
// token tile, the weights' once per row pair, so the inner step is one multiply of two
// vectors instead of scalar products and broadcasts.
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
              size_t a_stride, int64_t n_tok, float* y, int64_t y_stride) {
  const int64_t nb = k / kQK;
  const auto* wbase = static_cast<const uint8_t*>(w);
  const auto* abase = static_cast<const uint8_t*>(a);
  constexpr int64_t kMaxPairs = 64;  // rows up to 4096 elements; longer rows use VecDot
  if (nb > 2 * kMaxPairs || nb % 2 != 0) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < n_tok; ++t) {
        y[t * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, abase + size_t(t) * a_stride);
      }
    }
    return;
  }
  const int64_t np = nb / 2;
  __m512 av[4][kMaxPairs];
  __m512 wv[2][kMaxPairs];
  int64_t t = 0;
  for (; t + 4 <= n_tok; t += 4) {
    const BlockQ8_0* at[4];
    for (int j = 0; j < 4; ++j) {
      at[j] = reinterpret_cast<const BlockQ8_0*>(abase + size_t(t + j) * a_stride);
      for (int64_t q = 0; q < np; ++q) av[j][q] = Scale2(H(at[j][2 * q].d), H(at[j][2 * q + 1].d));
    }
    int64_t r = 0;
    for (; r + 2 <= rows; r += 2) {
      const BlockQ8_0* wr[2];
      for (int i = 0; i < 2; ++i) {
        wr[i] = reinterpret_cast<const BlockQ8_0*>(wbase + size_t(r + i) * w_stride);
        for (int64_t q = 0; q < np; ++q) wv[i][q] = Scale2(H(wr[i][2 * q].d), H(wr[i][2 * q + 1].d));
      }
      __m512 acc[2][4];
      for (auto& row : acc) for (__m512& v : row) v = _mm512_setzero_ps();
      for (int64_t q = 0; q < np; ++q) {
        const __m512i w0 = Load2(wr[0] + 2 * q), w1 = Load2(wr[1] + 2 * q);
        const __m512i u0 = _mm512_abs_epi8(w0), u1 = _mm512_abs_epi8(w1);
        const __mmask64 n0 = _mm512_movepi8_mask(w0), n1 = _mm512_movepi8_mask(w1);
        for (int j = 0; j < 4; ++j) {
          const __m512i aq = Load2(at[j] + 2 * q);
          acc[0][j] = _mm512_fmadd_ps(_mm512_mul_ps(wv[0][q], av[j][q]), _mm512_cvtepi32_ps(Dot2(u0, n0, aq)), acc[0][j]);
          acc[1][j] = _mm512_fmadd_ps(_mm512_mul_ps(wv[1][q], av[j][q]), _mm512_cvtepi32_ps(Dot2(u1, n1, aq)), acc[1][j]);
        }
      }
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 4; ++j) y[(t + j) * y_stride + r + i] = HsumF32(acc[i][j]);
      }
    }
    for (; r < rows; ++r) {
      for (int j = 0; j < 4; ++j) y[(t + j) * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, at[j]);
    }
  }
  for (; t < n_tok; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      y[t * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, abase + size_t(t) * a_stride);
    }
  }
}

// Affine rows (unsigned 0..31 quants, see quant.h): VPDPBUSD takes the weights as the unsigned
// operand directly; the per-group min term is a float dot of m with the activation sums.
void GemmAffine(int64_t k, const AffineRows& w, int64_t rows, const void* a, size_t a_stride,
                const float* asum, int64_t n_tok, float* y, int64_t y_stride) {
  const int64_t nb = k / kQK;
  const auto* abase = static_cast<const uint8_t*>(a);
  constexpr int64_t kMaxPairs = 64;
  if (nb > 2 * kMaxPairs || nb % 2 != 0) {
    // Unusual row lengths: the plain definition.
    for (int64_t t = 0; t < n_tok; ++t) {
      const auto* at = reinterpret_cast<const BlockQ8_0*>(abase + size_t(t) * a_stride);
      for (int64_t r = 0; r < rows; ++r) {
        float sum = 0.0f;
        for (int64_t g = 0; g < nb; ++g) {
          int32_t dot = 0;
          for (int i = 0; i < kQK; ++i) dot += int32_t(w.q[r * k + g * kQK + i]) * int32_t(at[g].qs[i]);
          sum += w.d[r * nb + g] * H(at[g].d) * float(dot) + w.m[r * nb + g] * asum[t * nb + g];
        }
        y[t * y_stride + r] = sum;
      }
    }
    return;
  }
  const int64_t np = nb / 2;
  __m512 av[4][kMaxPairs];
  __m512 wv[2][kMaxPairs];
  int64_t t = 0;
  for (; t < n_tok; t += 4) {
    const int tn = int(std::min<int64_t>(4, n_tok - t));
    const BlockQ8_0* at[4];
    for (int j = 0; j < 4; ++j) {
      at[j] = reinterpret_cast<const BlockQ8_0*>(abase + size_t(t + (j < tn ? j : 0)) * a_stride);
      for (int64_t q = 0; q < np; ++q) av[j][q] = Scale2(H(at[j][2 * q].d), H(at[j][2 * q + 1].d));
    }
    for (int64_t r = 0; r < rows; r += 2) {
      const int rn = int(std::min<int64_t>(2, rows - r));
      const uint8_t* wq[2];
      for (int i = 0; i < 2; ++i) {
        const int64_t ri = r + (i < rn ? i : 0);
        wq[i] = w.q + ri * k;
        for (int64_t q = 0; q < np; ++q) wv[i][q] = Scale2(w.d[ri * nb + 2 * q], w.d[ri * nb + 2 * q + 1]);
      }
      __m512 acc[2][4];
      for (auto& row : acc) for (__m512& v : row) v = _mm512_setzero_ps();
      for (int64_t q = 0; q < np; ++q) {
        const __m512i u0 = _mm512_loadu_si512(wq[0] + 64 * q), u1 = _mm512_loadu_si512(wq[1] + 64 * q);
        for (int j = 0; j < 4; ++j) {
          const __m512i aq = Load2(at[j] + 2 * q);
          const __m512i p0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u0, aq);
          const __m512i p1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u1, aq);
          acc[0][j] = _mm512_fmadd_ps(_mm512_mul_ps(wv[0][q], av[j][q]), _mm512_cvtepi32_ps(p0), acc[0][j]);
          acc[1][j] = _mm512_fmadd_ps(_mm512_mul_ps(wv[1][q], av[j][q]), _mm512_cvtepi32_ps(p1), acc[1][j]);
        }
      }
      for (int i = 0; i < rn; ++i) {
        const float* m = w.m + (r + i) * nb;
        for (int j = 0; j < tn; ++j) {
          const float* s = asum + (t + j) * nb;
          __m512 mm = _mm512_setzero_ps();
          for (int64_t g = 0; g < nb; g += 16) {
            const __mmask16 lanes = nb - g >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (nb - g)) - 1);
            mm = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes, m + g), _mm512_maskz_loadu_ps(lanes, s + g), mm);
          }
          y[(t + j) * y_stride + r + i] = HsumF32(acc[i][j]) + HsumF32(mm);
        }
      }
    }
  }
}

}  // namespace zf::quant::avx512

#endif  // x86

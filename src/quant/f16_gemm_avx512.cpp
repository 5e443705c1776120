// f16_gemm_avx2.cpp's product with AVX-512 registers (16 lanes, 4 tokens x 4 rows per tile); the
// same F16 inputs, so the same products, summed in another order. Picked at run time when the
// CPU has AVX-512F and k is a multiple of 16.
#include "quant/avx512_intrinsics.h"  // immintrin.h without GCC 12's false maybe-uninitialized
#include "quant/f16_gemm.h"

namespace zf::quant::f16::avx512 {
namespace {

inline __m512 W16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

}  // namespace

void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= n_tok; t += 4) {
    const float* a0 = a + t * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      const uint16_t* w0 = w + r * ldw;
      __m512 c[4][4];
      for (auto& row : c)
        for (auto& v : row) v = _mm512_setzero_ps();
      for (int64_t i = 0; i < k; i += 16) {
        const __m512 x0 = W16(w0 + i), x1 = W16(w0 + ldw + i), x2 = W16(w0 + 2 * ldw + i), x3 = W16(w0 + 3 * ldw + i);
        const float* ap[4] = {a0, a1, a2, a3};
        for (int q = 0; q < 4; ++q) {
          const __m512 v = _mm512_loadu_ps(ap[q] + i);
          c[q][0] = _mm512_fmadd_ps(v, x0, c[q][0]);
          c[q][1] = _mm512_fmadd_ps(v, x1, c[q][1]);
          c[q][2] = _mm512_fmadd_ps(v, x2, c[q][2]);
          c[q][3] = _mm512_fmadd_ps(v, x3, c[q][3]);
        }
      }
      for (int q = 0; q < 4; ++q)
        for (int j = 0; j < 4; ++j) y[(t + q) * ldy + r + j] = _mm512_reduce_add_ps(c[q][j]);
    }
    for (; r < rows; ++r) {
      const uint16_t* w0 = w + r * ldw;
      __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
      for (int64_t i = 0; i < k; i += 16) {
        const __m512 x0 = W16(w0 + i);
        c0 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + i), x0, c0);
        c1 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + i), x0, c1);
        c2 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + i), x0, c2);
        c3 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + i), x0, c3);
      }
      y[t * ldy + r] = _mm512_reduce_add_ps(c0);
      y[(t + 1) * ldy + r] = _mm512_reduce_add_ps(c1);
      y[(t + 2) * ldy + r] = _mm512_reduce_add_ps(c2);
      y[(t + 3) * ldy + r] = _mm512_reduce_add_ps(c3);
    }
  }
  for (; t < n_tok; ++t) {
    const float* a0 = a + t * lda;
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* w0 = w + r * ldw;
      __m512 c0 = _mm512_setzero_ps();
      for (int64_t i = 0; i < k; i += 16) c0 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + i), W16(w0 + i), c0);
      y[t * ldy + r] = _mm512_reduce_add_ps(c0);
    }
  }
}

}  // namespace zf::quant::f16::avx512

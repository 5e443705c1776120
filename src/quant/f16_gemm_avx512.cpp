// f16_gemm_avx2.cpp's product with AVX-512 registers (16 lanes, 6 tokens x 4 rows per tile); the
// same F16 inputs, so the same products, summed in another order. Picked at run time when the
// CPU has AVX-512F; k a multiple of 8, an 8-element tail (a 72-wide attention head) taken with
// the upper lanes zero, which adds nothing to the sums.
#include "quant/avx512_intrinsics.h"  // immintrin.h without GCC 12's false maybe-uninitialized
#include "quant/f16_gemm.h"

namespace zf::quant::f16::avx512 {
namespace {

inline __m512 W16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
// 8 F16 values in the low lanes, zeros above (F16 0 converts to 0.0f).
inline __m512 W8(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

}  // namespace

namespace {

// NT tokens x NR weight rows: one 16-lane accumulator per pair over k, reduced at the end, so a
// pair's sum is the same whatever tile it falls in (tails included).
template <int NT, int NR>
inline void Tile(int64_t k, const uint16_t* w, int64_t ldw, const float* a, int64_t lda, float* y, int64_t ldy) {
  __m512 c[NT][NR];
  for (auto& row : c)
    for (auto& v : row) v = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 x[NR];
    for (int j = 0; j < NR; ++j) x[j] = W16(w + j * ldw + i);
    for (int q = 0; q < NT; ++q) {
      const __m512 v = _mm512_loadu_ps(a + q * lda + i);
      for (int j = 0; j < NR; ++j) c[q][j] = _mm512_fmadd_ps(v, x[j], c[q][j]);
    }
  }
  if (i < k) {  // k % 16 == 8: masked loads read only the 8 elements there
    __m512 x[NR];
    for (int j = 0; j < NR; ++j) x[j] = W8(w + j * ldw + i);
    for (int q = 0; q < NT; ++q) {
      const __m512 v = _mm512_maskz_loadu_ps(__mmask16(0x00FF), a + q * lda + i);
      for (int j = 0; j < NR; ++j) c[q][j] = _mm512_fmadd_ps(v, x[j], c[q][j]);
    }
  }
  for (int q = 0; q < NT; ++q)
    for (int j = 0; j < NR; ++j) y[q * ldy + j] = _mm512_reduce_add_ps(c[q][j]);
}

template <int NT>
inline void TokenBlock(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, float* y,
                       int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) Tile<NT, 4>(k, w + r * ldw, ldw, a, lda, y + r, ldy);
  for (; r < rows; ++r) Tile<NT, 1>(k, w + r * ldw, ldw, a, lda, y + r, ldy);
}

}  // namespace

namespace {

// NT tokens x NC 16-column vectors of GemmF16T: per k index NC weight vectors, each token's value
// broadcast; 6 x 4 uses 24 accumulators.
template <int NT, int NC>
inline void TileT(int64_t k, const uint16_t* w, int64_t ldw, const float* a, int64_t lda, float* y, int64_t ldy) {
  __m512 c[NT][NC];
  for (auto& row : c)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    __m512 x[NC];
    for (int j = 0; j < NC; ++j) x[j] = W16(w + i * ldw + 16 * j);
    for (int q = 0; q < NT; ++q) {
      const __m512 v = _mm512_set1_ps(a[q * lda + i]);
      for (int j = 0; j < NC; ++j) c[q][j] = _mm512_fmadd_ps(v, x[j], c[q][j]);
    }
  }
  for (int q = 0; q < NT; ++q)
    for (int j = 0; j < NC; ++j) _mm512_storeu_ps(y + q * ldy + 16 * j, c[q][j]);
}

// All tokens against NC column vectors: the columns' weights stay in L1 across the tokens.
template <int NC>
inline void ColBlockT(int64_t k, const uint16_t* w, int64_t ldw, const float* a, int64_t lda, int64_t n_tok, float* y,
                      int64_t ldy) {
  int64_t t = 0;
  for (; t + 6 <= n_tok; t += 6) TileT<6, NC>(k, w, ldw, a + t * lda, lda, y + t * ldy, ldy);
  a += t * lda, y += t * ldy;
  switch (n_tok - t) {  // the last tokens in one tile (a 32-query block: 5 x 6 + 2)
    case 5: TileT<5, NC>(k, w, ldw, a, lda, y, ldy); break;
    case 4: TileT<4, NC>(k, w, ldw, a, lda, y, ldy); break;
    case 3: TileT<3, NC>(k, w, ldw, a, lda, y, ldy); break;
    case 2: TileT<2, NC>(k, w, ldw, a, lda, y, ldy); break;
    case 1: TileT<1, NC>(k, w, ldw, a, lda, y, ldy); break;
    default: break;
  }
}

}  // namespace

void GemmF16T(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
              float* y, int64_t ldy) {
  int64_t c = 0;
  for (; c + 64 <= cols; c += 64) ColBlockT<4>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy);
  switch ((cols - c) / 16) {
    case 3: ColBlockT<3>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy); break;
    case 2: ColBlockT<2>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy); break;
    case 1: ColBlockT<1>(k, wt + c, ldw, a, lda, n_tok, y + c, ldy); break;
    default: break;
  }
}

// 6 tokens x 4 rows per tile: 24 of the 32 registers accumulate, 4 hold weights.
void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 6 <= n_tok; t += 6) TokenBlock<6>(k, w, ldw, rows, a + t * lda, lda, y + t * ldy, ldy);
  a += t * lda, y += t * ldy;
  switch (n_tok - t) {  // the last tokens in one tile, each weight load shared by them (64 = 10 x 6 + 4)
    case 5: TokenBlock<5>(k, w, ldw, rows, a, lda, y, ldy); break;
    case 4: TokenBlock<4>(k, w, ldw, rows, a, lda, y, ldy); break;
    case 3: TokenBlock<3>(k, w, ldw, rows, a, lda, y, ldy); break;
    case 2: TokenBlock<2>(k, w, ldw, rows, a, lda, y, ldy); break;
    case 1: TokenBlock<1>(k, w, ldw, rows, a, lda, y, ldy); break;
    default: break;
  }
}

}  // namespace zf::quant::f16::avx512

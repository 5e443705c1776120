// F16-weight products for the encoder's many tokens (x86 AVX2 + FMA + F16C: gemm_f16_avx2.cpp;
// AVX-512F: gemm_f16_avx512.cpp).
#pragma once

#include <cstdint>

namespace zf::speech::avx2 {

// y[t * ldy + r] = sum_i a[t * lda + i] * w[r * ldw + i] for t < n_tok, r < rows; k % 8 == 0.
void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy);
// Softmax of s[0..n) * scale in place, the results rounded to F16 (as ggml's products take them).
void SoftmaxF16(float* s, int64_t n, float scale);
// ggml's GELU through its table: x <= -10 -> 0, x >= 10 -> x, else table[F16(x)] (F16 values).
void GeluF16(float* x, int64_t n, const uint16_t* table);
// x = F16(x), element-wise (round to nearest even).
void RoundToF16(float* x, int64_t n);

}  // namespace zf::speech::avx2

namespace zf::speech::avx512 {
// avx2::GemmF16 on AVX-512F (gemm_f16_avx512.cpp); k % 16 == 0.
void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy);
}  // namespace zf::speech::avx512

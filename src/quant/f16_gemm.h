// F16-weight products for encoders' many tokens (speech/'s Whisper encoder, vision/'s SigLIP):
// every token row against every weight row in register tiles, so each weight block is loaded
// once for four tokens. x86 only (AVX2 + FMA + F16C: f16_gemm_avx2.cpp; AVX-512F:
// f16_gemm_avx512.cpp); elsewhere Available() is false and callers take their GEMV path.
// Activations come as F32 holding F16 values (ggml rounds them to F16 for F16 products), so the
// products are ggml's; only the order of the F32 sums differs.
#pragma once

#include <cstdint>

namespace zf::quant::f16 {

// True where Gemm and the avx2:: helpers run (x86 with AVX2 + FMA + F16C).
bool Available();
// y[t * ldy + r] = sum_i a[t * lda + i] * w[r * ldw + i] for t < n_tok, r < rows; any k >= 1
// (the kernels below take k % 8 == 0; Gemm adds the rest per pair). AVX-512 where quant's kernels use it (the CPU has it, ZF_NO_AVX512 unset), else AVX2. Only when Available().
void Gemm(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
          float* y, int64_t ldy);
// y[t * ldy + c] = sum_i a[t * lda + i] * wt[i * ldw + c] for t < n_tok, c < cols: the weights
// transposed (one k index per row of wt), so each step is a broadcast FMA into whole output
// vectors with no horizontal sums; the fast form for short k (attention scores over 72-wide
// heads, wt = K^T). cols % 16 == 0. AVX-512 or AVX2 as Gemm picks; only when Available().
void GemmT(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
           float* y, int64_t ldy);
// ggml's GELU (tanh form) as its CPU path computes it: a table indexed by the F16 input holding
// F16 outputs (computed in F32 with tanhf); callers take x <= -10 -> 0 and x >= 10 -> x.
const uint16_t* GeluTable();

namespace avx2 {
// Gemm's AVX2 kernel.
void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy);
// GemmT's AVX2 kernel; cols % 8 == 0.
void GemmF16T(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
              float* y, int64_t ldy);
// Softmax of s[0..n) * scale in place, the results rounded to F16 (as ggml's products take them).
void SoftmaxF16(float* s, int64_t n, float scale);
// ggml's GELU through GeluTable(): x <= -10 -> 0, x >= 10 -> x, else table[F16(x)] (F16 values).
void GeluF16(float* x, int64_t n, const uint16_t* table);
// x = F16(x), element-wise (round to nearest even).
void RoundToF16(float* x, int64_t n);
// dst[c * ldd + r] = F16(x[r * ldx + c]) for r < rows, c < cols (round to nearest even): an
// attention head's K or V as GemmT's and Gemm's transposed F16 weights.
void TransposeToF16(const float* x, int64_t ldx, int64_t rows, int64_t cols, uint16_t* dst, int64_t ldd);
// The decoders' product, exact per row: y[t * ldy + r] equals quant's AVX2 VecDotF16 of weight
// row r and activation row t (a: F16 values held as F32) bit for bit, whatever n_tok is, so one
// sequence's tokens come out the same decoded alone or batched; each weight row is read once
// per three tokens. k % 32 == 0.
void DotRowsF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
                float* y, int64_t ldy);
}  // namespace avx2

namespace avx512 {
// avx2::GemmF16 on AVX-512F; k % 8 == 0.
void GemmF16(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
             float* y, int64_t ldy);
// GemmT's AVX-512 kernel; cols % 16 == 0.
void GemmF16T(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
              float* y, int64_t ldy);
}  // namespace avx512

}  // namespace zf::quant::f16

// Softmax over one row of attention scores, as ggml's soft_max computes it: x * scale,
// exp(x - max) with the sum in double, then times 1 / sum (x86: AVX2 + FMA, softmax_avx2.cpp;
// AVX-512, softmax_avx512.cpp).
#pragma once

#include <cstdint>

namespace zf::vision {

void SoftmaxRow(float* s, int64_t n, float scale);  // portable
// The softmax's numerators: s[j] = exp(s[j] * scale - max) in place; returns their sum (in
// double), for callers that divide later (attention scales each P x V row once instead of every
// probability). The fastest kernel this CPU has (AVX-512 unless ZF_NO_AVX512, AVX2 + FMA, or
// portable; the vector kernels' exp within ~2e-7 of expf).
double SoftmaxNumerators(float* s, int64_t n, float scale);

namespace avx2 {
void SoftmaxRow(float* s, int64_t n, float scale);           // call only with AVX2 + FMA
double SoftmaxNumerators(float* s, int64_t n, float scale);  // call only with AVX2 + FMA
}  // namespace avx2

namespace avx512 {
double SoftmaxNumerators(float* s, int64_t n, float scale);  // call only with AVX-512F
}  // namespace avx512

}  // namespace zf::vision

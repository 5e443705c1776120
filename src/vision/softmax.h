// Softmax over one row of attention scores, as ggml's soft_max computes it: x * scale,
// exp(x - max) with the sum in double, then times 1 / sum (x86: AVX2 + FMA, softmax_avx2.cpp).
#pragma once

#include <cstdint>

namespace zf::vision {

void SoftmaxRow(float* s, int64_t n, float scale);  // portable

namespace avx2 {
void SoftmaxRow(float* s, int64_t n, float scale);  // call only with AVX2 + FMA
}  // namespace avx2

}  // namespace zf::vision

// Rows of the CPU KV cache in ggml's Q8_0 / Q4_0 blocks (quant/blocks.h): the store-side
// quantizers. They round as ggml's reference quantize_row_q8_0_ref / quantize_row_q4_0_ref do
// (scalar, so a row's bytes are the same on every CPU: the prefix cache and state files carry
// them between machines). Thread-safe (pure functions).
#pragma once

#include <cstdint>

namespace zf::engine::kvq {

// n floats (a multiple of 32) into n / 32 blocks of 34 bytes: d = max|x| / 127, q = round(x / d).
void QuantizeQ8_0(const float* x, void* dst, int64_t n);
// n floats (a multiple of 32) into n / 32 blocks of 18 bytes: m = the element of largest
// magnitude (its sign kept), d = m / -8, q = min(15, trunc(x / d + 8.5)); x[j] in the low nibble
// of byte j, x[j + 16] in its high nibble.
void QuantizeQ4_0(const float* x, void* dst, int64_t n);

}  // namespace zf::engine::kvq

// Rows of the CPU KV cache in ggml's Q8_0 / Q4_0 blocks (quant/blocks.h): the store-side
// quantizers. They round as ggml's reference quantize_row_q8_0_ref / quantize_row_q4_0_ref do
// (scalar, so a row's bytes are the same on every CPU: the prefix cache and state files carry
// them between machines). Thread-safe (pure functions).
#pragma once

#include <cstdint>

#include "engine/kv_cache.h"

namespace zf::engine::kvq {

// n floats (a multiple of 32) into n / 32 blocks of 34 bytes: d = max|x| / 127, q = round(x / d).
void QuantizeQ8_0(const float* x, void* dst, int64_t n);
// n floats (a multiple of 32) into n / 32 blocks of 18 bytes: m = the element of largest
// magnitude (its sign kept), d = m / -8, q = min(15, trunc(x / d + 8.5)); x[j] in the low nibble
// of byte j, x[j + 16] in its high nibble.
void QuantizeQ4_0(const float* x, void* dst, int64_t n);

// Each 32-element group of x[0..n) (n a multiple of 32) times the orthonormal Walsh-Hadamard
// matrix H (Sylvester order, scaled by 1/sqrt(32); H = H^T = H^-1), in place. A quantized cache
// stores K and V rows rotated so that one outlier channel's energy spreads over its block
// instead of setting the block's scale alone (llama.cpp rotates its quantized KV cache too):
// Q is rotated the same way before its dot products (q.k is unchanged), and an output row,
// a weighted sum of rotated V rows, is rotated back. Groups are the quantization blocks, so they
// never straddle heads (head sizes are a multiple of 32).
void Rotate32(float* x, int64_t n);
// True for the cache types whose rows are stored rotated (Q8_0, Q4_0).
inline bool Rotated(KvType t) { return t == KvType::kQ8_0 || t == KvType::kQ4_0; }

}  // namespace zf::engine::kvq

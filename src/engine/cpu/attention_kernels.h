// Prefill attention on a block of query rows as two small GEMMs: S = Q K^T (K stored
// transposed), a masked softmax per row, then O = P V. Scalar reference + AVX-512 version.
//
// Why: one (token, head) at a time, every key row costs a dot-product call with a horizontal
// sum and every value row an AXPY call; with up to kAttnRows query rows sharing each K/V load
// in register tiles, the products run at FMA throughput. Keys that no row of the block can see
// (outside the causal limit or the sliding window) are not visited at all.
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>

namespace zf::engine::attn {

constexpr int32_t kAttnRows = 16;  // query rows per block (a multiple of the 4-row tiles)
constexpr int32_t kKeyPad = 64;    // readable (zero) floats past the last key of each K^T row

// One block of query rows against keys [0, n_keys) of one KV head (indices relative to the
// block's first key).
struct Block {
  const float* q;        // [kAttnRows][d_k] (rows past `rows` readable, any finite value)
  int32_t rows;          // 1..kAttnRows
  int32_t d_k, d_v;
  const float* kt;       // kt[d * kt_stride + j] = element d of key j; kKeyPad zeros past n_keys
  int64_t kt_stride;
  const float* v;        // v[j * v_stride + e] = element e of value j
  int64_t v_stride;
  int32_t n_keys;
  const int32_t* lo;     // [rows] first visible key of each row (inclusive)
  const int32_t* hi;     // [rows] last visible key of each row (inclusive), lo <= hi < n_keys
  float scale;           // applied to the scores before the softcap
  float softcap;         // > 0: s = softcap * tanh(s / softcap)
  float* s;              // scratch: kAttnRows * ScoreStride(n_keys) floats
  float* const* out;     // [rows] output rows of d_v floats: softmax(S) V
};

// Floats per score row: n_keys rounded up to the 64-key tiles, plus one tile because tiles
// start at a row's first visible key rounded down to 16.
inline int64_t ScoreStride(int32_t n_keys) { return (int64_t{n_keys} + kKeyPad - 1) / kKeyPad * kKeyPad + kKeyPad; }

// Runs the block with the fastest kernel this CPU has.
void RunBlock(const Block& b);
// True when RunBlock has a SIMD kernel here (otherwise the per-row path is faster).
bool HasFastBlock();

void RunBlockRef(const Block& b);
#if defined(__x86_64__) || defined(__i386__)
void RunBlockAvx512(const Block& b);  // attention_avx512.cpp; needs AVX-512 F
#endif

}  // namespace zf::engine::attn

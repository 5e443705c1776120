// Attention kernels of the CPU engine, scalar reference + AVX-512, AVX2 and NEON versions of each.
//
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

// Query rows per block (a multiple of the 4-row tiles). A block reads its keys' K^T and V from
// memory once (key chunks, attention_drivers.h), so more rows per block cut that traffic: 64
// against 16 took Gemma 3's fast pp16384 from 110 to 81 s of CPU time.
constexpr int32_t kAttnRows = 64;
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
  const float* sink = nullptr;  // [rows] each row's sink logit (AttentionParams::sinks), or none
};

// Floats per score row: n_keys rounded up to the 64-key tiles, plus one tile because tiles
// start at a row's first visible key rounded down to 16.
// (Internal linkage: files compiled for different ISAs include this.)
namespace {
inline int64_t ScoreStride(int32_t n_keys) { return (int64_t{n_keys} + kKeyPad - 1) / kKeyPad * kKeyPad + kKeyPad; }
}  // namespace

// Runs the block with the fastest kernel this CPU has.
void RunBlock(const Block& b);
// True when RunBlock has a SIMD kernel here (otherwise the per-row path is faster).
bool HasFastBlock();

void RunBlockRef(const Block& b);
#if defined(__x86_64__) || defined(__i386__)
void RunBlockAvx512(const Block& b);  // attention_avx512.cpp; needs AVX-512 F
void RunBlockAvx2(const Block& b);    // attention_avx2.cpp; needs AVX2 + FMA
#endif
#if defined(__aarch64__)
void RunBlockAsimd(const Block& b);   // attention_asimd.cpp; every aarch64 CPU
#endif

// Decode attention (one new token) for up to kDecodeHeads query heads that share one KV head,
// reading the F16 cache in place: each key and value row is converted once and serves every
// head of the group, and the softmax runs on vectors. Per (token, head) with a dot-product call
// per key and a conversion + AXPY call per value, the calls cost more than the arithmetic at
// head sizes of 64-256 (measured 12% of SmolLM2's decode at 2 threads).
constexpr int32_t kDecodeHeads = 4;

// A partial softmax over one block of keys (decode split by KV blocks at long depth): the
// largest score and the sum of exp(s - max); the output row then holds sum_j exp(s_j - max) v_j,
// unnormalized, and CombinePartials folds the blocks. A sink joins only in CombinePartials.
struct Partial {
  float max, sum;
};

struct DecodeGroup {
  const float* q;         // [n_q][d_k], already rounded to F16 values (as the reference does)
  int32_t n_q;            // 1..kDecodeHeads
  int32_t d_k, d_v;
  const uint16_t* k;      // key j (F16) at k + j * k_stride, j in [0, n_keys)
  int64_t k_stride;
  const uint16_t* v;      // value j (F16) at v + j * v_stride
  int64_t v_stride;
  int32_t n_keys;         // >= 1: every key is visible (the caller applies window and causality)
  float scale;            // applied to the scores before the softcap
  float softcap;          // > 0: s = softcap * tanh(s / softcap)
  float* s;               // scratch: n_q * n_keys floats
  float* const* out;      // [n_q] output rows of d_v floats
  const float* sink = nullptr;  // [n_q] each head's sink logit (AttentionParams::sinks), or none
  Partial* part = nullptr;      // [n_q] set: a partial softmax (sink ignored), out unnormalized
};

void RunDecode(const DecodeGroup& g);
bool HasFastDecode();
void RunDecodeRef(const DecodeGroup& g);
#if defined(__x86_64__) || defined(__i386__)
void RunDecodeAvx512(const DecodeGroup& g);  // needs AVX-512 F + F16C; d_k, d_v multiples of 16
void RunDecodeAvx2(const DecodeGroup& g);    // needs AVX2 + FMA + F16C; d_k, d_v multiples of 8
#endif
#if defined(__aarch64__)
void RunDecodeAsimd(const DecodeGroup& g);   // every aarch64 CPU; d_k a multiple of 8, d_v of 4
#endif

// Exact prefill on staged K/V: a tile of query rows (token, head) of one KV group, each over
// its own keys [lo, hi], with the bits of the decode kernel (RunDecode on that row's keys, Q
// rounded to F16 values, K/V the F16 cache's values in F32). Per key, a lane's FMA chain over
// the head dimensions and the 16 lanes' sum in ReduceAdd's pairs are computed for 16 keys at once
// from K^T (vertical adds, no horizontal sums), each K^T and V load serving several rows; each
// row's softmax and value chains are the decode kernel's (its own keys, in order from zero).
constexpr int32_t kExactRows = 32;  // rows per tile at most

struct ExactTile {
  const float* q;        // [rows][d_k], already rounded to F16 values
  int32_t rows;          // 1..kExactRows
  int32_t d_k, d_v;      // multiples of 16
  const float* kt;       // K in panels of 16 keys: element d of key j at kt[(j / 16) * kt_stride +
  int64_t kt_stride;     // d * 16 + j % 16] (a panel contiguous); zero past the last key
  const float* v;        // v[j * v_stride + e] = element e of value j
  int64_t v_stride;
  const int32_t* lo;     // [rows] first key of each row
  const int32_t* hi;     // [rows] last key of each row (inclusive), lo <= hi
  float scale;           // as DecodeGroup
  float softcap;
  float* s;              // scratch: rows * ss floats
  int64_t ss;            // >= last - (first & ~15) + 1 rounded up to 16 (first, last: the rows' extreme keys)
  float* const* out;     // [rows] output rows of d_v floats
  const float* sink = nullptr;  // [rows] each row's sink logit, or none
  Partial* part = nullptr;      // [rows] set: partial softmaxes (DecodeGroup::part's), out unnormalized
};

// True when RunExactTile has a kernel here (the decode kernel it matches is AVX-512's).
bool HasExactTile();
void RunExactTile(const ExactTile& t);
#if defined(__x86_64__) || defined(__i386__)
void RunExactTileAvx512(const ExactTile& t);  // attention_exact_avx512.cpp; needs AVX-512 F
#endif

// Decode split by KV blocks: at n_keys >= kSplitMinKeys a (token, head)'s keys go in blocks of
// kSplitKeys (counted from its first visible key) whose partial softmaxes are folded in block
// order, on every path (one token, prefill rows, batched rows) and for any thread count, so
// the bits depend on the position only. Below it, one softmax over all keys (as before).
constexpr int32_t kSplitKeys = 256;
constexpr int32_t kSplitMinKeys = 1024;
inline int32_t SplitBlocks(int32_t n_keys) {
  return n_keys >= kSplitMinKeys ? (n_keys + kSplitKeys - 1) / kSplitKeys : 1;
}
// out[e] = (sum_c exp(m_c - M) o_c[e]) / (sum_c exp(m_c - M) l_c + exp(sink - M)), M the largest
// of the blocks' maxima and the sink: block c's partial part[c * part_stride] and unnormalized
// row outs + c * out_stride, folded in block order (a fixed order: the same bits however the
// blocks were computed). sink: -INFINITY for none.
void CombinePartials(const Partial* part, int64_t part_stride, const float* outs, int64_t out_stride, int32_t n,
                     int32_t d_v, float sink, float* out);

// The scalar references' softmax of scores s[0, n) whose max is mx: exp(s - max) in place;
// returns 1 / sum (a sink, one logit or none, joins the max and the sum), or with part set
// stores {max, sum} there (sink ignored) and returns 1.
float SoftmaxRef(float* s, int32_t n, float mx, const float* sink, Partial* part);

// The vector softmaxes of the decode kernels, shared with attention_quant_*: exp(scaled x -
// max) in place; returns the sum (with exp(sink - max) for a finite sink) and the max in *mx.
#if defined(__x86_64__) || defined(__i386__)
float SoftmaxSumAvx512(float* x, int64_t n, float scale, float softcap, float sink, float* mx);
float SoftmaxSumAvx2(float* x, int64_t n, float scale, float softcap, float sink, float* mx);
#endif
#if defined(__aarch64__)
float SoftmaxSumAsimd(float* x, int64_t n, float scale, float softcap, float sink, float* mx);
#endif

}  // namespace zf::engine::attn

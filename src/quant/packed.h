// Row-interleaved ("packed") weight layout for the decode product (one token, matrix x vector).
//
// Why: a GGUF Q8_0 row is a sequence of 34-byte blocks, so a one-row-at-a-time GEMV pays, per
// 32 weights, two scalar F16 scale conversions, a sign fix-up and a horizontal reduction; on
// Gemma 3's 262k x 640 output projection that made decode compute-bound at ~10 GB/s while one
// core streams ~40 GB/s. Here 16 rows sit side by side: one VPDPBUSD adds 4 weights x 16 rows,
// lane j accumulating row j, and the 16 rows' block scales load as one vector. Same bytes per
// weight as the file (34 per 32), so memory and bandwidth are unchanged.
//
// Q8x16 layout, one group per 16 consecutive rows (the last group zero-padded), groups
// contiguous, each GroupBytes(k) long (a multiple of 64):
//   scales: nb x 16 F16 (block b's scales of rows 0..15), zero-padded to a multiple of 64 bytes;
//   quants: nb x 512 bytes; in block b, chunk c (elements 4c..4c+3) holds rows 0..15 x 4 bytes.
// Quants are stored as unsigned (q + 128) so they are VPDPBUSD's unsigned operand; the dot
// product subtracts 128 x (sum of the activation block's quants), which is exact in int32.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace zf::quant {

constexpr int64_t kPackRows = 16;

// True when a packed layout exists for weight type t and this CPU has the kernel that makes it
// pay (AVX-512 VNNI); the scalar kernel below is only the reference for tests.
bool PackedGemvAvailable(GgmlType t);

// Bytes of one 16-row group of a packed matrix with rows of k elements (k % 32 == 0).
size_t PackedGroupBytes(GgmlType t, int64_t k);
inline int64_t PackedGroups(int64_t rows) { return (rows + kPackRows - 1) / kPackRows; }

// Packs rows [0, n) (n <= 16) of a Q8_0 matrix (row stride in bytes) into one group.
void PackQ8_0Group(const void* src, size_t src_stride, int64_t k, int64_t n, void* dst_group);

// Decode product on a packed Q8_0 matrix: y[r] = dot(weight row r, a) for the rows of groups
// [g0, g1) (y indexed from group g0's first row); `rows` is the matrix's row count, so the
// padding rows of the last group are not written. a: one Q8_0 activation row of k elements.
void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y);

namespace ref {
void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y);
}  // namespace ref

#if defined(__x86_64__) || defined(__i386__)
namespace avx512 {
void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y);
}  // namespace avx512
#endif

}  // namespace zf::quant

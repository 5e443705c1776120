// Row-interleaved ("packed") weight layouts for the decode product (one token, matrix x vector).
//
// Why: a GGUF row is a sequence of small blocks (34 bytes per 32 weights for Q8_0), so a
// one-row-at-a-time GEMV pays, per 32 weights, scalar F16 scale conversions, nibble/sign
// fix-ups and a horizontal reduction; on Gemma 3's 262k x 640 output projection that made
// decode compute-bound at ~10 GB/s while one core streams ~40 GB/s. Here 16 rows sit side by
// side: one VPDPBUSD adds 4 weights x 16 rows (lane j accumulates row j) and the 16 rows' block
// scales load as one vector. Every layout has the file's bytes per weight (plus the padding
// below), and packing is exactly invertible (UnpackGroup), so the prefill GEMM reads its tiles
// from the packed copy and the file's copy need not stay resident.
// AVX2-only CPUs (packed_avx2.cpp) read each 64-byte chunk as two 256-bit halves (rows 0-7,
// 8-15) with VPMADDUBSW + VPMADDWD in place of VPDPBUSD: same layout, same bytes.
//
// Types: the 32-element block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the codebook formats
// IQ4_NL and MXFP4 (Q4_0's layout; MXFP4's d field holds the 16 rows' E8M0 bytes in the first
// 16 of its 32 bytes per block: 288 bytes per 16 x 32 weights instead of the file's 272), and
// Q4_K, Q6_K, IQ4_XS (below).
// One group per 16 consecutive rows (the last one zero-padded), groups contiguous,
// GroupBytes(t, k) each (a multiple of 64). A group is a sequence of units, each holding its
// blocks' fields side by side, so a kernel reads the group front to back as one stream
// (packed_layout.h has the offsets and the measurement behind this). 32-element formats: units
// of 2 blocks (an odd block count leaves the last unit's second block as zero padding):
//   d:      2 x 16 F16 scales (block j of the unit: rows 0..15);
//   m:      2 x 16 F16 mins (Q4_1, Q5_1);
//   hmask:  2 x 8 x 64-bit masks (Q5_0, Q5_1): mask v of a block has bit 4r+i set when
//           element 4v+i of row r has its fifth bit set;
//   quants: Q8_0: 2 x 512 bytes; a block's chunk c (elements 4c..4c+3): rows 0..15 x 4 bytes,
//           stored as q + 128 (unsigned, VPDPBUSD's unsigned operand; the kernel subtracts
//           128 x the activation block's quant sum, exact in int32);
//           4/5-bit types: 2 x 256 bytes; a block's chunk c (0..3): rows 0..15 x the 4 file
//           bytes qs[4c..4c+3] (low nibbles: elements 4c+i, high nibbles: 16+4c+i).
//
// Q4_K (rows a multiple of 256): one unit per 256-element super-block: d and dmin (16 F16
// each), the 8 sub-block scales and the 8 mins unpacked from their 12-byte 6-bit encoding (u8,
// sub-block j: rows 0..15), and 2048 quant bytes: chunk 8c+i holds rows 0..15 x the file bytes
// qs[32c+4i..32c+4i+3] (low nibbles: sub-block 2c, high: 2c+1). 148 bytes per 256 weights and
// row instead of 144; the kernel then needs no bit twiddling for the scales.
// Q6_K: one unit per super-block: d (16 F16), 32 bytes of padding, 16 x 16 int8 scales, then
// the low-nibble and high-bit vectors (packed.cpp, PackQ6KGroup).
// IQ4_XS (rows a multiple of 256): one unit per super-block: d (16 F16), 32 bytes of padding,
// the 8 sub-block scales as signed int8 (ls - 32, sub-block j: rows 0..15), and 2048 quant
// bytes: chunk 4j+c holds rows 0..15 x the file bytes qs[16j+4c..16j+4c+3], so each sub-block
// is an IQ4_NL block's quants (low nibbles elements 4c+i, high 16+4c+i). 140 bytes per 256
// weights and row instead of 136.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/ggml_types.h"

namespace zf::quant {

constexpr int64_t kPackRows = 16;

// True for the types above.
bool IsPackable(GgmlType t);
// True when t is packable and this CPU has a kernel that makes the layout pay (AVX-512 VNNI,
// AVX2 + FMA + F16C, or any aarch64 CPU; ZF_NO_AVX512 falls back to the AVX2 one, ZF_NO_NEON
// to the scalar path).
// The scalar kernel is the reference for tests, not a fast path.
bool PackedGemvAvailable(GgmlType t);

// Bytes of one 16-row group of a packed matrix with rows of k elements (k % 32 == 0); 0 for
// types that are not packable.
size_t PackedGroupBytes(GgmlType t, int64_t k);
inline int64_t PackedGroups(int64_t rows) { return (rows + kPackRows - 1) / kPackRows; }

// Packs rows [0, n) (n <= 16) of a matrix of type t (row stride in bytes) into one group.
void PackDecodeGroup(GgmlType t, const void* src, size_t src_stride, int64_t k, int64_t n, void* dst_group);
// The exact inverse: rows [0, n) of a group back in the file's block format (row stride in bytes).
void UnpackDecodeGroup(GgmlType t, const void* group, int64_t k, int64_t n, void* dst, size_t dst_stride);

// Decode product: y[r] = VecDot(t, k, weight row r, a) for the rows of groups [g0, g1) (y
// indexed from group g0's first row); `rows` is the matrix's row count, so padding rows of the
// last group are not written. a: one activation row in VecDotType(t) (Q8_0, Q8_1 or Q8_K).
void GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);

// Batched decode (several sequences' next tokens against one weight): for i < n,
// y[i][r] = exactly (bit for bit) what GemvPacked(t, k, packed, g0, g1, rows, a[i], y[i]) writes.
// Batch invariance: a sequence's result must not depend on the other rows in the batch, so a
// kernel may share weight loads and unpacking across the rows but must reduce each row in
// GemvPacked's order. The weights are read from memory once per group for all n rows.
void GemvPackedMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                     const void* const* a, float* const* y, int32_t n);

// One row of a packed matrix dequantized (the embedding lookup of a packed, tied output).
void DequantizePackedRow(GgmlType t, const void* packed, int64_t k, int64_t row, float* dst);

namespace ref {
// Unpacks each group and calls the scalar VecDot per row.
void GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
}  // namespace ref

#if defined(__x86_64__) || defined(__i386__)
namespace avx512 {
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q4_K, Q6_K, IQ4_XS; false for other types. Only
// when CpuHasAvx512Vnni().
bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
// GemvPackedMulti for the same types; false for other types.
bool GemvPackedMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                     const void* const* a, float* const* y, int32_t n);
}  // namespace avx512
namespace avx2 {
// The same types on AVX2 + FMA + F16C (packed_avx2.cpp). Only when CpuHasAvx2Fma16().
bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
// GemvPackedMulti for the same types; false for other types.
bool GemvPackedMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                     const void* const* a, float* const* y, int32_t n);
}  // namespace avx2
#endif
#if defined(__aarch64__)
namespace neon {
// The same types with the ARMv8.2 dot product (packed_neon.cpp). Only when CpuHasNeonDotprod().
bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
}  // namespace neon
namespace asimd {
// The same kernels on baseline NEON (packed_asimd.cpp): every aarch64 CPU.
bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y);
}  // namespace asimd
#endif

}  // namespace zf::quant

// Internal: region offsets of the packed group layout described in packed.h, shared by the
// packing code and the kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace zf::quant {

struct PackedLayout {
  int64_t nb = 0;          // 32-element blocks per row
  bool has_min = false;    // Q4_1, Q5_1
  bool has_high = false;   // Q5_0, Q5_1
  bool eight_bit = false;  // Q8_0
  int32_t offset = 0;      // Q4_0: 8, Q5_0: 16 (w = d * (q - offset)); 0 otherwise
  size_t block_bytes = 0;  // the file's bytes per block
  size_t m_off = 0, h_off = 0, q_off = 0, group = 0;  // region offsets and group size (bytes)
  size_t q_block = 0;      // quant bytes per block and 16 rows (512 or 256)
  // Q4_K: nb counts 256-element super-blocks; d, dmin (F16) and the unpacked 6-bit sub-block
  // scales and mins (u8, 8 per super-block) each have a region; quants 2048 bytes per block.
  bool q4_k = false;
  size_t dmin_off = 0, sc_off = 0, mn_off = 0;
  // Q6_K: nb counts super-blocks; d (F16), the 16 int8 scales (sub-block j: rows 0..15),
  // low-nibble vectors (2048 bytes) and high-bit vectors (1024 bytes), see packed.h.
  bool q6_k = false;
  size_t qh_off = 0;
};

inline size_t Pad64(size_t n) { return (n + 63) / 64 * 64; }

// valid == false for types that are not packable.
inline PackedLayout GetPackedLayout(GgmlType t, int64_t k, bool* valid) {
  PackedLayout l;
  *valid = true;
  switch (t) {
    case GgmlType::Q8_0: l.eight_bit = true; l.block_bytes = 34; break;
    case GgmlType::Q4_0: l.offset = 8; l.block_bytes = 18; break;
    case GgmlType::Q4_1: l.has_min = true; l.block_bytes = 20; break;
    case GgmlType::Q5_0: l.has_high = true; l.offset = 16; l.block_bytes = 22; break;
    case GgmlType::Q5_1: l.has_min = true; l.has_high = true; l.block_bytes = 24; break;
    case GgmlType::Q4_K: {
      if (k % 256 != 0) break;
      l.q4_k = true;
      l.block_bytes = 144;
      l.nb = k / 256;
      const size_t nsb = size_t(l.nb);
      l.q_block = 2048;
      l.dmin_off = Pad64(nsb * 32);
      l.sc_off = l.dmin_off + Pad64(nsb * 32);
      l.mn_off = l.sc_off + nsb * 128;
      l.q_off = l.mn_off + nsb * 128;
      l.group = l.q_off + nsb * l.q_block;
      return l;
    }
    case GgmlType::Q6_K: {
      if (k % 256 != 0) break;
      l.q6_k = true;
      l.block_bytes = 210;
      l.nb = k / 256;
      const size_t nsb = size_t(l.nb);
      l.q_block = 2048;
      l.sc_off = Pad64(nsb * 32);
      l.q_off = l.sc_off + nsb * 256;
      l.qh_off = l.q_off + nsb * 2048;
      l.group = l.qh_off + nsb * 1024;
      return l;
    }
    default: *valid = false; return l;
  }
  if (t == GgmlType::Q4_K || t == GgmlType::Q6_K) {  // a row length the super-blocks do not divide
    *valid = false;
    return l;
  }
  l.nb = k / 32;
  const size_t nb = size_t(l.nb);
  l.q_block = l.eight_bit ? 512 : 256;
  size_t off = Pad64(nb * 32);                        // d
  l.m_off = off;
  if (l.has_min) off += Pad64(nb * 32);               // m
  l.h_off = off;
  if (l.has_high) off += nb * 64;                     // 8 masks of 8 bytes per block
  l.q_off = off;
  l.group = off + nb * l.q_block;
  return l;
}

// One activation row of the 32-element formats staged for the packed GEMV kernels (AVX-512
// and AVX2), blocks [b0, b0 + n) at a time: quants as 8 dwords per block (the kernels
// broadcast 4 bytes at a time), block scales as floats, the Q8_1 sums, and the integer
// correction -offset x (sum of the block's quants) for the fixed-offset formats (0 otherwise).
// Portable code (packed.cpp): the kernels' ISA flags do not reach it.
constexpr int64_t kStagedBlocks = 128;  // rows up to 4096 elements in one pass
struct StagedActivations {
  alignas(64) int32_t q[kStagedBlocks * 8];
  alignas(64) float d[kStagedBlocks];
  alignas(64) float s[kStagedBlocks];
  alignas(64) int32_t corr[kStagedBlocks];
};
// a: a Q8_0 row (qs at byte 2) or, with q8_1, a Q8_1 row (qs at byte 4); n <= kStagedBlocks.
void StageActivations(const uint8_t* a, bool q8_1, int64_t b0, int64_t n, int32_t offset, StagedActivations* st);

}  // namespace zf::quant

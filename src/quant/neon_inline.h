// Internal: NEON helpers shared by the aarch64 kernels (packed_neon.cpp,
// tile_from_decode_neon.cpp, quant_asimd.cpp). Baseline Advanced SIMD only; include only from
// files compiled for aarch64.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace zf::quant::neon {

// Byte j = 0x10 where bit 16v + j of a chunk's 64-bit fifth-bit mask is set (packed.h: bit j
// belongs to byte j of the 64-byte chunk), for the chunk's vector v (bytes 16v..16v+15): mask
// bytes 2v and 2v+1 spread over 8 lanes each, tested against 1, 2, ..., 128.
inline uint8x16_t FifthBits(uint64_t mask, int v) {
  static const uint8_t kSpread[4][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                         {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
                                         {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
                                         {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7}};
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bytes = vqtbl1q_u8(vreinterpretq_u8_u64(vdupq_n_u64(mask)), vld1q_u8(kSpread[v]));
  return vandq_u8(vtstq_u8(bytes, vld1q_u8(kBit)), vdupq_n_u8(0x10));
}

// 4 F16 values as floats.
inline float32x4_t F16x4(const void* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p))));
}

}  // namespace zf::quant::neon

// Internal: NEON helpers shared by the aarch64 kernels (packed_neon.inc, gemm_neon.inc,
// dot_q8_neon.inc, tile_from_decode_asimd.cpp, quant_asimd.cpp, codebook_asimd.cpp and the
// engine's attention_*asimd.cpp). Include only from files compiled for aarch64.
// Internal linkage (unnamed namespace): the including files are compiled for different
// -march levels, and one file's copy must never stand in for another's.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace zf::quant {
namespace {

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

// An int32 accumulator of 4 rows' dot products, fed 2 x 4 weights x 4 rows at a time:
// DotLane2 adds w0 . (the 4 activation quants in lane kLane0 of x0) and w1 . (lane kLane1 of
// x1), each w a 16-byte vector of 4 rows x 4 weights. With the ARMv8.2 dot product that is two
// SDOT by lane. Without it (the same kernels compiled for baseline NEON, *_asimd.cpp:
// Cortex-A53/A72, Raspberry Pi 3/4, Graviton 1) each half of the rows is a widening multiply
// and a widening multiply-add (int16), then a pairwise add-accumulate into two int32 partial
// sums per row, folded by DotSum: 6 instructions, exact while each pair of products fits
// int16, which holds for int8 weights against activation quants in [-127, 127], what the
// quantizers produce (2 x 128 x 127 = 32512). DotInit(c) starts every row at c.
#if defined(__ARM_FEATURE_DOTPROD)
struct DotAcc {
  int32x4_t s;
};
inline DotAcc DotInit(int32_t c) { return {vdupq_n_s32(c)}; }
template <int kLane0, int kLane1>
inline void DotLane2(DotAcc& a, int8x16_t w0, int8x16_t x0, int8x16_t w1, int8x16_t x1) {
  a.s = vdotq_laneq_s32(vdotq_laneq_s32(a.s, w0, x0, kLane0), w1, x1, kLane1);
}
inline int32x4_t DotSum(const DotAcc& a) { return a.s; }
#else
struct DotAcc {
  int32x4_t lo, hi;  // rows 0-1 and 2-3, two partial sums each
};
inline DotAcc DotInit(int32_t c) {
  const int32x4_t v = vreinterpretq_s32_u64(vdupq_n_u64(uint32_t(c)));  // c, 0, c, 0
  return {v, v};
}
template <int kLane0, int kLane1>
inline void DotLane2(DotAcc& a, int8x16_t w0, int8x16_t x0, int8x16_t w1, int8x16_t x1) {
  const int8x16_t q0 = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x0), kLane0));
  const int8x16_t q1 = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x1), kLane1));
  const int16x8_t lo = vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(q0)), vget_low_s8(w1), vget_low_s8(q1));
  const int16x8_t hi = vmlal_high_s8(vmull_high_s8(w0, q0), w1, q1);
  a.lo = vpadalq_s16(a.lo, lo);
  a.hi = vpadalq_s16(a.hi, hi);
}
inline int32x4_t DotSum(const DotAcc& a) { return vpaddq_s32(a.lo, a.hi); }
#endif
inline DotAcc DotZero() { return DotInit(0); }

// The 32 products of two 32-element int8 blocks given as 16-byte halves (x0 . y0 + x1 . y1) in 4
// int32 lanes, exact. With the ARMv8.2 dot product two SDOT; without it the products of
// elements i and i + 16 are added in int16 (a widening multiply and multiply-add), then
// pairwise into int32: exact while each such pair fits int16, which holds for one side in
// [-128, 127] against the other in [-127, 127] (2 x 128 x 127 = 32512): file weights against
// activation quants or KV rows, which the quantizers keep in [-127, 127].
inline int32x4_t Dot32(int8x16_t x0, int8x16_t x1, int8x16_t y0, int8x16_t y1) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), x0, y0), x1, y1);
#else
  const int16x8_t p0 = vmlal_s8(vmull_s8(vget_low_s8(x0), vget_low_s8(y0)), vget_low_s8(x1), vget_low_s8(y1));
  const int16x8_t p1 = vmlal_high_s8(vmull_high_s8(x0, y0), x1, y1);
  return vpadalq_s16(vpaddlq_s16(p0), p1);
#endif
}

// 4 F16 values as floats.
inline float32x4_t F16x4(const void* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p))));
}

}  // namespace
}  // namespace zf::quant

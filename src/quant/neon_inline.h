// Internal: NEON helpers shared by the aarch64 kernels (packed_neon.inc, gemm_neon.inc,
// tile_from_decode_asimd.cpp, quant_asimd.cpp). Include only from files compiled for aarch64.
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

// An int32 accumulator of 4 rows' dot products, fed 4 weights x 4 rows at a time (DotLane: a
// 16-byte vector of 4 rows x 4 weights against the 4 activation quants in lane kLane of x).
// With the ARMv8.2 dot product that is one SDOT by lane. Without it (the same kernels compiled
// for baseline NEON, *_asimd.cpp: Cortex-A53/A72, Raspberry Pi 3/4, Graviton 1) two widening
// multiplies (int8 x int8 fits int16) and two pairwise add-accumulates into two int32 partial
// sums per row, folded by DotSum. DotInit(c) starts every row at c. Exact either way.
#if defined(__ARM_FEATURE_DOTPROD)
struct DotAcc {
  int32x4_t s;
};
inline DotAcc DotInit(int32_t c) { return {vdupq_n_s32(c)}; }
template <int kLane>
inline void DotLane(DotAcc& a, int8x16_t w, int8x16_t x) {
  a.s = vdotq_laneq_s32(a.s, w, x, kLane);
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
template <int kLane>
inline void DotLane(DotAcc& a, int8x16_t w, int8x16_t x) {
  const int8x16_t xq = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), kLane));
  a.lo = vpadalq_s16(a.lo, vmull_s8(vget_low_s8(w), vget_low_s8(xq)));
  a.hi = vpadalq_s16(a.hi, vmull_high_s8(w, xq));
}
inline int32x4_t DotSum(const DotAcc& a) { return vpaddq_s32(a.lo, a.hi); }
#endif
inline DotAcc DotZero() { return DotInit(0); }

// 4 F16 values as floats.
inline float32x4_t F16x4(const void* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p))));
}

}  // namespace
}  // namespace zf::quant

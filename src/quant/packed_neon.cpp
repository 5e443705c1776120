// NEON kernels (ARMv8.2 dot product, SDOT) for the packed (16 rows interleaved) decode product,
// packed.h: the same layout as the x86 kernels, each 64-byte chunk read as four 128-bit
// vectors (rows 0-3, 4-7, 8-11, 12-15). One SDOT-by-lane adds 4 weights x 4 rows, the
// activation's 4 quants picked from a register by lane, so there is no broadcast and no
// horizontal sum. Q8_0 is stored as q + 128 (packed.h); SDOT is signed x signed, so the bias is
// flipped back (q = stored ^ 0x80) and needs no correction; the 4/5/6-bit quants are
// non-negative and fit int8 as they are. Compiled with +dotprod (file name suffix, aarch64
// only) and called only after the run-time check in quant.cpp (HWCAP_ASIMDDP). Integer parts
// are exact; only the float summation order differs from the scalar reference.
//
// Why: without it an aarch64 build reads the weights row by row through the scalar reference
// dot products; these are the x86 kernels' structure on the layout they already share.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>
#include <utility>

#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/neon_inline.h"
#include "quant/packed_layout.h"

namespace zf::quant::neon {
namespace {

constexpr int kVecs = 4;  // 128-bit vectors per 64-byte chunk (4 rows each)

// 16 F16 values (one per row) as four float vectors.
inline void Scales(const uint16_t* p, float32x4_t out[kVecs]) {
  for (int v = 0; v < kVecs; ++v) out[v] = F16x4(p + 4 * v);
}

// Rows [0, valid) of 16 (store, or add to what is there).
inline void Store(float* out, int64_t valid, const float32x4_t acc[kVecs], bool add) {
  alignas(16) float tmp[kPackRows];
  for (int v = 0; v < kVecs; ++v) vst1q_f32(tmp + 4 * v, acc[v]);
  const int64_t n = valid < kPackRows ? valid : kPackRows;
  for (int64_t r = 0; r < n; ++r) out[r] = add ? out[r] + tmp[r] : tmp[r];
}

// acc[v] += rows 4v..4v+3 of chunk w . activation quad `lane` of x (SDOT by lane).
template <int kLane>
inline void DotChunk(int32x4_t acc[kVecs], const int8x16_t w[kVecs], int8x16_t x) {
  for (int v = 0; v < kVecs; ++v) acc[v] = vdotq_laneq_s32(acc[v], w[v], x, kLane);
}

// Chunk c of a 32-element block against the block's 8 activation quads (x0: quads 0-3, x1:
// quads 4-7); c is a compile-time constant in the unrolled callers.
template <int kQuad>
inline void DotQuad(int32x4_t acc[kVecs], const int8x16_t w[kVecs], int8x16_t x0, int8x16_t x1) {
  if (kQuad < 4) {
    DotChunk<kQuad % 4>(acc, w, x0);
  } else {
    DotChunk<kQuad % 4>(acc, w, x1);
  }
}

// 16 rows' int32 dots of one Q8_0 block (8 chunks of 4 elements): the stored q + 128 flipped
// back to signed. Two accumulator sets so consecutive SDOTs do not wait on each other.
template <int C>
inline void Q8Chunk(const uint8_t* qb, int8x16_t x0, int8x16_t x1, int32x4_t acc[kVecs]) {
  const uint8x16_t bias = vdupq_n_u8(0x80);
  int8x16_t w[kVecs];
  for (int v = 0; v < kVecs; ++v) w[v] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qb + C * 64 + 16 * v), bias));
  DotQuad<C>(acc, w, x0, x1);
}
inline void DotQ8(const uint8_t* qb, int8x16_t x0, int8x16_t x1, int32x4_t out[kVecs]) {
  int32x4_t a[kVecs], b[kVecs];
  for (int v = 0; v < kVecs; ++v) a[v] = b[v] = vdupq_n_s32(0);
  Q8Chunk<0>(qb, x0, x1, a);
  Q8Chunk<1>(qb, x0, x1, b);
  Q8Chunk<2>(qb, x0, x1, a);
  Q8Chunk<3>(qb, x0, x1, b);
  Q8Chunk<4>(qb, x0, x1, a);
  Q8Chunk<5>(qb, x0, x1, b);
  Q8Chunk<6>(qb, x0, x1, a);
  Q8Chunk<7>(qb, x0, x1, b);
  for (int v = 0; v < kVecs; ++v) out[v] = vaddq_s32(a[v], b[v]);
}

// Chunk C of a 4/5-bit block: low nibbles pair with quad C, high nibbles with quad 4 + C.
template <int C, bool kHigh>
inline void Q4Chunk(const uint8_t* qb, const uint64_t* hm, int8x16_t x0, int8x16_t x1, int32x4_t lo_acc[kVecs],
                    int32x4_t hi_acc[kVecs]) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  int8x16_t lo[kVecs], hi[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    const uint8x16_t raw = vld1q_u8(qb + C * 64 + 16 * v);
    uint8x16_t l = vandq_u8(raw, low4), h = vshrq_n_u8(raw, 4);
    if (kHigh) {
      l = vorrq_u8(l, FifthBits(hm[C], v));
      h = vorrq_u8(h, FifthBits(hm[4 + C], v));
    }
    lo[v] = vreinterpretq_s8_u8(l);
    hi[v] = vreinterpretq_s8_u8(h);
  }
  DotChunk<C>(lo_acc, lo, x0);
  DotChunk<C>(hi_acc, hi, x1);
}
template <bool kHigh>
inline void DotQ4(const uint8_t* qb, const uint64_t* hm, int8x16_t x0, int8x16_t x1, int32_t corr,
                  int32x4_t out[kVecs]) {
  int32x4_t lo[kVecs], hi[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    lo[v] = vdupq_n_s32(corr);
    hi[v] = vdupq_n_s32(0);
  }
  Q4Chunk<0, kHigh>(qb, hm, x0, x1, lo, hi);
  Q4Chunk<1, kHigh>(qb, hm, x0, x1, lo, hi);
  Q4Chunk<2, kHigh>(qb, hm, x0, x1, lo, hi);
  Q4Chunk<3, kHigh>(qb, hm, x0, x1, lo, hi);
  for (int v = 0; v < kVecs; ++v) out[v] = vaddq_s32(lo[v], hi[v]);
}

template <bool kEight, bool kMin, bool kHigh>
void Kernel(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
            float* y) {
  StagedActivations st;
  for (int64_t b0 = 0; b0 < l.nb; b0 += kStagedBlocks) {  // long rows: several passes adding into y
    const int64_t n = l.nb - b0 < kStagedBlocks ? l.nb - b0 : kStagedBlocks;
    StageActivations(a, kMin, b0, n, kEight ? 0 : l.offset, &st);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* grp = packed + size_t(g) * l.group;
      float32x4_t acc[kVecs];
      for (int v = 0; v < kVecs; ++v) acc[v] = vdupq_n_f32(0.0f);
      for (int64_t b = 0; b < n; ++b) {
        const BlockFields f = Fields32(l, grp, b0 + b);
        if (f.first) PrefetchAhead(f.unit, l.unit);
        // The block's 8 quads were staged as int32 each: their bytes are the 32 quants in order.
        const auto* xq = reinterpret_cast<const int8_t*>(st.q + b * 8);
        const int8x16_t x0 = vld1q_s8(xq), x1 = vld1q_s8(xq + 16);
        int32x4_t dot[kVecs];
        if (kEight) {
          DotQ8(f.q, x0, x1, dot);
        } else {
          DotQ4<kHigh>(f.q, reinterpret_cast<const uint64_t*>(f.h), x0, x1, st.corr[b], dot);
        }
        float32x4_t d[kVecs], m[kVecs];
        Scales(f.d, d);
        if (kMin) Scales(f.m, m);
        for (int v = 0; v < kVecs; ++v) {
          acc[v] = vfmaq_f32(acc[v], vmulq_n_f32(d[v], st.d[b]), vcvtq_f32_s32(dot[v]));
          if (kMin) acc[v] = vfmaq_n_f32(acc[v], m[v], st.s[b]);
        }
      }
      Store(y + (g - g0) * kPackRows, rows - g * kPackRows, acc, b0 > 0);
    }
  }
}

// 16 u8 (one per row) as four int32 vectors.
inline void WidenU8(const uint8_t* p, int32x4_t out[kVecs]) {
  const uint8x16_t b = vld1q_u8(p);
  const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_u8(vget_high_u8(b));
  out[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
  out[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
  out[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
  out[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
}
// 16 int8 (one per row) as four int32 vectors.
inline void WidenI8(const int8_t* p, int32x4_t out[kVecs]) {
  const int8x16_t b = vld1q_s8(p);
  const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_s8(vget_high_s8(b));
  out[0] = vmovl_s16(vget_low_s16(lo));
  out[1] = vmovl_s16(vget_high_s16(lo));
  out[2] = vmovl_s16(vget_low_s16(hi));
  out[3] = vmovl_s16(vget_high_s16(hi));
}

// Q4_K sub-block pair c (chunks 8c..8c+7: low nibbles sub-block 2c, high nibbles 2c+1) for 4
// of its chunks (I0..I0+3, activation quads 16c+I0.. and 16c+8+I0..).
template <int I0>
inline void Q4KQuarter(const uint8_t* q, int c, const int8_t* qs, int32x4_t lo_acc[kVecs], int32x4_t hi_acc[kVecs]) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const int8x16_t xl = vld1q_s8(qs + 64 * c + 4 * I0), xh = vld1q_s8(qs + 64 * c + 32 + 4 * I0);
  for (int i = 0; i < 4; ++i) {
    int8x16_t lo[kVecs], hi[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const uint8x16_t raw = vld1q_u8(q + size_t(8 * c + I0 + i) * 64 + 16 * v);
      lo[v] = vreinterpretq_s8_u8(vandq_u8(raw, low4));
      hi[v] = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
    }
    switch (i) {  // the lane must be a constant
      case 0: DotChunk<0>(lo_acc, lo, xl); DotChunk<0>(hi_acc, hi, xh); break;
      case 1: DotChunk<1>(lo_acc, lo, xl); DotChunk<1>(hi_acc, hi, xh); break;
      case 2: DotChunk<2>(lo_acc, lo, xl); DotChunk<2>(hi_acc, hi, xh); break;
      default: DotChunk<3>(lo_acc, lo, xl); DotChunk<3>(hi_acc, hi, xh); break;
    }
  }
}

// Q4_K against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j (8 sub-blocks of 32) and msum = sum_j mn_j * bsum_j, then
// d * da * isum - dmin * da * msum. Sub-block dots stay below 2^16 and the sums below 2^31.
void KernelQ4K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    float32x4_t acc[kVecs];
    for (int v = 0; v < kVecs; ++v) acc[v] = vdupq_n_f32(0.0f);
    for (int64_t s = 0; s < l.nb; ++s) {
      const uint8_t* u = grp + l.UnitAt(s);
      PrefetchAhead(u, l.unit);
      const uint8_t* q = u + l.q_off;
      const uint8_t* sc = u + l.sc_off;
      const uint8_t* mn = u + l.mn_off;
      int32x4_t isum[kVecs], msum[kVecs], w[kVecs];
      for (int v = 0; v < kVecs; ++v) isum[v] = msum[v] = vdupq_n_s32(0);
      for (int c = 0; c < 4; ++c) {
        int32x4_t lo[kVecs], hi[kVecs];
        for (int v = 0; v < kVecs; ++v) lo[v] = hi[v] = vdupq_n_s32(0);
        Q4KQuarter<0>(q, c, ab[s].qs, lo, hi);
        Q4KQuarter<4>(q, c, ab[s].qs, lo, hi);
        WidenU8(sc + 32 * c, w);
        for (int v = 0; v < kVecs; ++v) isum[v] = vmlaq_s32(isum[v], lo[v], w[v]);
        WidenU8(sc + 32 * c + 16, w);
        for (int v = 0; v < kVecs; ++v) isum[v] = vmlaq_s32(isum[v], hi[v], w[v]);
      }
      for (int j = 0; j < 8; ++j) {
        const int32_t bsum = int32_t(ab[s].bsums[2 * j]) + int32_t(ab[s].bsums[2 * j + 1]);
        WidenU8(mn + 16 * j, w);
        for (int v = 0; v < kVecs; ++v) msum[v] = vmlaq_n_s32(msum[v], w[v], bsum);
      }
      float32x4_t d[kVecs], dmin[kVecs];
      Scales(reinterpret_cast<const uint16_t*>(u + l.d_off), d);
      Scales(reinterpret_cast<const uint16_t*>(u + l.dmin_off), dmin);
      for (int v = 0; v < kVecs; ++v) {
        acc[v] = vfmaq_f32(acc[v], vmulq_n_f32(d[v], ab[s].d), vcvtq_f32_s32(isum[v]));
        acc[v] = vfmsq_f32(acc[v], vmulq_n_f32(dmin[v], ab[s].d), vcvtq_f32_s32(msum[v]));
      }
    }
    Store(y + (g - g0) * kPackRows, rows - g * kPackRows, acc, false);
  }
}

// Group G (0..15) of a Q6_K super-block: 16 elements in chunks 4G..4G+3, each quant rebuilt
// from its nibble (low for chunks < 32, high otherwise) and its 2-bit field moved to bits 4-5.
template <int G>
inline void Q6KGroup(const uint8_t* lo, const uint8_t* hi, const int8_t* sc, const int8_t* qs, const int16_t* bsums,
                     int32x4_t isum[kVecs]) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F), bits45 = vdupq_n_u8(0x30);
  const int8x16_t x = vld1q_s8(qs + 16 * G);
  int32x4_t dot[kVecs];
  for (int v = 0; v < kVecs; ++v) dot[v] = vdupq_n_s32(-32 * int32_t(bsums[G]));
  for (int i = 0; i < 4; ++i) {
    const int c = 4 * G + i;
    int8x16_t w[kVecs];
    for (int v = 0; v < kVecs; ++v) {
      const uint8x16_t raw = vld1q_u8(lo + size_t(c % 32) * 64 + 16 * v);
      const uint8x16_t nib = c < 32 ? vandq_u8(raw, low4) : vshrq_n_u8(raw, 4);
      const uint8x16_t hb = vld1q_u8(hi + size_t(c % 16) * 64 + 16 * v);
      const uint8x16_t top = G < 4 ? vshlq_n_u8(hb, 4) : G < 8 ? vshlq_n_u8(hb, 2) : G < 12 ? hb : vshrq_n_u8(hb, 2);
      w[v] = vreinterpretq_s8_u8(vorrq_u8(nib, vandq_u8(top, bits45)));
    }
    switch (i) {  // the lane must be a constant
      case 0: DotChunk<0>(dot, w, x); break;
      case 1: DotChunk<1>(dot, w, x); break;
      case 2: DotChunk<2>(dot, w, x); break;
      default: DotChunk<3>(dot, w, x); break;
    }
  }
  int32x4_t scale[kVecs];
  WidenI8(sc + 16 * G, scale);
  for (int v = 0; v < kVecs; ++v) isum[v] = vmlaq_s32(isum[v], dot[v], scale[v]);
}

template <int... G>
inline void Q6KGroups(const uint8_t* lo, const uint8_t* hi, const int8_t* sc, const int8_t* qs, const int16_t* bsums,
                      int32x4_t isum[kVecs], std::integer_sequence<int, G...>) {
  (Q6KGroup<G>(lo, hi, sc, qs, bsums, isum), ...);
}

// Q6_K against Q8_K activations: per super-block and row, isum = sum_g scale_g * (dot_g -
// 32 * bsum_g) over 16 groups of 16, then d * da * isum.
void KernelQ6K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    float32x4_t acc[kVecs];
    for (int v = 0; v < kVecs; ++v) acc[v] = vdupq_n_f32(0.0f);
    for (int64_t s = 0; s < l.nb; ++s) {
      const uint8_t* u = grp + l.UnitAt(s);
      PrefetchAhead(u, l.unit);
      int32x4_t isum[kVecs];
      for (int v = 0; v < kVecs; ++v) isum[v] = vdupq_n_s32(0);
      Q6KGroups(u + l.q_off, u + l.qh_off, reinterpret_cast<const int8_t*>(u + l.sc_off), ab[s].qs, ab[s].bsums, isum,
                std::make_integer_sequence<int, 16>{});
      float32x4_t d[kVecs];
      Scales(reinterpret_cast<const uint16_t*>(u + l.d_off), d);
      for (int v = 0; v < kVecs; ++v) acc[v] = vfmaq_f32(acc[v], vmulq_n_f32(d[v], ab[s].d), vcvtq_f32_s32(isum[v]));
    }
    Store(y + (g - g0) * kPackRows, rows - g * kPackRows, acc, false);
  }
}

struct Kernels {  // for DispatchPackedGemv (packed_layout.h)
  template <bool kEight, bool kMin, bool kHigh> static constexpr auto Legacy = Kernel<kEight, kMin, kHigh>;
  static constexpr auto Q4K = KernelQ4K, Q6K = KernelQ6K;
};

}  // namespace

bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y) {
  return DispatchPackedGemv<Kernels>(t, k, packed, g0, g1, rows, a, y);
}

}  // namespace zf::quant::neon

#endif  // __aarch64__

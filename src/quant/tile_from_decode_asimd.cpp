// Prefill tiles (gemm_packed.h) built straight from the decode layout (packed.h), NEON: the
// aarch64 counterpart of tile_from_decode_avx2.cpp (same steps, 128-bit vectors, a chunk as
// four of them). Without it a tile took two scalar passes (the 16 rows unpacked back to file
// blocks, then unpacked again and interleaved by PackTile): 24% of the guest instructions of a
// 70-token SmolLM2 prefill under qemu once the GEMM ran on NEON (bench/aarch64_insns.sh). The
// bytes equal PackTile's on the unpacked rows (tested). Baseline NEON (no dot product), so
// every aarch64 CPU uses it, with either build of the GEMM (gemm_neon.cpp / gemm_asimd.cpp).
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#include "quant/gemm_packed.h"
#include "quant/neon_inline.h"
#include "quant/packed_layout.h"

namespace zf::quant::asimd {
namespace {

inline void StoreF(uint8_t* p, float32x4_t v) { vst1q_f32(reinterpret_cast<float*>(p), v); }

// 4 bytes (one scale per row) as floats.
inline float32x4_t U8x4(const uint8_t* p) {
  return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(uint64_t(p[0]) | uint64_t(p[1]) << 8 |
                                                                     uint64_t(p[2]) << 16 | uint64_t(p[3]) << 24)))));
}
inline float32x4_t I8x4(const uint8_t* p) {
  const float v[4] = {float(int8_t(p[0])), float(int8_t(p[1])), float(int8_t(p[2])), float(int8_t(p[3]))};
  return vld1q_f32(v);
}

// The 32-element formats: decode block b -> tile group b.
void LegacyTile(const PackedLayout& l, GgmlType t, const uint8_t* grp, uint8_t* out) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const float off = t == GgmlType::Q4_0 ? -8.0f : t == GgmlType::Q5_0 ? -16.0f : -128.0f;  // m = off * d
  constexpr size_t kGroup = 16 * 32 + 128;
  for (int64_t b = 0; b < l.nb; ++b) {
    uint8_t* o = out + size_t(b) * kGroup;
    const uint8_t* q = grp + l.Q(b);
    if (l.eight_bit) {
      std::memcpy(o, q, 512);  // the same chunks: rows x 4 quants stored as q + 128
    } else {
      uint64_t hm[8];
      if (l.has_high) std::memcpy(hm, grp + l.H(b), 64);
      for (int c = 0; c < 4; ++c) {
        for (int v = 0; v < 4; ++v) {
          const uint8x16_t raw = vld1q_u8(q + 64 * c + 16 * v);
          uint8x16_t lo = vandq_u8(raw, low4), hi = vshrq_n_u8(raw, 4);
          if (l.has_high) {
            lo = vorrq_u8(lo, FifthBits(hm[c], v));
            hi = vorrq_u8(hi, FifthBits(hm[4 + c], v));
          }
          vst1q_u8(o + 64 * c + 16 * v, lo);        // elements 4c..4c+3
          vst1q_u8(o + 64 * (4 + c) + 16 * v, hi);  // elements 16+4c..
        }
      }
    }
    const uint8_t* d = grp + l.D(b);
    for (int v = 0; v < 4; ++v) {
      const float32x4_t dv = F16x4(d + 8 * v);
      StoreF(o + 512 + 16 * v, dv);
      const float32x4_t mv = l.has_min ? F16x4(grp + l.M(b) + 8 * v) : vmulq_n_f32(dv, off);
      StoreF(o + 512 + 64 + 16 * v, mv);
    }
  }
}

// Q4_K: super-block s, sub-block j -> tile group 8s + j (d = d * sc, m = -dmin * mn).
void Q4KTile(const PackedLayout& l, const uint8_t* grp, uint8_t* out) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  constexpr size_t kGroup = 16 * 32 + 128;
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    const uint8_t* q = u + l.q_off;
    const uint8_t* sc = u + l.sc_off;
    const uint8_t* mn = u + l.mn_off;
    for (int c = 0; c < 4; ++c) {
      uint8_t* o_lo = out + size_t(8 * s + 2 * c) * kGroup;
      uint8_t* o_hi = o_lo + kGroup;
      for (int i = 0; i < 8; ++i) {
        for (int v = 0; v < 4; ++v) {
          const uint8x16_t raw = vld1q_u8(q + size_t(8 * c + i) * 64 + 16 * v);
          vst1q_u8(o_lo + 64 * i + 16 * v, vandq_u8(raw, low4));
          vst1q_u8(o_hi + 64 * i + 16 * v, vshrq_n_u8(raw, 4));
        }
      }
    }
    for (int v = 0; v < 4; ++v) {
      const float32x4_t dd = F16x4(u + l.d_off + 8 * v);
      const float32x4_t ndm = vsubq_f32(vdupq_n_f32(0.0f), F16x4(u + l.dmin_off + 8 * v));  // +0 for dmin = 0, as PackTile
      for (int j = 0; j < 8; ++j) {
        uint8_t* o = out + size_t(8 * s + j) * kGroup;
        StoreF(o + 512 + 16 * v, vmulq_f32(dd, U8x4(sc + 16 * j + 4 * v)));
        StoreF(o + 512 + 64 + 16 * v, vmulq_f32(ndm, U8x4(mn + 16 * j + 4 * v)));
      }
    }
  }
}

// Q6_K: super-block s, 16-element group j (chunks 4j..4j+3) -> tile group 16s + j, quants
// 0..63 rebuilt from a nibble and a 2-bit field (d = d * scale, m = -32 d).
void Q6KTile(const PackedLayout& l, const uint8_t* grp, uint8_t* out) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F), bits45 = vdupq_n_u8(0x30);
  constexpr size_t kGroup = 16 * 16 + 128;
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    const uint8_t* lo = u + l.q_off;
    const uint8_t* hi = u + l.qh_off;
    const uint8_t* sc = u + l.sc_off;
    for (int c = 0; c < 64; ++c) {
      uint8_t* o = out + size_t(16 * s + c / 4) * kGroup + 64 * (c % 4);
      // The chunk's 2-bit field at bits 2(c/16)..+1, moved to bits 4-5 (a signed shift count:
      // USHL shifts right for negative counts).
      const int8x16_t shift = vdupq_n_s8(int8_t(4 - 2 * (c / 16)));
      for (int v = 0; v < 4; ++v) {
        const uint8x16_t raw = vld1q_u8(lo + size_t(c % 32) * 64 + 16 * v);
        const uint8x16_t nib = c < 32 ? vandq_u8(raw, low4) : vshrq_n_u8(raw, 4);
        const uint8x16_t top = vshlq_u8(vld1q_u8(hi + size_t(c % 16) * 64 + 16 * v), shift);
        vst1q_u8(o + 16 * v, vorrq_u8(nib, vandq_u8(top, bits45)));
      }
    }
    for (int v = 0; v < 4; ++v) {
      const float32x4_t dd = F16x4(u + l.d_off + 8 * v);
      for (int j = 0; j < 16; ++j) {
        uint8_t* o = out + size_t(16 * s + j) * kGroup;
        const float32x4_t dj = vmulq_f32(dd, I8x4(sc + 16 * j + 4 * v));
        StoreF(o + 256 + 16 * v, dj);
        StoreF(o + 256 + 64 + 16 * v, vmulq_n_f32(dj, -32.0f));
      }
    }
  }
}

struct Packers {  // for DispatchTileFromDecode (gemm_packed.h)
  static constexpr auto LegacyTile = zf::quant::asimd::LegacyTile;
  static constexpr auto Q4KTile = zf::quant::asimd::Q4KTile, Q6KTile = zf::quant::asimd::Q6KTile;
};

}  // namespace

bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst) {
  return DispatchTileFromDecode<Packers>(t, group, rows, k, dst);
}

}  // namespace zf::quant::asimd

#endif  // __aarch64__

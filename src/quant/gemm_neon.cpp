// NEON (ARMv8.2 dot product) kernel of the packed prefill GEMM (layout and definition in
// gemm_packed.h).
//
// Register tile: 4 weight rows (one 128-bit vector of a 64-byte chunk) x up to 8 tokens. Per
// G-element group the G/4 chunk vectors of those 4 rows stay in registers while each token's
// group is consumed: G/4 SDOT-by-lane against the token's quants (one or two 16-byte loads)
// into one int32 accumulator, then a conversion, a multiply and one FMA (d * ad), plus one FMA
// (m * asum) for formats with a free m. 8 weight + 8 float + activation registers fit the 32
// vector registers; 16 rows at once (as on x86) would not. SDOT is signed x signed: the
// tiles' quants are below 64 except Q8_0's (q + 128), which are flipped back to q, so that
// format needs neither its aoff correction nor m (exact: the same integer as dot + aoff).
// Results differ from the scalar reference only by float rounding order.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/gemm_packed.h"

namespace zf::quant::neon {
namespace {

constexpr size_t kQ8Block = 34;  // bytes of a Q8_0 block: F16 scale + 32 quants
constexpr int kTokens = 8;

// acc += w[c] . quad c of the token's group (x0: quads 0-3, x1: quads 4-7).
template <int C>
inline int32x4_t GroupDot(int32x4_t s, const int8x16_t* w, int8x16_t x0, int8x16_t x1) {
  s = vdotq_laneq_s32(s, w[0], x0, 0);
  s = vdotq_laneq_s32(s, w[1], x0, 1);
  s = vdotq_laneq_s32(s, w[2], x0, 2);
  s = vdotq_laneq_s32(s, w[3], x0, 3);
  if (C == 8) {
    s = vdotq_laneq_s32(s, w[4], x1, 0);
    s = vdotq_laneq_s32(s, w[5], x1, 1);
    s = vdotq_laneq_s32(s, w[6], x1, 2);
    s = vdotq_laneq_s32(s, w[7], x1, 3);
  }
  return s;
}

// Rows 4v..4v+3 (valid of them) of the tile for T tokens.
template <int G, int T, bool kOff, bool kSigned>
void Tile(const uint8_t* tile, int64_t k, int v, int valid, const uint8_t* a, size_t a_stride, const float* ad,
          const float* asum, const int32_t* aoff, float* y, int64_t y_stride) {
  constexpr int C = G / 4;
  constexpr size_t kGroupBytes = size_t(16 * G + 128);
  const int64_t ng = k / G, nb = k / 32;
  float32x4_t acc[T];
  for (int j = 0; j < T; ++j) acc[j] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* p = tile + size_t(g) * kGroupBytes;
    int8x16_t w[C];
    for (int c = 0; c < C; ++c) {
      const uint8x16_t raw = vld1q_u8(p + 64 * c + 16 * v);
      w[c] = vreinterpretq_s8_u8(kSigned ? veorq_u8(raw, vdupq_n_u8(0x80)) : raw);
    }
    const float32x4_t d = vld1q_f32(reinterpret_cast<const float*>(p + 16 * G) + 4 * v);
    const float32x4_t m = kOff ? vdupq_n_f32(0.0f) : vld1q_f32(reinterpret_cast<const float*>(p + 16 * G + 64) + 4 * v);
    const int64_t b = (g * G) / 32;
    const int8_t* ag = reinterpret_cast<const int8_t*>(a + size_t(b) * kQ8Block + 2 + size_t((g * G) % 32));
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const int8_t* aq = ag + size_t(j) * a_stride;
      const int8x16_t x0 = vld1q_s8(aq);
      const int8x16_t x1 = C == 8 ? vld1q_s8(aq + 16) : x0;
      const int32x4_t s0 = kOff && !kSigned ? vdupq_n_s32(aoff[j * ng + g]) : vdupq_n_s32(0);
      const int32x4_t s = GroupDot<C>(s0, w, x0, x1);
      acc[j] = vfmaq_f32(acc[j], vmulq_n_f32(d, ad[j * nb + b]), vcvtq_f32_s32(s));
      if (!kOff) acc[j] = vfmaq_n_f32(acc[j], m, asum[j * ng + g]);
    }
  }
  for (int j = 0; j < T; ++j) {
    float* out = y + j * y_stride + 4 * v;
    if (valid >= 4) {
      vst1q_f32(out, acc[j]);
    } else {
      float tmp[4];
      vst1q_f32(tmp, acc[j]);
      for (int r = 0; r < valid; ++r) out[r] = tmp[r];
    }
  }
}

template <int G, bool kOff, bool kSigned>
void RunTiles(const uint8_t* tile, int64_t k, int64_t rows, const PackedActs& pa, int64_t n_tok, float* y,
              int64_t y_stride) {
  const int64_t nb = k / 32, ng = k / G;
  const auto* a = static_cast<const uint8_t*>(pa.q);
  const size_t as = pa.q_stride;
  for (int v = 0; v < 4; ++v) {
    const int valid = int(rows - 4 * v);
    if (valid <= 0) break;
    ForTokenTiles<kTokens>(n_tok, [&](int64_t t, auto tokens) {
      Tile<G, decltype(tokens)::value, kOff, kSigned>(tile, k, v, valid, a + size_t(t) * as, as, pa.ad + t * nb,
                                                      pa.asum + t * ng, pa.aoff + (kOff ? t * ng : 0),
                                                      y + t * y_stride, y_stride);
    });
  }
}

struct Runs {  // for DispatchSignedGemm (gemm_packed.h)
  template <int G, bool kOff, bool kSigned> static constexpr auto Run = RunTiles<G, kOff, kSigned>;
};

}  // namespace

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  DispatchSignedGemm<Runs>(tile, k, group, rows, a, n_tok, y, y_stride);
}

}  // namespace zf::quant::neon

#endif  // __aarch64__

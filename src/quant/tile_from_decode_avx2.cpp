// Prefill tiles (gemm_packed.h) built straight from the decode layout (packed.h), AVX2.
//
// Why: a matrix with a decode copy has no resident file rows, so a prefill tile used to be
// made in two scalar passes: the 16 rows unpacked back to file blocks (UnpackRowBlocks), then
// each row unpacked again and interleaved (PackTile); together 7% of Gemma 3's prefill on Zen 3
// (perf). Both layouts interleave the same 16 rows 4 elements at a time, so a tile chunk is a
// decode chunk's nibbles (plus the fifth bits expanded from their lane masks) and the scales
// are converted per vector. The bytes equal PackTile's on the unpacked rows (tested).
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "quant/avx2_inline.h"
#include "quant/gemm_packed.h"
#include "quant/packed_layout.h"

namespace zf::quant::avx2 {
namespace {

inline __m256i Load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void Store(uint8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline __m256 F16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void StoreF(uint8_t* p, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(p), v); }

// 16 unsigned bytes (one scale per row) as floats, 8 rows per vector.
inline __m256 U8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline __m256 I8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// The 32-element formats: decode block b -> tile group b.
void LegacyTile(const PackedLayout& l, GgmlType t, const uint8_t* grp, uint8_t* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const float off = t == GgmlType::Q4_0 ? -8.0f : t == GgmlType::Q5_0 ? -16.0f : -128.0f;  // m = off * d
  constexpr size_t kGroup = 16 * 32 + 128;
  for (int64_t b = 0; b < l.nb; ++b) {
    uint8_t* o = out + size_t(b) * kGroup;
    const uint8_t* q = grp + l.Q(b);
    if (l.eight_bit) {
      std::memcpy(o, q, 512);  // the same chunks: rows x 4 quants stored as q + 128
    } else {
      uint32_t hm[16];
      if (l.has_high) std::memcpy(hm, grp + l.H(b), 64);
      for (int c = 0; c < 4; ++c) {
        for (int h = 0; h < 2; ++h) {
          const __m256i raw = Load(q + 64 * c + 32 * h);
          __m256i lo = _mm256_and_si256(raw, low4);
          __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
          if (l.has_high) {
            lo = _mm256_or_si256(lo, FifthBits(hm[2 * c + h]));
            hi = _mm256_or_si256(hi, FifthBits(hm[2 * (4 + c) + h]));
          }
          Store(o + 64 * c + 32 * h, lo);         // elements 4c..4c+3
          Store(o + 64 * (4 + c) + 32 * h, hi);   // elements 16+4c..
        }
      }
    }
    const uint8_t* d = grp + l.D(b);
    for (int h = 0; h < 2; ++h) {
      const __m256 dv = F16x8(d + 16 * h);
      StoreF(o + 512 + 32 * h, dv);
      const __m256 mv = l.has_min ? F16x8(grp + l.M(b) + 16 * h) : _mm256_mul_ps(_mm256_set1_ps(off), dv);
      StoreF(o + 512 + 64 + 32 * h, mv);
    }
  }
}

// Q4_K: super-block s, sub-block j -> tile group 8s + j (d = d * sc, m = -dmin * mn).
void Q4KTile(const PackedLayout& l, const uint8_t* grp, uint8_t* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
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
        for (int h = 0; h < 2; ++h) {
          const __m256i raw = Load(q + size_t(8 * c + i) * 64 + 32 * h);
          Store(o_lo + 64 * i + 32 * h, _mm256_and_si256(raw, low4));
          Store(o_hi + 64 * i + 32 * h, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      const __m256 dd = F16x8(u + l.d_off + 16 * h);
      const __m256 ndm = _mm256_sub_ps(_mm256_setzero_ps(), F16x8(u + l.dmin_off + 16 * h));
      for (int j = 0; j < 8; ++j) {
        uint8_t* o = out + size_t(8 * s + j) * kGroup;
        StoreF(o + 512 + 32 * h, _mm256_mul_ps(dd, U8x8(sc + 16 * j + 8 * h)));
        StoreF(o + 512 + 64 + 32 * h, _mm256_mul_ps(ndm, U8x8(mn + 16 * j + 8 * h)));
      }
    }
  }
}

// Q6_K: super-block s, 16-element group j (chunks 4j..4j+3) -> tile group 16s + j, quants
// 0..63 rebuilt from a nibble and a 2-bit field (d = d * scale, m = -32 d).
void Q6KTile(const PackedLayout& l, const uint8_t* grp, uint8_t* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  constexpr size_t kGroup = 16 * 16 + 128;
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    const uint8_t* lo = u + l.q_off;
    const uint8_t* hi = u + l.qh_off;
    const uint8_t* sc = u + l.sc_off;
    for (int c = 0; c < 64; ++c) {
      uint8_t* o = out + size_t(16 * s + c / 4) * kGroup + 64 * (c % 4);
      for (int h = 0; h < 2; ++h) {
        const __m256i raw = Load(lo + size_t(c % 32) * 64 + 32 * h);
        const __m256i nib = c < 32 ? _mm256_and_si256(raw, low4) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        const __m256i hb = Load(hi + size_t(c % 16) * 64 + 32 * h);
        const int shift = 2 * (c / 16);  // the 2-bit field at bits shift..shift+1, moved to 4-5
        const __m256i top = shift <= 4 ? _mm256_sll_epi16(hb, _mm_cvtsi32_si128(4 - shift))
                                       : _mm256_srl_epi16(hb, _mm_cvtsi32_si128(shift - 4));
        Store(o + 32 * h, _mm256_or_si256(nib, _mm256_and_si256(top, bits45)));
      }
    }
    for (int h = 0; h < 2; ++h) {
      const __m256 dd = F16x8(u + l.d_off + 16 * h);
      for (int j = 0; j < 16; ++j) {
        uint8_t* o = out + size_t(16 * s + j) * kGroup;
        const __m256 dj = _mm256_mul_ps(dd, I8x8(sc + 16 * j + 8 * h));
        StoreF(o + 256 + 32 * h, dj);
        StoreF(o + 256 + 64 + 32 * h, _mm256_mul_ps(_mm256_set1_ps(-32.0f), dj));
      }
    }
  }
}

struct Packers {  // for DispatchTileFromDecode (gemm_packed.h)
  static constexpr auto LegacyTile = zf::quant::avx2::LegacyTile;
  static constexpr auto Q4KTile = zf::quant::avx2::Q4KTile, Q6KTile = zf::quant::avx2::Q6KTile;
};

}  // namespace

bool PackTileFromDecode(GgmlType t, const void* group, int64_t rows, int64_t k, void* dst) {
  return DispatchTileFromDecode<Packers>(t, group, rows, k, dst);
}

}  // namespace zf::quant::avx2

#endif  // x86

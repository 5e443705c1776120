// AVX2 kernels for the packed (16 rows interleaved) decode product, packed.h: the same layout
// as the AVX-512 kernels, each 64-byte chunk read as two 256-bit halves (rows 0-7, rows 8-15).
// Without VPDPBUSD the 8-bit products are VPMADDUBSW (unsigned x signed bytes -> int16 pairs)
// then VPMADDWD (-> int32), and the int16 partial sums are added across chunks only as far as
// they provably stay below 2^15 (bounds next to each kernel). Q8_0 is stored as q + 128, which
// would saturate VPMADDUBSW, so its kernel flips the bias back and uses the sign trick
// (|w| x sign(a, w)); activation quants never hold -128. Compiled with AVX2/FMA/F16C flags
// (file name suffix) and called only after the run-time check in quant.cpp. Integer parts are
// exact; only the float summation order differs from the scalar reference.
//
// Why this exists: on AVX2-only machines (Zen 3 measured) the row-at-a-time GEMV stalled on
// its four row streams and reached ~5 GB/s of a ~16 GB/s read bandwidth; one prefetched
// stream per thread is what the packed layout gives the AVX-512 kernels too.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "quant/avx2_inline.h"
#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_layout.h"

namespace zf::quant::avx2 {
namespace {

constexpr int64_t kHalf = 8;  // rows per 256-bit half of a group

inline __m256i Load(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

// 8 F16 values (one half's rows) as floats.
inline __m256 Scales8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 bytes (one half's rows) as int32 lanes holding the byte twice as int16 (v, v): VPMADDWD
// against a pair of int16 sums then multiplies both by the row's value.
inline __m256i PairU8(const uint8_t* p) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}
inline __m256i PairI8(const uint8_t* p) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(v, 16));
}

// Rows [0, valid) of 8 (store or add).
inline void Store8(float* out, int64_t valid, __m256 v, bool add) {
  if (valid >= kHalf) {
    if (add) v = _mm256_add_ps(_mm256_loadu_ps(out), v);
    _mm256_storeu_ps(out, v);
    return;
  }
  if (valid <= 0) return;
  alignas(32) float tmp[kHalf];
  _mm256_store_ps(tmp, v);
  for (int64_t r = 0; r < valid; ++r) out[r] = add ? out[r] + tmp[r] : tmp[r];
}

// One half's int32 dots of a Q8_0 block (8 chunks of 4 elements). The bias is flipped back
// (q = stored ^ 0x80) and |q| x sign(a, q) keeps VPMADDUBSW exact: pairs <= 2 x 128 x 127.
inline __m256i DotQ8(const uint8_t* qb, const int32_t* x) {
  const __m256i bias = _mm256_set1_epi8(char(0x80)), ones = _mm256_set1_epi16(1);
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int c = 0; c < 8; c += 2) {
    const __m256i w0 = _mm256_xor_si256(Load(qb + c * 64), bias);
    const __m256i w1 = _mm256_xor_si256(Load(qb + (c + 1) * 64), bias);
    const __m256i p0 = _mm256_maddubs_epi16(_mm256_abs_epi8(w0), _mm256_sign_epi8(_mm256_set1_epi32(x[c]), w0));
    const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(w1), _mm256_sign_epi8(_mm256_set1_epi32(x[c + 1]), w1));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(p0, ones));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, ones));
  }
  return _mm256_add_epi32(s0, s1);
}

// One half's int32 dots of a 4/5-bit block: low nibbles pair with elements 4c..4c+3, high
// nibbles with 16+4c..; 5-bit quants <= 31, so each int16 pair is <= 2 x 31 x 127 = 7874 and
// four chunks' pairs add up to at most 31496 before VPMADDWD.
// kCorr: the format has a fixed offset (Q4_0, Q5_0), undone by corr = -offset x sum of quants.
template <bool kHigh, bool kCorr>
inline __m256i DotQ4(const uint8_t* qb, const uint32_t* hm, const int32_t* x, int32_t corr) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  if (!kHigh) {  // 4-bit quants <= 15: all 8 products fit one int16 sum (8 x 2 x 15 x 127 = 30480),
                 // added as a tree; one VPMADDWD (+4% L2-resident Q4_1 on Zen 3)
    __m256i p[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = Load(qb + c * 64);
      p[2 * c] = _mm256_maddubs_epi16(_mm256_and_si256(raw, low4), _mm256_set1_epi32(x[c]));
      p[2 * c + 1] = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4), _mm256_set1_epi32(x[4 + c]));
    }
    const __m256i s16 = _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3])),
                                         _mm256_add_epi16(_mm256_add_epi16(p[4], p[5]), _mm256_add_epi16(p[6], p[7])));
    const __m256i s = _mm256_madd_epi16(s16, ones);
    return kCorr ? _mm256_add_epi32(s, _mm256_set1_epi32(corr)) : s;
  }
  __m256i p16[2];
  for (int h = 0; h < 2; ++h) {  // chunks 2h, 2h+1
    __m256i acc = _mm256_setzero_si256();
    for (int c = 2 * h; c < 2 * h + 2; ++c) {
      const __m256i raw = Load(qb + c * 64);
      __m256i lo = _mm256_and_si256(raw, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      if (kHigh) {
        lo = _mm256_or_si256(lo, FifthBits(hm[2 * c]));  // mask c, this half's 32 bits
        hi = _mm256_or_si256(hi, FifthBits(hm[2 * (4 + c)]));
      }
      acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(lo, _mm256_set1_epi32(x[c])));
      acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x[4 + c])));
    }
    p16[h] = acc;
  }
  const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(p16[0], ones), _mm256_madd_epi16(p16[1], ones));
  return kCorr ? _mm256_add_epi32(s, _mm256_set1_epi32(corr)) : s;
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
      __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
      ForBlocks32(l, grp, b0, n, [&](const BlockFields& f, int64_t b, auto) {
        const uint8_t* qb = f.q;
        const uint16_t* d = f.d;
        const uint16_t* m = f.m;
        const auto* hm = reinterpret_cast<const uint32_t*>(f.h);
        const __m256 dx = _mm256_set1_ps(st.d[b]);
        // Both halves in one straight block (+3-7% in L2-resident runs on Zen 3: fewer spills).
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {  // rows 8h..8h+7: bytes 32h.. of every chunk
          const __m256i dot = kEight ? DotQ8(qb + 32 * h, st.q + b * 8)
                                     : DotQ4<kHigh, !kMin>(qb + 32 * h, hm + h, st.q + b * 8, st.corr[b]);
          const __m256 scale = _mm256_mul_ps(Scales8(d + kHalf * h), dx);
          acc[h] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot), acc[h]);
          if (kMin) acc[h] = _mm256_fmadd_ps(Scales8(m + kHalf * h), _mm256_set1_ps(st.s[b]), acc[h]);
        }
      });
      for (int h = 0; h < 2; ++h) {
        Store8(y + (g - g0) * kPackRows + kHalf * h, rows - g * kPackRows - kHalf * h, acc[h],
               b0 > 0);
      }
    }
  }
}

// Q4_K against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j (8 sub-blocks of 32) and msum = sum_j mn_j * bsum_j, then
// d * da * isum - dmin * da * msum. A sub-block's 8 chunks add in int16: nibbles <= 15, so
// 8 x 2 x 15 x 127 = 30480 at most.
void KernelQ4K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t s = 0; s < l.nb; ++s) {
      const uint8_t* u = grp + l.UnitAt(s);
      PrefetchAhead(u, l.unit);
      const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
      const auto* dmin = reinterpret_cast<const uint16_t*>(u + l.dmin_off);
      const uint8_t* q = u + l.q_off;
      const uint8_t* sc = u + l.sc_off;
      const uint8_t* mn = u + l.mn_off;
      int32_t x[64];
      std::memcpy(x, ab[s].qs, 256);
      int32_t bsum[8];  // (bsums[2j], bsums[2j+1]) as one int16 pair
      for (int j = 0; j < 8; ++j) {
        bsum[j] = int32_t(uint16_t(ab[s].bsums[2 * j])) | int32_t(uint32_t(uint16_t(ab[s].bsums[2 * j + 1])) << 16);
      }
      const __m256 da = _mm256_set1_ps(ab[s].d);
      for (int h = 0; h < 2; ++h) {
        __m256i isum = _mm256_setzero_si256(), msum = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
          __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
          for (int i = 0; i < 8; ++i) {
            const __m256i raw = Load(q + size_t(8 * c + i) * 64 + 32 * h);
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(_mm256_and_si256(raw, low4), _mm256_set1_epi32(x[16 * c + i])));
            hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4),
                                                           _mm256_set1_epi32(x[16 * c + 8 + i])));
          }
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(lo, PairU8(sc + 32 * c + 8 * h)));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(hi, PairU8(sc + 32 * c + 16 + 8 * h)));
        }
        for (int j = 0; j < 8; ++j) {
          msum = _mm256_add_epi32(msum, _mm256_madd_epi16(PairU8(mn + 16 * j + 8 * h), _mm256_set1_epi32(bsum[j])));
        }
        acc[h] = _mm256_fmadd_ps(_mm256_mul_ps(Scales8(d + kHalf * h), da), _mm256_cvtepi32_ps(isum), acc[h]);
        acc[h] = _mm256_fnmadd_ps(_mm256_mul_ps(Scales8(dmin + kHalf * h), da),
                                  _mm256_cvtepi32_ps(msum), acc[h]);
      }
    }
    for (int h = 0; h < 2; ++h) Store8(y + (g - g0) * kPackRows + kHalf * h, rows - g * kPackRows - kHalf * h, acc[h], false);
  }
}

// One quarter F of a Q6_K super-block (chunks 16F..16F+15, scale groups 4F..4F+3) for one
// half: the nibble (low for F < 2, high otherwise) and the 2-bit field's shift are
// compile-time, so the chunk loop has no branches. Adds sum_g scale_g * dot_g to isum and
// sum_g scale_g * bsum_g to corr.
template <int F>
inline void Q6KQuarter(const uint8_t* lo, const uint8_t* hi, const uint8_t* sc, const int32_t* x, const int16_t* bsums,
                       __m256i* isum, __m256i* corr) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
#pragma GCC unroll 4
  for (int gg = 0; gg < 4; ++gg) {
    __m256i p16[2];
#pragma GCC unroll 2
    for (int pair = 0; pair < 2; ++pair) {
      __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const int c = 16 * F + 4 * gg + 2 * pair + i;
        const __m256i raw = Load(lo + size_t(c % 32) * 64);
        const __m256i nib = F < 2 ? _mm256_and_si256(raw, low4) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
        const __m256i hb = Load(hi + size_t(c % 16) * 64);
        // The chunk's 2-bit field moved to bits 4-5 (shifts within 16-bit lanes; the mask drops
        // what crossed from the neighbouring byte).
        const __m256i top = F == 0 ? _mm256_slli_epi16(hb, 4)
                            : F == 1 ? _mm256_slli_epi16(hb, 2)
                            : F == 2 ? hb
                                     : _mm256_srli_epi16(hb, 2);
        const __m256i qv = _mm256_or_si256(nib, _mm256_and_si256(top, bits45));
        sum = _mm256_add_epi16(sum, _mm256_maddubs_epi16(qv, _mm256_set1_epi32(x[c])));
      }
      p16[pair] = sum;
    }
    const int grp16 = 4 * F + gg;
    const __m256i scale = PairI8(sc + 16 * grp16);
    *isum = _mm256_add_epi32(*isum, _mm256_add_epi32(_mm256_madd_epi16(p16[0], scale), _mm256_madd_epi16(p16[1], scale)));
    *corr = _mm256_add_epi32(*corr, _mm256_madd_epi16(scale, _mm256_set1_epi32(int32_t(uint16_t(bsums[grp16])))));
  }
}

// Q6_K against Q8_K activations: per super-block and row, isum = sum_g scale_g * (dot_g -
// 32 * bsum_g) over 16 groups of 16 elements (4 chunks each). Quants <= 63, so one chunk's
// int16 pairs are <= 16002 and two chunks add before VPMADDWD. The -32 offset is applied once
// per super-block: sum_g scale_g * bsum_g, times 32.
void KernelQ6K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t s = 0; s < l.nb; ++s) {
      const uint8_t* u = grp + l.UnitAt(s);
      PrefetchAhead(u, l.unit);
      const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
      const uint8_t* lo = u + l.q_off;
      const uint8_t* hi = u + l.qh_off;
      const uint8_t* sc = u + l.sc_off;
      int32_t x[64];
      std::memcpy(x, ab[s].qs, 256);
      const __m256 da = _mm256_set1_ps(ab[s].d);
      for (int h = 0; h < 2; ++h) {
        __m256i isum = _mm256_setzero_si256(), corr = _mm256_setzero_si256();
        const uint8_t* lh = lo + 32 * h;
        const uint8_t* hh = hi + 32 * h;
        const uint8_t* sh = sc + 8 * h;
        Q6KQuarter<0>(lh, hh, sh, x, ab[s].bsums, &isum, &corr);
        Q6KQuarter<1>(lh, hh, sh, x, ab[s].bsums, &isum, &corr);
        Q6KQuarter<2>(lh, hh, sh, x, ab[s].bsums, &isum, &corr);
        Q6KQuarter<3>(lh, hh, sh, x, ab[s].bsums, &isum, &corr);
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(corr, 5));
        acc[h] = _mm256_fmadd_ps(_mm256_mul_ps(Scales8(d + kHalf * h), da), _mm256_cvtepi32_ps(isum),
                                 acc[h]);
      }
    }
    for (int h = 0; h < 2; ++h) Store8(y + (g - g0) * kPackRows + kHalf * h, rows - g * kPackRows - kHalf * h, acc[h], false);
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

}  // namespace zf::quant::avx2

#endif  // x86

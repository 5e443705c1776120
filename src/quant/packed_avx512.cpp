// AVX-512 VNNI kernels for the packed (16 rows interleaved) decode product, packed.h. Per
// 32-element block and 16 rows: 8 VPDPBUSD (4 weights x 16 rows each, the activation's 4 quants
// broadcast), one F16->F32 scale vector, one multiply and one FMA (plus one FMA for the min
// term of Q4_1/Q5_1). Compiled with AVX-512 flags (file name suffix); called only after the
// run-time check in packed.cpp. Integer parts are exact; only the float summation order differs
// from the scalar reference.
#if defined(__x86_64__) || defined(__i386__)

#include "quant/avx512_intrinsics.h"

#include <cstring>

#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_layout.h"

namespace zf::quant::avx512 {
namespace {

inline __m512 Scales(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

inline void Store(float* out, int64_t valid, __m512 v, bool add) {
  const __mmask16 m = valid >= kPackRows ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
  if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), v);
  _mm512_mask_storeu_ps(out, m, v);
}

// 16 rows' int32 dots of one Q8_0 block (weights stored + 128; st->corr undoes it).
inline __m512i DotQ8(const uint8_t* qb, const int32_t* x, int32_t corr) {
  __m512i s0 = _mm512_set1_epi32(corr), s1 = _mm512_setzero_si512();
  for (int c = 0; c < 8; c += 2) {
    s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qb + c * 64), _mm512_set1_epi32(x[c]));
    s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qb + (c + 1) * 64), _mm512_set1_epi32(x[c + 1]));
  }
  return _mm512_add_epi32(s0, s1);
}

// 16 rows' int32 dots of one 4/5-bit block: low nibbles pair with elements 4c..4c+3, high
// nibbles with 16+4c..; the fifth bits come from the block's 8 lane masks.
template <bool kHigh>
inline __m512i DotQ4(const uint8_t* qb, const uint64_t* hm, const int32_t* x, int32_t corr) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  __m512i s0 = _mm512_set1_epi32(corr), s1 = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    const __m512i raw = _mm512_load_si512(qb + c * 64);
    __m512i lo = _mm512_and_si512(raw, low4);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    if (kHigh) {
      lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(hm[c]), lo, bit4);
      hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(hm[4 + c]), hi, bit4);
    }
    s0 = _mm512_dpbusd_epi32(s0, lo, _mm512_set1_epi32(x[c]));
    s1 = _mm512_dpbusd_epi32(s1, hi, _mm512_set1_epi32(x[4 + c]));
  }
  return _mm512_add_epi32(s0, s1);
}

template <bool kEight, bool kMin, bool kHigh>
void Kernel(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
            float* y) {
  StagedActivations st;
  for (int64_t b0 = 0; b0 < l.nb; b0 += kStagedBlocks) {  // long rows: several passes adding into y
    const int64_t n = l.nb - b0 < kStagedBlocks ? l.nb - b0 : kStagedBlocks;
    StageActivations(a, kMin, b0, n, kEight ? 128 : l.offset, &st);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* grp = packed + size_t(g) * l.group;
      __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps(), accm = _mm512_setzero_ps();
      ForBlocks32(l, grp, b0, n, [&](const BlockFields& f, int64_t b, auto j) {
        const uint8_t* qb = f.q;
        const uint16_t* d = f.d;
        const uint16_t* m = f.m;
        const auto* hm = reinterpret_cast<const uint64_t*>(f.h);
        const __m512i dot = kEight ? DotQ8(qb, st.q + b * 8, st.corr[b]) : DotQ4<kHigh>(qb, hm, st.q + b * 8, st.corr[b]);
        const __m512 scale = _mm512_mul_ps(Scales(d), _mm512_set1_ps(st.d[b]));
        // Alternate accumulators so consecutive blocks' FMAs do not wait on each other.
        if (decltype(j)::value == 1) {
          acc1 = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot), acc1);
        } else {
          acc0 = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot), acc0);
        }
        if (kMin) accm = _mm512_fmadd_ps(Scales(m), _mm512_set1_ps(st.s[b]), accm);
      });
      Store(y + (g - g0) * kPackRows, rows - g * kPackRows, _mm512_add_ps(_mm512_add_ps(acc0, acc1), accm), b0 > 0);
    }
  }
}

// Q4_K against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j (8 sub-blocks of 32) and msum = sum_j mn_j * bsum_j, then
// d * da * isum - dmin * da * msum. Sub-block dots stay below 2^16 and the sums below 2^31.
void KernelQ4K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    __m512 acc = _mm512_setzero_ps();
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
      __m512i isum = _mm512_setzero_si512(), msum = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
        __m512i lo_acc = _mm512_setzero_si512(), hi_acc = _mm512_setzero_si512();
        for (int i = 0; i < 8; ++i) {
          const __m512i raw = _mm512_load_si512(q + size_t(8 * c + i) * 64);
          lo_acc = _mm512_dpbusd_epi32(lo_acc, _mm512_and_si512(raw, low4), _mm512_set1_epi32(x[16 * c + i]));
          hi_acc = _mm512_dpbusd_epi32(hi_acc, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4),
                                       _mm512_set1_epi32(x[16 * c + 8 + i]));
        }
        const __m512i sc_lo = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 32 * c)));
        const __m512i sc_hi = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 32 * c + 16)));
        isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_mullo_epi32(lo_acc, sc_lo), _mm512_mullo_epi32(hi_acc, sc_hi)));
      }
      for (int j = 0; j < 8; ++j) {
        const int32_t bsum = int32_t(ab[s].bsums[2 * j]) + int32_t(ab[s].bsums[2 * j + 1]);
        const __m512i m = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(mn + 16 * j)));
        msum = _mm512_add_epi32(msum, _mm512_mullo_epi32(m, _mm512_set1_epi32(bsum)));
      }
      const __m512 da = _mm512_set1_ps(ab[s].d);
      acc = _mm512_fmadd_ps(_mm512_mul_ps(Scales(d), da), _mm512_cvtepi32_ps(isum), acc);
      acc = _mm512_fnmadd_ps(_mm512_mul_ps(Scales(dmin), da), _mm512_cvtepi32_ps(msum), acc);
    }
    Store(y + (g - g0) * kPackRows, rows - g * kPackRows, acc, false);
  }
}

// Q6_K against Q8_K activations: per super-block and row, isum = sum_g scale_g * (dot_g -
// 32 * bsum_g) over 16 groups of 16 (the -32 offset folded into the accumulator's start), then
// d * da * isum. The 6-bit values are rebuilt per chunk from a nibble and a 2-bit field.
void KernelQ6K(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows, const uint8_t* a,
               float* y) {
  const auto* ab = reinterpret_cast<const BlockQ8_K*>(a);
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* grp = packed + size_t(g) * l.group;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t s = 0; s < l.nb; ++s) {
      const uint8_t* u = grp + l.UnitAt(s);
      PrefetchAhead(u, l.unit);
      const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
      const uint8_t* lo = u + l.q_off;
      const uint8_t* hi = u + l.qh_off;
      const auto* sc = reinterpret_cast<const int8_t*>(u + l.sc_off);
      int32_t x[64];
      std::memcpy(x, ab[s].qs, 256);
      __m512i isum = _mm512_setzero_si512();
      for (int grp16 = 0; grp16 < 16; ++grp16) {
        __m512i dot = _mm512_set1_epi32(-32 * int32_t(ab[s].bsums[grp16]));
        for (int i = 0; i < 4; ++i) {
          const int c = 4 * grp16 + i;
          const __m512i raw = _mm512_load_si512(lo + size_t(c % 32) * 64);
          const __m512i nib = c < 32 ? _mm512_and_si512(raw, low4) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
          const __m512i hb = _mm512_load_si512(hi + size_t(c % 16) * 64);
          // The chunk's 2-bit field moved to bits 4-5 (shifts within 16-bit lanes; the mask drops
          // what crossed from the neighbouring byte).
          __m512i top;
          switch (c / 16) {
            case 0: top = _mm512_slli_epi16(hb, 4); break;
            case 1: top = _mm512_slli_epi16(hb, 2); break;
            case 2: top = hb; break;
            default: top = _mm512_srli_epi16(hb, 2); break;
          }
          const __m512i q = _mm512_or_si512(nib, _mm512_and_si512(top, bits45));
          dot = _mm512_dpbusd_epi32(dot, q, _mm512_set1_epi32(x[c]));
        }
        const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * grp16)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot, scale));
      }
      acc = _mm512_fmadd_ps(_mm512_mul_ps(Scales(d), _mm512_set1_ps(ab[s].d)), _mm512_cvtepi32_ps(isum), acc);
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

}  // namespace zf::quant::avx512

#endif  // x86

// AVX-512 VNNI kernels for the packed (16 rows interleaved) decode product, packed.h. Per
// 32-element block and 16 rows: 8 VPDPBUSD (4 weights x 16 rows each, the activation's 4 quants
// broadcast), one F16->F32 scale vector, one multiply and one FMA (plus one FMA for the min
// term of Q4_1/Q5_1). Compiled with AVX-512 flags (file name suffix); called only after the
// run-time check in packed.cpp. Integer parts are exact; only the float summation order differs
// from the scalar reference.
#if defined(__x86_64__) || defined(__i386__)

#include "quant/avx512_intrinsics.h"

#include <cstring>
#include <type_traits>
#include <utility>

#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_layout.h"

namespace zf::quant::avx512 {
namespace {

// The hardware F16 -> F32 conversion, for StageActivationsWith (packed_layout.h).
inline float F16C(uint16_t h) { return _cvtsh_ss(h); }

inline __m512 Scales(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// MXFP4: 16 rows' E8M0 bytes as 2^(e - 128), bit for bit E8M0ToFp32Half (blocks.h): (e - 1)
// in the exponent field, or for e = 0 and 1 the subnormals 0x200000 << e; the larger of the
// two is the right one (equal at e = 2).
inline __m512 E8M0Scales(const uint8_t* p) {
  const __m512i e = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i normal = _mm512_sub_epi32(_mm512_slli_epi32(e, 23), _mm512_set1_epi32(0x00800000));
  const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), _mm512_min_epu32(e, _mm512_set1_epi32(2)));
  return _mm512_castsi512_ps(_mm512_max_epi32(normal, small));
}

// A codebook's 16 values + 128 (VPDPBUSD's unsigned operand; corr undoes the bias) in every
// 128-bit lane, for VPSHUFB.
template <int kBook>
inline __m512i BiasedBook() {
  const int8_t* v = kBook == kBookMXFP4 ? kValuesMXFP4 : kValuesIQ4NL;
  alignas(16) uint8_t b[16];
  for (int i = 0; i < 16; ++i) b[i] = uint8_t(v[i] + 128);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(b)));
}

inline void Store(float* out, int64_t valid, __m512 v, bool add) {
  const __mmask16 m = valid >= kPackRows ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
  if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), v);
  _mm512_mask_storeu_ps(out, m, v);
}

// The kernels below run one token (GemvPacked) or a batch of them (GemvPackedMulti) with the
// same code: per 16-row group, tokens go in blocks of up to kTokens, each block sharing the
// loads and nibble unpacking of every weight chunk and running its VPDPBUSDs for every token
// of the block; a token's float accumulation is written once, in the loop over t below, so it
// is the same sequence of operations whatever the block size (batch invariance, packed.h).
// The 32-element formats take blocks of up to 8 tokens (ForLegacyTokenBlocks): exact prefill's
// 16-token products of Gemma 3's Q5_0 ffn_up shape took 0.81-0.89x the time of 4-token blocks
// (one thread, loaded machine; Q4_1 unchanged within the noise).
// Integer dot products are exact, so how they are split across chains is free.
// Never write an add of a multiply (_mm*_add_ps(a, _mm*_mul_ps(b, c))): GCC contracts a multiply
// feeding an add (-ffp-contract=fast is its default) into an FMA, and a contraction it makes
// in one instantiation and not another would break the invariance (a test of it,
// Packed.MultiTokenProductIsBitIdenticalToOneTokenAtATime, missed a change hidden that way).
constexpr int kTokens = 4;

// Calls f(std::integral_constant<int, T>, i) for tokens [i, i + T) covering [0, n), T <= kTokens.
template <typename F>
inline void ForTokenBlocks(int32_t n, F&& f) {
  int32_t i = 0;
  for (; n - i >= kTokens; i += kTokens) f(std::integral_constant<int, kTokens>{}, i);
  switch (n - i) {
    case 1: f(std::integral_constant<int, 1>{}, i); break;
    case 2: f(std::integral_constant<int, 2>{}, i); break;
    case 3: f(std::integral_constant<int, 3>{}, i); break;
    default: break;
  }
}

// The 32-element formats' token blocks: up to 8 tokens (their one-chain dots and the split min
// term leave room for 8 tokens' sums in the 32 registers), the rest as ForTokenBlocks.
template <typename F>
inline void ForLegacyTokenBlocks(int32_t n, F&& f) {
  int32_t i = 0;
  for (; n - i >= 8; i += 8) f(std::integral_constant<int, 8>{}, i);
  ForTokenBlocks(n - i, [&](auto tc, int32_t j) { f(tc, i + j); });
}

// Token blocks of several tokens stream the weights slower than one token (several dot
// products per chunk), and from DRAM the L1 prefetch kPrefetchAhead ahead alone left them far
// from the read bandwidth: a second prefetch, into L2 and kFarAhead ahead, took a 56 MB Q4_K
// matrix at 4 tokens from 7.2 to 5.1 ms (BM_GemvPackedMulti/dram_Q4_K/.../4/1, one thread,
// Zen 4). The one-token kernels do without: it made them 1.3x slower.
constexpr size_t kFarAhead = 32768;
template <int T>
inline void PrefetchUnit(const PrefetchPlan& plan, const uint8_t* u, size_t bytes) {
  PrefetchAhead(plan, u, bytes);
  if (T > 1) {
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(u + kFarAhead + off, 0, 2);
  }
}

// 4 activation bytes as one dword (for a broadcast operand).
inline int32_t Dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// acc + VPDPBUSD(u, the 4 signed bytes at p broadcast to every lane), the broadcast folded into
// the instruction's memory operand ({1to16}): GCC 12 loads _mm512_set1_epi32 of a memory dword
// with a VPBROADCASTD of its own, one more instruction per VPDPBUSD. Exact prefill's 16-token
// products, one thread: Q4_1 (SmolLM2 ffn_up) 0.95-0.98x the time, Q5_0 (Gemma 3) 0.97-0.98x,
// Q4_K 0.97x; one token: Q4_1 0.90x, the others within the noise. Q8_0 (DotQ8) and Q6_K keep
// the separate broadcast: folded, their one-token kernels took 1.03-1.10x the time (IQ4_XS:
// not measured).
// The operand is read as bytes (character type, so any object may be read through it).
__attribute__((always_inline)) inline __m512i DpbusdBcast(__m512i acc, __m512i u, const void* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*static_cast<const int8_t(*)[4]>(p)));
  return acc;
}

// 16 rows' int32 dots of one Q8_0 block for T tokens (weights stored + 128; corr undoes it).
// Two chains per token up to 4 tokens: with one, a 4-token block's 4 chains of 8 VPDPBUSDs
// waited on their latency (exact prefill's 16-token Q8_0 products, 1024 x 640, one thread:
// 0.90-0.97x the time with two). Integer sums, so the split changes no result. Always
// inlined, as DotQ4.
template <int T>
__attribute__((always_inline)) inline void DotQ8(const uint8_t* qb, const StagedActivations* const* st, int64_t b,
                                                 __m512i* dot) {
  constexpr int kChains = T >= 5 ? 1 : 2;
  __m512i s[T][kChains];
  for (int t = 0; t < T; ++t) {
    s[t][0] = _mm512_set1_epi32(st[t]->corr[b]);
    if (kChains == 2) s[t][kChains - 1] = _mm512_setzero_si512();
  }
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
    const __m512i w = _mm512_load_si512(qb + c * 64);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      s[t][c % kChains] = _mm512_dpbusd_epi32(s[t][c % kChains], w, _mm512_set1_epi32(st[t]->q[b * 8 + c]));
    }
  }
  for (int t = 0; t < T; ++t) dot[t] = kChains == 2 ? _mm512_add_epi32(s[t][0], s[t][kChains - 1]) : s[t][0];
}

// 16 rows' int32 dots of one 4/5-bit block for T tokens: low nibbles pair with elements
// 4c..4c+3, high nibbles with 16+4c..; the fifth bits come from the block's 8 lane masks.
// kBook (IQ4_NL, MXFP4): the nibbles index the codebook, stored + 128 (corr undoes it).
// Always inlined: out of line, its dots went through memory.
template <bool kHigh, int T, int kBook = kBookNone>
__attribute__((always_inline)) inline void DotQ4(const uint8_t* qb, const uint64_t* hm,
                                                 const StagedActivations* const* st, int64_t b, __m512i* dot) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  const __m512i book = kBook != kBookNone ? BiasedBook<kBook>() : _mm512_setzero_si512();
  // Above 4 tokens one chain each (the low and high nibbles' products into one sum): enough
  // chains to hide the latency, and registers left for the 8 tokens' float sums.
  constexpr bool kTwo = T <= 4;
  __m512i s0[T], s1[T];
  for (int t = 0; t < T; ++t) {
    s0[t] = _mm512_set1_epi32(st[t]->corr[b]);
    s1[t] = _mm512_setzero_si512();
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512i raw = _mm512_load_si512(qb + c * 64);
    __m512i lo = _mm512_and_si512(raw, low4);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    if (kHigh) {
      lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(hm[c]), lo, bit4);
      hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(hm[4 + c]), hi, bit4);
    }
    if (kBook != kBookNone) {
      lo = _mm512_shuffle_epi8(book, lo);
      hi = _mm512_shuffle_epi8(book, hi);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      s0[t] = DpbusdBcast(s0[t], lo, &st[t]->q[b * 8 + c]);
      __m512i& h = kTwo ? s1[t] : s0[t];
      h = DpbusdBcast(h, hi, &st[t]->q[b * 8 + 4 + c]);
    }
  }
  for (int t = 0; t < T; ++t) dot[t] = kTwo ? _mm512_add_epi32(s0[t], s1[t]) : s0[t];
}

// One group, blocks [b0, b0 + n) of the staging pass, for T tokens.
template <bool kEight, bool kMin, bool kHigh, int kBook, int T>
inline void LegacyGroup(const PackedLayout& l, const uint8_t* grp, int64_t b0, int64_t n,
                        const StagedActivations* const* st, float* const* out, int64_t valid, bool add, const PrefetchPlan* prefetch) {
  // Above 4 tokens the min term (Q4_1, Q5_1) is summed in a loop of its own: the same FMAs in
  // the same order into its own accumulator, so the same bits, without its 8 registers here.
  constexpr bool kMinHere = kMin && T <= 4;
  __m512 acc0[T], acc1[T], accm[T];
  // Unrolled: as a loop GCC turned it into three memsets (rep stos) of the arrays on the stack,
  // 6% of the kernel's time at 8 tokens over 18 blocks (SmolLM2's rows).
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc0[t] = acc1[t] = accm[t] = _mm512_setzero_ps();
  ForBlocks32(
      l, grp, b0, n,
      [&](const BlockFields& f, int64_t b, auto j) {
        if (T > 1 && decltype(j)::value == 0 && prefetch != nullptr) {  // see PrefetchUnit
          const uint8_t* u = reinterpret_cast<const uint8_t*>(f.d) - l.d_off;
          for (size_t off = 0; off < l.unit; off += 64) __builtin_prefetch(u + kFarAhead + off, 0, 2);
        }
        __m512i dot[T];
        if (kEight) {
          DotQ8<T>(f.q, st, b, dot);
        } else {
          DotQ4<kHigh, T, kBook>(f.q, reinterpret_cast<const uint64_t*>(f.h), st, b, dot);
        }
        const __m512 sd = kBook == kBookMXFP4 ? E8M0Scales(reinterpret_cast<const uint8_t*>(f.d)) : Scales(f.d);
        const __m512 sm = kMinHere ? Scales(f.m) : _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m512 scale = _mm512_mul_ps(sd, _mm512_set1_ps(st[t]->d[b]));
          // Alternate accumulators so consecutive blocks' FMAs do not wait on each other.
          if (decltype(j)::value == 1) {
            acc1[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot[t]), acc1[t]);
          } else {
            acc0[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dot[t]), acc0[t]);
          }
          if (kMinHere) accm[t] = _mm512_fmadd_ps(sm, _mm512_set1_ps(st[t]->s[b]), accm[t]);
        }
      },
      prefetch);
  if (kMin && !kMinHere) {
    ForBlocks32(
        l, grp, b0, n,
        [&](const BlockFields& f, int64_t b, auto) {
          const __m512 sm = Scales(f.m);
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t) accm[t] = _mm512_fmadd_ps(sm, _mm512_set1_ps(st[t]->s[b]), accm[t]);
        },
        nullptr);
  }
  for (int t = 0; t < T; ++t) Store(out[t], valid, _mm512_add_ps(_mm512_add_ps(acc0[t], acc1[t]), accm[t]), add);
}

// The 32-element formats for n <= kMaxN tokens: a pass per kStagedBlocks blocks (long rows add
// into y), every token staged per pass, then per group the token blocks.
template <int kMaxN, bool kEight, bool kMin, bool kHigh, int kBook>
void LegacyKernel(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows,
                  const uint8_t* const* a, float* const* y, int32_t n) {
  const PrefetchPlan& plan = DecodePrefetchPlan(l.eight_bit ? GgmlType::Q8_0 : GgmlType::Q4_0);
  StagedActivations st[kMaxN];
  const StagedActivations* sp[kMaxN];
  for (int32_t i = 0; i < n; ++i) sp[i] = &st[i];
  for (int64_t b0 = 0; b0 < l.nb; b0 += kStagedBlocks) {
    const int64_t nbk = l.nb - b0 < kStagedBlocks ? l.nb - b0 : kStagedBlocks;
    for (int32_t i = 0; i < n; ++i) StageActivationsWith(F16C, a[i], kMin, b0, nbk, kEight || kBook != kBookNone ? 128 : l.offset, &st[i]);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* grp = packed + size_t(g) * l.group;
      ForLegacyTokenBlocks(n, [&](auto tc, int32_t i) {
        constexpr int T = decltype(tc)::value;
        float* out[T];
        for (int t = 0; t < T; ++t) out[t] = y[i + t] + (g - g0) * kPackRows;
        LegacyGroup<kEight, kMin, kHigh, kBook, T>(l, grp, b0, nbk, sp + i, out, rows - g * kPackRows, b0 > 0,
                                            i == 0 ? &plan : nullptr);
      });
    }
  }
}

// Q4_K against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j (8 sub-blocks of 32) and msum = sum_j mn_j * bsum_j, then
// d * da * isum - dmin * da * msum. Sub-block dots stay below 2^16 and the sums below 2^31.
template <int T>
inline void Q4KGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                     int64_t valid, const PrefetchPlan* prefetch) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), high4 = _mm512_set1_epi8(char(0xF0));
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const auto* dmin = reinterpret_cast<const uint16_t*>(u + l.dmin_off);
    const uint8_t* q = u + l.q_off;
    const uint8_t* sc = u + l.sc_off;
    const uint8_t* mn = u + l.mn_off;
    // One token reads its quants from a copy on the stack (as the kernel did before the
    // batched form: measured 3% faster in decode); blocks of tokens straight from the rows.
    int32_t xs[T == 1 ? 64 : 1];
    const int8_t* x[T];
    if (T == 1) {
      std::memcpy(xs, ab[0][s].qs, 256);
      x[0] = reinterpret_cast<const int8_t*>(xs);
    } else {
      for (int t = 0; t < T; ++t) x[t] = ab[t][s].qs;
    }
    __m512i isum[T], hsum[T], msum[T];
    for (int t = 0; t < T; ++t) isum[t] = hsum[t] = msum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
      // kChains independent VPDPBUSD chains per sub-block and token (even/odd chunks): one
      // chain of 8 waits ~8 x 4-5 cycles of latency per sub-block pair, which made the
      // one-token kernel latency-bound. Integer sums, so the split changes no result.
      constexpr int kChains = T >= 3 ? 1 : 2;
      __m512i lo_acc[T][kChains], hi_acc[T][kChains];
      for (int t = 0; t < T; ++t) {
        for (int k = 0; k < kChains; ++k) lo_acc[t][k] = hi_acc[t][k] = _mm512_setzero_si512();
      }
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const __m512i raw = _mm512_load_si512(q + size_t(8 * c + i) * 64);
        // The high nibbles stay in place (16 x their value): no shift per chunk, one per
        // super-block on the sum below (exact: every term is a multiple of 16).
        const __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(raw, high4);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          __m512i& la = lo_acc[t][i % kChains];
          __m512i& ha = hi_acc[t][i % kChains];
          la = DpbusdBcast(la, lo, x[t] + 4 * (16 * c + i));
          ha = DpbusdBcast(ha, hi, x[t] + 4 * (16 * c + 8 + i));
        }
      }
      const __m512i sc_lo = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 32 * c)));
      const __m512i sc_hi = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 32 * c + 16)));
      for (int t = 0; t < T; ++t) {
        __m512i lo_sum = lo_acc[t][0], hi_sum = hi_acc[t][0];
        for (int k = 1; k < kChains; ++k) {
          lo_sum = _mm512_add_epi32(lo_sum, lo_acc[t][k]);
          hi_sum = _mm512_add_epi32(hi_sum, hi_acc[t][k]);
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(lo_sum, sc_lo));
        hsum[t] = _mm512_add_epi32(hsum[t], _mm512_mullo_epi32(hi_sum, sc_hi));
      }
    }
    // hsum = 16 x sum_j sc_j * dot_j over the high-nibble sub-blocks: |.| <= 16 x 4 x 63 x
    // (32 x 15 x 127) < 2^28, and a multiple of 16, so the shift is exact.
    for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_srai_epi32(hsum[t], 4));
    // msum by VPDPWSSD, two sub-blocks per instruction: each lane's int16 pair (mn_2p, mn_2p+1)
    // of its row times the pair of sub-block sums (|bsum| <= 32 x 127 fits int16), in place of
    // a VPMULLD and an add per sub-block. Integer sums, so the same msum.
    for (int p = 0; p < 4; ++p) {
      const __m128i m0 = _mm_load_si128(reinterpret_cast<const __m128i*>(mn + 32 * p));
      const __m128i m1 = _mm_load_si128(reinterpret_cast<const __m128i*>(mn + 32 * p + 16));
      const __m512i m = _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(m0, m1), _mm_unpacklo_epi8(m0, m1)));
      for (int t = 0; t < T; ++t) {
        const int16_t* bs = ab[t][s].bsums + 4 * p;
        const uint32_t lo = uint16_t(bs[0] + bs[1]), hi = uint16_t(bs[2] + bs[3]);
        msum[t] = _mm512_dpwssd_epi32(msum[t], m, _mm512_set1_epi32(int32_t(lo | hi << 16)));
      }
    }
    const __m512 sd = Scales(d), smin = Scales(dmin);
    for (int t = 0; t < T; ++t) {
      const __m512 da = _mm512_set1_ps(ab[t][s].d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(sd, da), _mm512_cvtepi32_ps(isum[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(smin, da), _mm512_cvtepi32_ps(msum[t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) Store(out[t], valid, acc[t], false);
}

// Q6_K against Q8_K activations: per super-block and row, isum = sum_g scale_g * (dot_g -
// 32 * bsum_g) over 16 groups of 16 (the -32 offset folded into the accumulator's start), then
// d * da * isum. The 6-bit values are rebuilt per chunk from a nibble and a 2-bit field.
template <int T>
inline void Q6KGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                     int64_t valid, const PrefetchPlan* prefetch) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const uint8_t* lo = u + l.q_off;
    const uint8_t* hi = u + l.qh_off;
    const auto* sc = reinterpret_cast<const int8_t*>(u + l.sc_off);
    const int8_t* x[T];
    for (int t = 0; t < T; ++t) x[t] = ab[t][s].qs;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    // A loop, not unrolled: fully unrolled (each chunk's nibble and shift constant) it ran
    // 0.72x the time L2-resident but 1.13x streaming an 80 MB matrix from DRAM
    // (BM_GemvPackedMulti/dram_Q6_K, n = 1), and decode streams from DRAM.
#pragma GCC unroll 1
    for (int grp16 = 0; grp16 < 16; ++grp16) {
      __m512i dot[T];
      for (int t = 0; t < T; ++t) dot[t] = _mm512_set1_epi32(-32 * int32_t(ab[t][s].bsums[grp16]));
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const int c = 4 * grp16 + i;
        const __m512i raw = _mm512_load_si512(lo + size_t(c % 32) * 64);
        const __m512i nib = c < 32 ? _mm512_and_si512(raw, low4) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        const __m512i hb = _mm512_load_si512(hi + size_t(c % 16) * 64);
        __m512i top;
        switch (c / 16) {
          case 0: top = _mm512_slli_epi16(hb, 4); break;
          case 1: top = _mm512_slli_epi16(hb, 2); break;
          case 2: top = hb; break;
          default: top = _mm512_srli_epi16(hb, 2); break;
        }
        const __m512i qv = _mm512_or_si512(nib, _mm512_and_si512(top, bits45));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) dot[t] = _mm512_dpbusd_epi32(dot[t], qv, _mm512_set1_epi32(Dword(x[t] + 4 * c)));
      }
      const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * grp16)));
      for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], scale));
    }
    const __m512 sd = Scales(d);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(sd, _mm512_set1_ps(ab[t][s].d)), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) Store(out[t], valid, acc[t], false);
}

// IQ4_XS against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j over 8 sub-blocks of 32 (sc_j = ls - 32, signed), then
// d * da * isum. Each sub-block is an IQ4_NL block: the codebook stored + 128 (BiasedBook) for
// VPDPBUSD, the bias undone by starting the dot at -128 x the sub-block's activation sum
// (bsums). |dot_j| <= 32 x 128 x 127, so |isum| <= 8 x 32 x 520192 < 2^31.
template <int T>
inline void IQ4XSGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                       int64_t valid, const PrefetchPlan* prefetch) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i book = BiasedBook<kBookIQ4NL>();
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const uint8_t* q = u + l.q_off;
    const auto* sc = reinterpret_cast<const int8_t*>(u + l.sc_off);
    const int8_t* x[T];
    for (int t = 0; t < T; ++t) x[t] = ab[t][s].qs;
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      // Two chains per token (low and high nibbles) when there are few tokens to interleave.
      constexpr int kChains = T >= 3 ? 1 : 2;
      __m512i dot[T][kChains];
      for (int t = 0; t < T; ++t) {
        dot[t][0] = _mm512_set1_epi32(-128 * (int32_t(ab[t][s].bsums[2 * j]) + int32_t(ab[t][s].bsums[2 * j + 1])));
        if (kChains == 2) dot[t][kChains - 1] = _mm512_setzero_si512();
      }
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i raw = _mm512_load_si512(q + size_t(4 * j + c) * 64);
        const __m512i lo = _mm512_shuffle_epi8(book, _mm512_and_si512(raw, low4));
        const __m512i hi = _mm512_shuffle_epi8(book, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          dot[t][0] = _mm512_dpbusd_epi32(dot[t][0], lo, _mm512_set1_epi32(Dword(x[t] + 32 * j + 4 * c)));
          dot[t][kChains - 1] =
              _mm512_dpbusd_epi32(dot[t][kChains - 1], hi, _mm512_set1_epi32(Dword(x[t] + 32 * j + 16 + 4 * c)));
        }
      }
      const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * j)));
      for (int t = 0; t < T; ++t) {
        const __m512i dj = kChains == 2 ? _mm512_add_epi32(dot[t][0], dot[t][kChains - 1]) : dot[t][0];
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dj, scale));
      }
    }
    const __m512 sd = Scales(d);
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(sd, _mm512_set1_ps(ab[t][s].d)), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) Store(out[t], valid, acc[t], false);
}

struct Groups {  // this ISA's pieces of the shared drivers (PackedKernels, packed_layout.h)
  template <typename F>
  static void TokenBlocks(int32_t n, F&& f) {
    ForTokenBlocks(n, std::forward<F>(f));
  }
  template <int T>
  static void Q4K(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                  int64_t valid, const PrefetchPlan* prefetch) {
    Q4KGroup<T>(l, grp, ab, out, valid, prefetch);
  }
  template <int T>
  static void Q6K(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                  int64_t valid, const PrefetchPlan* prefetch) {
    Q6KGroup<T>(l, grp, ab, out, valid, prefetch);
  }
  template <int T>
  static void IQ4XS(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                    int64_t valid, const PrefetchPlan* prefetch) {
    IQ4XSGroup<T>(l, grp, ab, out, valid, prefetch);
  }
  template <int kMaxN, bool kEight, bool kMin, bool kHigh, int kBook = kBookNone>
  static void Legacy(const PackedLayout& l, const uint8_t* packed, int64_t g0, int64_t g1, int64_t rows,
                     const uint8_t* const* a, float* const* y, int32_t n) {
    LegacyKernel<kMaxN, kEight, kMin, kHigh, kBook>(l, packed, g0, g1, rows, a, y, n);
  }
};
using Kernels = PackedKernels<Groups>;

}  // namespace

bool GemvPacked(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                float* y) {
  return DispatchPackedGemv<Kernels>(t, k, packed, g0, g1, rows, a, y);
}

bool GemvPackedMulti(GgmlType t, int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows,
                     const void* const* a, float* const* y, int32_t n) {
  return DispatchPackedGemvMulti<Kernels>(t, k, packed, g0, g1, rows, a, y, n);
}

}  // namespace zf::quant::avx512

#endif  // x86

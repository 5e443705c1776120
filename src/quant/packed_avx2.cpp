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
#include <type_traits>
#include <utility>

#include "quant/avx2_inline.h"
#include "quant/blocks.h"
#include "quant/packed.h"
#include "quant/packed_layout.h"

namespace zf::quant::avx2 {
namespace {

// The hardware F16 -> F32 conversion, for StageActivationsWith (packed_layout.h).
inline float F16C(uint16_t h) { return _cvtsh_ss(h); }

constexpr int64_t kHalf = 8;  // rows per 256-bit half of a group

inline __m256i Load(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }

// 8 F16 values (one half's rows) as floats.
inline __m256 Scales8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}

// MXFP4: 8 rows' E8M0 bytes as 2^(e - 128), bit for bit E8M0ToFp32Half (blocks.h): (e - 1)
// in the exponent field, or for e = 0 and 1 the subnormals 0x200000 << e; the larger of the
// two is the right one (equal at e = 2).
inline __m256 E8M0Scales8(const uint8_t* p) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i normal = _mm256_sub_epi32(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00800000));
  const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), _mm256_min_epu32(e, _mm256_set1_epi32(2)));
  return _mm256_castsi256_ps(_mm256_max_epi32(normal, small));
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

// The kernels below run one token (GemvPacked) or a batch of them (GemvPackedMulti) with the
// same code, as the AVX-512 ones do: per 16-row group, tokens go in blocks of up to kTokens
// sharing each chunk's loads and unpacking; a token's float accumulation is written once, in
// the loops over t, so it is the same sequence of operations whatever the block size. The
// int16 partial sums keep the single-token grouping (their bounds), so every integer is exact.
// Never write an add of a multiply (_mm*_add_ps(a, _mm*_mul_ps(b, c))): GCC contracts a multiply
// feeding an add (-ffp-contract=fast is its default) into an FMA, and a contraction it makes
// in one instantiation and not another would break the invariance (a test of it,
// Packed.MultiTokenProductIsBitIdenticalToOneTokenAtATime, missed a change hidden that way).
constexpr int kTokens = 2;  // 16 ymm registers

// Calls f(std::integral_constant<int, T>, i) for tokens [i, i + T) covering [0, n).
template <typename F>
inline void ForTokenBlocks(int32_t n, F&& f) {
  int32_t i = 0;
  for (; n - i >= kTokens; i += kTokens) f(std::integral_constant<int, kTokens>{}, i);
  if (n - i == 1) f(std::integral_constant<int, 1>{}, i);
}

// Blocks of several tokens also prefetch into L2 farther ahead (packed_avx512.cpp,
// PrefetchUnit: the slower stream of a token block otherwise fell far below the read bandwidth).
constexpr size_t kFarAhead = 32768;
template <int T>
inline void PrefetchUnit(const PrefetchPlan& plan, const uint8_t* u, size_t bytes) {
  PrefetchAhead(plan, u, bytes);
  if (T > 1) {
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(u + kFarAhead + off, 0, 2);
  }
}

inline int32_t Dword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One half's int32 dots of a Q8_0 block (8 chunks of 4 elements) for T tokens. The bias is
// flipped back (q = stored ^ 0x80) and |q| x sign(a, q) keeps VPMADDUBSW exact: pairs <= 2 x
// 128 x 127.
template <int T>
inline void DotQ8(const uint8_t* qb, const StagedActivations* const* st, int64_t b, __m256i* dot) {
  const __m256i bias = _mm256_set1_epi8(char(0x80)), ones = _mm256_set1_epi16(1);
  __m256i s0[T], s1[T];
  for (int t = 0; t < T; ++t) s0[t] = s1[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 8; c += 2) {
    const __m256i w0 = _mm256_xor_si256(Load(qb + c * 64), bias);
    const __m256i w1 = _mm256_xor_si256(Load(qb + (c + 1) * 64), bias);
    const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
    for (int t = 0; t < T; ++t) {
      const int32_t* x = st[t]->q + b * 8;
      const __m256i p0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(_mm256_set1_epi32(x[c]), w0));
      const __m256i p1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(_mm256_set1_epi32(x[c + 1]), w1));
      s0[t] = _mm256_add_epi32(s0[t], _mm256_madd_epi16(p0, ones));
      s1[t] = _mm256_add_epi32(s1[t], _mm256_madd_epi16(p1, ones));
    }
  }
  for (int t = 0; t < T; ++t) dot[t] = _mm256_add_epi32(s0[t], s1[t]);
}

// One half's int32 dots of a 4/5-bit block for T tokens: low nibbles pair with elements
// 4c..4c+3, high nibbles with 16+4c..; 5-bit quants <= 31, so each int16 pair is <= 2 x 31 x
// 127 = 7874 and two chunks' (four products') pairs add up to at most 31496 before VPMADDWD.
// kCorr: the format has a fixed offset (Q4_0, Q5_0), undone by corr = -offset x sum of quants.
template <bool kHigh, bool kCorr, int T>
inline void DotQ4(const uint8_t* qb, const uint32_t* hm, const StagedActivations* const* st, int64_t b,
                  __m256i* dot) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  if (!kHigh) {  // 4-bit quants <= 15: all 8 products fit one int16 sum (8 x 2 x 15 x 127 = 30480),
                 // one VPMADDWD (+4% L2-resident Q4_1 on Zen 3)
    __m256i s16[T];
    for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = Load(qb + c * 64);
      const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      for (int t = 0; t < T; ++t) {
        const int32_t* x = st[t]->q + b * 8;
        s16[t] = _mm256_add_epi16(s16[t], _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(x[c])),
                                                           _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x[4 + c]))));
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256i s = _mm256_madd_epi16(s16[t], ones);
      dot[t] = kCorr ? _mm256_add_epi32(s, _mm256_set1_epi32(st[t]->corr[b])) : s;
    }
    return;
  }
  __m256i s32[T];
  for (int t = 0; t < T; ++t) s32[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {  // chunks 2h, 2h+1: one int16 partial sum
    __m256i acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int c = 2 * h; c < 2 * h + 2; ++c) {
      const __m256i raw = Load(qb + c * 64);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, low4), FifthBits(hm[2 * c]));  // mask c, this half
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4), FifthBits(hm[2 * (4 + c)]));
      for (int t = 0; t < T; ++t) {
        const int32_t* x = st[t]->q + b * 8;
        acc[t] = _mm256_add_epi16(acc[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(x[c])));
        acc[t] = _mm256_add_epi16(acc[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x[4 + c])));
      }
    }
    for (int t = 0; t < T; ++t) s32[t] = _mm256_add_epi32(s32[t], _mm256_madd_epi16(acc[t], ones));
  }
  for (int t = 0; t < T; ++t) dot[t] = kCorr ? _mm256_add_epi32(s32[t], _mm256_set1_epi32(st[t]->corr[b])) : s32[t];
}

// One half's int32 dots of a codebook block (IQ4_NL, MXFP4) for T tokens: the nibbles looked
// up in the signed codebook (VPSHUFB), then |w| x sign(a, w) as for Q8_0. IQ4_NL's values
// reach 127, so each VPMADDUBSW's pairs (<= 2 x 127 x 127) go to int32 at once; MXFP4's stay
// <= 12, so all 8 products add in int16 (8 x 2 x 12 x 127 = 24384) before one VPMADDWD.
template <int kBook, int T>
inline void DotBook(const uint8_t* qb, const StagedActivations* const* st, int64_t b, __m256i* dot) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const int8_t* v = kBook == kBookMXFP4 ? kValuesMXFP4 : kValuesIQ4NL;
  alignas(16) int8_t tbl[16];
  for (int i = 0; i < 16; ++i) tbl[i] = v[i];
  const __m256i book = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(tbl)));
  __m256i s[T];
  for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i raw = Load(qb + c * 64);
    const __m256i lo = _mm256_shuffle_epi8(book, _mm256_and_si256(raw, low4));
    const __m256i hi = _mm256_shuffle_epi8(book, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
    const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
    for (int t = 0; t < T; ++t) {
      const int32_t* x = st[t]->q + b * 8;
      const __m256i pl = _mm256_maddubs_epi16(alo, _mm256_sign_epi8(_mm256_set1_epi32(x[c]), lo));
      const __m256i ph = _mm256_maddubs_epi16(ahi, _mm256_sign_epi8(_mm256_set1_epi32(x[4 + c]), hi));
      if (kBook == kBookMXFP4) {
        s[t] = _mm256_add_epi16(s[t], _mm256_add_epi16(pl, ph));
      } else {
        s[t] = _mm256_add_epi32(s[t], _mm256_add_epi32(_mm256_madd_epi16(pl, ones), _mm256_madd_epi16(ph, ones)));
      }
    }
  }
  for (int t = 0; t < T; ++t) dot[t] = kBook == kBookMXFP4 ? _mm256_madd_epi16(s[t], ones) : s[t];
}

// One half's (rows 8h..8h+7) float step of a block for T tokens: the same operations, in the
// same order, whatever T and whichever loop calls it.
template <bool kEight, bool kMin, bool kHigh, int kBook, int T>
inline void LegacyHalf(const BlockFields& f, int64_t b, int h, const StagedActivations* const* st, __m256* acc) {
  const auto* hm = reinterpret_cast<const uint32_t*>(f.h);
  __m256i dot[T];
  if (kEight) {
    DotQ8<T>(f.q + 32 * h, st, b, dot);
  } else if (kBook != kBookNone) {
    DotBook<kBook, T>(f.q + 32 * h, st, b, dot);
  } else {
    DotQ4<kHigh, !kMin, T>(f.q + 32 * h, hm + h, st, b, dot);
  }
  const __m256 sd = kBook == kBookMXFP4 ? E8M0Scales8(reinterpret_cast<const uint8_t*>(f.d) + kHalf * h)
                                        : Scales8(f.d + kHalf * h);
  for (int t = 0; t < T; ++t) {
    const __m256 scale = _mm256_mul_ps(sd, _mm256_set1_ps(st[t]->d[b]));
    acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot[t]), acc[t]);
    if (kMin) acc[t] = _mm256_fmadd_ps(Scales8(f.m + kHalf * h), _mm256_set1_ps(st[t]->s[b]), acc[t]);
  }
}

// One group, blocks [b0, b0 + n) of the staging pass, for T tokens. Up to 2 tokens both halves
// go in one straight block (+3-7% in L2-resident runs on Zen 3: fewer spills); blocks of 4
// tokens take the halves in two passes over the group's blocks (the second from L1), so only 4
// float sums stay live in the 16 registers. Each half's sums are independent of the other's,
// so both forms give the same bits.
template <bool kEight, bool kMin, bool kHigh, int kBook, int T>
inline void LegacyGroup(const PackedLayout& l, const uint8_t* grp, int64_t b0, int64_t n,
                        const StagedActivations* const* st, float* const* out, int64_t valid, bool add, const PrefetchPlan* prefetch) {
  constexpr bool kSplitHalves = T > 2;
  auto far_prefetch = [&](const BlockFields& f, auto j) {  // see PrefetchUnit
    if (T > 1 && decltype(j)::value == 0 && prefetch != nullptr) {
      const uint8_t* u = reinterpret_cast<const uint8_t*>(f.d) - l.d_off;
      for (size_t off = 0; off < l.unit; off += 64) __builtin_prefetch(u + kFarAhead + off, 0, 2);
    }
  };
  if (kSplitHalves) {
#pragma GCC unroll 1
    for (int h = 0; h < 2; ++h) {
      __m256 acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
      ForBlocks32(
          l, grp, b0, n,
          [&](const BlockFields& f, int64_t b, auto j) {
            if (h == 0) far_prefetch(f, j);
            LegacyHalf<kEight, kMin, kHigh, kBook, T>(f, b, h, st, acc);
          },
          h == 0 ? prefetch : nullptr);
      for (int t = 0; t < T; ++t) Store8(out[t] + kHalf * h, valid - kHalf * h, acc[t], add);
    }
    return;
  }
  __m256 acc[2][T];
  for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
  ForBlocks32(
      l, grp, b0, n,
      [&](const BlockFields& f, int64_t b, auto j) {
        far_prefetch(f, j);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) LegacyHalf<kEight, kMin, kHigh, kBook, T>(f, b, h, st, acc[h]);
      },
      prefetch);
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) Store8(out[t] + kHalf * h, valid - kHalf * h, acc[h][t], add);
  }
}

// Blocks of up to 4 tokens for the 4-bit 32-element formats (LegacyGroup), the rest as
// ForTokenBlocks: SmolLM2's Q4_1 ffn_up, 16 tokens, one thread, in 0.86-0.88x the time of 2-token
// blocks. Q5_0 (the fifth bits' three constants) and Q8_0 (two chains) stay at 2: Gemma 3's
// Q5_0 ffn_up took 1.02-1.04x the time at 4.
template <bool kWide, typename F>
inline void ForLegacyTokenBlocks(int32_t n, F&& f) {
  int32_t i = 0;
  if (kWide) {
    for (; n - i >= 4; i += 4) f(std::integral_constant<int, 4>{}, i);
  }
  ForTokenBlocks(n - i, [&](auto tc, int32_t j) { f(tc, i + j); });
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
    for (int32_t i = 0; i < n; ++i) StageActivationsWith(F16C, a[i], kMin, b0, nbk, kEight ? 0 : l.offset, &st[i]);
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* grp = packed + size_t(g) * l.group;
      ForLegacyTokenBlocks<!kEight && !kHigh>(n, [&](auto tc, int32_t i) {
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
// d * da * isum - dmin * da * msum. A sub-block's 8 chunks add in int16: nibbles <= 15, so
// 8 x 2 x 15 x 127 = 30480 at most.
template <int T>
__attribute__((noinline)) void Q4KGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                     int64_t valid, const PrefetchPlan* prefetch) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const auto* dmin = reinterpret_cast<const uint16_t*>(u + l.dmin_off);
    const uint8_t* q = u + l.q_off;
    const uint8_t* sc = u + l.sc_off;
    const uint8_t* mn = u + l.mn_off;
    const int8_t* x[T];
    int32_t bsum[T][8];  // (bsums[2j], bsums[2j+1]) as one int16 pair
    for (int t = 0; t < T; ++t) {
      x[t] = ab[t][s].qs;
      for (int j = 0; j < 8; ++j) {
        bsum[t][j] = int32_t(uint16_t(ab[t][s].bsums[2 * j])) | int32_t(uint32_t(uint16_t(ab[t][s].bsums[2 * j + 1])) << 16);
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m256i isum[T];
      for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles)
        __m256i lo[T], hi[T];
        for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          const __m256i raw = Load(q + size_t(8 * c + i) * 64 + 32 * h);
          const __m256i nl = _mm256_and_si256(raw, low4), nh = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
          for (int t = 0; t < T; ++t) {
            lo[t] = _mm256_add_epi16(lo[t], _mm256_maddubs_epi16(nl, _mm256_set1_epi32(Dword(x[t] + 4 * (16 * c + i)))));
            hi[t] = _mm256_add_epi16(hi[t], _mm256_maddubs_epi16(nh, _mm256_set1_epi32(Dword(x[t] + 4 * (16 * c + 8 + i)))));
          }
        }
        const __m256i sl = PairU8(sc + 32 * c + 8 * h), sh = PairU8(sc + 32 * c + 16 + 8 * h);
        for (int t = 0; t < T; ++t) {
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(lo[t], sl));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(hi[t], sh));
        }
      }
      __m256i msum[T];
      for (int t = 0; t < T; ++t) msum[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i m = PairU8(mn + 16 * j + 8 * h);
        for (int t = 0; t < T; ++t) msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(m, _mm256_set1_epi32(bsum[t][j])));
      }
      const __m256 sd = Scales8(d + kHalf * h), smin = Scales8(dmin + kHalf * h);
      for (int t = 0; t < T; ++t) {
        const __m256 da = _mm256_set1_ps(ab[t][s].d);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(sd, da), _mm256_cvtepi32_ps(isum[t]), acc[t][h]);
        acc[t][h] = _mm256_fnmadd_ps(_mm256_mul_ps(smin, da), _mm256_cvtepi32_ps(msum[t]), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) Store8(out[t] + kHalf * h, valid - kHalf * h, acc[t][h], false);
  }
}

// One quarter F of a Q6_K super-block (chunks 16F..16F+15, scale groups 4F..4F+3) for one
// half and T tokens: the nibble (low for F < 2, high otherwise) and the 2-bit field's shift are
// compile-time, so the chunk loop has no branches. Adds sum_g scale_g * dot_g to isum and
// sum_g scale_g * bsum_g to corr.
template <int F, int T>
inline void Q6KQuarter(const uint8_t* lo, const uint8_t* hi, const uint8_t* sc, const int8_t* const* x,
                       const BlockQ8_K* const* ab, int64_t s, __m256i* isum, __m256i* corr) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
#pragma GCC unroll 4
  for (int gg = 0; gg < 4; ++gg) {
    __m256i p16[T][2];
#pragma GCC unroll 2
    for (int pair = 0; pair < 2; ++pair) {
      for (int t = 0; t < T; ++t) p16[t][pair] = _mm256_setzero_si256();
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
        for (int t = 0; t < T; ++t) {
          p16[t][pair] = _mm256_add_epi16(p16[t][pair], _mm256_maddubs_epi16(qv, _mm256_set1_epi32(Dword(x[t] + 4 * c))));
        }
      }
    }
    const int grp16 = 4 * F + gg;
    const __m256i scale = PairI8(sc + 16 * grp16);
    for (int t = 0; t < T; ++t) {
      isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p16[t][0], scale),
                                                           _mm256_madd_epi16(p16[t][1], scale)));
      corr[t] = _mm256_add_epi32(corr[t], _mm256_madd_epi16(scale, _mm256_set1_epi32(int32_t(uint16_t(ab[t][s].bsums[grp16])))));
    }
  }
}

// Q6_K against Q8_K activations: per super-block and row, isum = sum_g scale_g * (dot_g -
// 32 * bsum_g) over 16 groups of 16 elements (4 chunks each). Quants <= 63, so one chunk's
// int16 pairs are <= 16002 and two chunks add before VPMADDWD. The -32 offset is applied once
// per super-block: sum_g scale_g * bsum_g, times 32.
template <int T>
__attribute__((noinline)) void Q6KGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab, float* const* out,
                     int64_t valid, const PrefetchPlan* prefetch) {
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const uint8_t* lo = u + l.q_off;
    const uint8_t* hi = u + l.qh_off;
    const uint8_t* sc = u + l.sc_off;
    const int8_t* x[T];
    for (int t = 0; t < T; ++t) x[t] = ab[t][s].qs;
    for (int h = 0; h < 2; ++h) {
      __m256i isum[T], corr[T];
      for (int t = 0; t < T; ++t) isum[t] = corr[t] = _mm256_setzero_si256();
      const uint8_t* lh = lo + 32 * h;
      const uint8_t* hh = hi + 32 * h;
      const uint8_t* sh = sc + 8 * h;
      Q6KQuarter<0, T>(lh, hh, sh, x, ab, s, isum, corr);
      Q6KQuarter<1, T>(lh, hh, sh, x, ab, s, isum, corr);
      Q6KQuarter<2, T>(lh, hh, sh, x, ab, s, isum, corr);
      Q6KQuarter<3, T>(lh, hh, sh, x, ab, s, isum, corr);
      const __m256 sd = Scales8(d + kHalf * h);
      for (int t = 0; t < T; ++t) {
        const __m256i v = _mm256_sub_epi32(isum[t], _mm256_slli_epi32(corr[t], 5));
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(sd, _mm256_set1_ps(ab[t][s].d)), _mm256_cvtepi32_ps(v), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) Store8(out[t] + kHalf * h, valid - kHalf * h, acc[t][h], false);
  }
}

// IQ4_XS against Q8_K activations, in integers as the format defines it: per super-block and
// row, isum = sum_j sc_j * dot_j over 8 sub-blocks of 32 (sc_j = ls - 32, signed), then
// d * da * isum. Each sub-block is an IQ4_NL block (DotBook's sign trick): a chunk's VPMADDUBSW
// pairs (<= 2 x 127 x 127) meet the sub-block's scale pair in the VPMADDWD that widens them
// (|.| <= 2 x 32 x 32258 per lane and chunk), so isum <= 8 x 8 x 2.1e6 < 2^31.
template <int T>
__attribute__((noinline)) void IQ4XSGroup(const PackedLayout& l, const uint8_t* grp, const BlockQ8_K* const* ab,
                                          float* const* out, int64_t valid, const PrefetchPlan* prefetch) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  alignas(16) int8_t tbl[16];
  for (int i = 0; i < 16; ++i) tbl[i] = kValuesIQ4NL[i];
  const __m256i book = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(tbl)));
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < l.nb; ++s) {
    const uint8_t* u = grp + l.UnitAt(s);
    if (prefetch != nullptr) PrefetchUnit<T>(*prefetch, u, l.unit);
    const auto* d = reinterpret_cast<const uint16_t*>(u + l.d_off);
    const uint8_t* q = u + l.q_off;
    const uint8_t* sc = u + l.sc_off;
    const int8_t* x[T];
    for (int t = 0; t < T; ++t) x[t] = ab[t][s].qs;
    for (int h = 0; h < 2; ++h) {
      __m256i isum[T];
      for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i scale = PairI8(sc + 16 * j + 8 * h);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m256i raw = Load(q + size_t(4 * j + c) * 64 + 32 * h);
          const __m256i lo = _mm256_shuffle_epi8(book, _mm256_and_si256(raw, low4));
          const __m256i hi = _mm256_shuffle_epi8(book, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
          const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
          for (int t = 0; t < T; ++t) {
            const __m256i pl = _mm256_maddubs_epi16(alo, _mm256_sign_epi8(_mm256_set1_epi32(Dword(x[t] + 32 * j + 4 * c)), lo));
            const __m256i ph =
                _mm256_maddubs_epi16(ahi, _mm256_sign_epi8(_mm256_set1_epi32(Dword(x[t] + 32 * j + 16 + 4 * c)), hi));
            isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(pl, scale), _mm256_madd_epi16(ph, scale)));
          }
        }
      }
      const __m256 sd = Scales8(d + kHalf * h);
      for (int t = 0; t < T; ++t) {
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(sd, _mm256_set1_ps(ab[t][s].d)), _mm256_cvtepi32_ps(isum[t]), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) Store8(out[t] + kHalf * h, valid - kHalf * h, acc[t][h], false);
  }
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

}  // namespace zf::quant::avx2

#endif  // x86

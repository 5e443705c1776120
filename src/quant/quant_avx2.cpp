// AVX2 + FMA + F16C kernels for the hot quant dot products and activation quantizers.
//
// Compiled with -mavx2 -mfma -mf16c (file name suffix) and only called after the run-time CPU
// check in quant.cpp. Integer parts are exact, so results differ from the scalar reference only
// by float summation order. The quantizers perform the reference's float operations element by
// element and are bit-identical to it.
//
// The signed int8 products use the maddubs sign trick (|w| * (a * sign(w))), valid because the
// activation quants never hold -128 (the quantizers produce [-127, 127]); weights may be -128.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace zf::quant::avx2 {
namespace {

inline float H(uint16_t h) { return _cvtsh_ss(h); }

inline float HsumF32(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int HsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline float HmaxF32(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i Combine(__m128i lo, __m128i hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

// 8 int32 lanes, each the sum of 4 products of signed bytes w * a (a must not hold -128).
inline __m256i DotI8(__m256i w, __m256i a) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// 8 int32 lanes of unsigned-byte u times signed-byte a (u <= 63, so no int16 saturation).
inline __m256i DotU8I8(__m256i u, __m256i a) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1));
}

// 16 bytes of packed nibbles -> 32 bytes: the low nibbles (elements 0-15), then the high ones.
inline __m256i UnpackNibbles16(const uint8_t* p) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_and_si256(Combine(q, _mm_srli_epi16(q, 4)), _mm256_set1_epi8(0x0F));
}

// Byte j = 0xFF where bit j of the little-endian 32-bit qh is set, else 0.
inline __m256i ExpandBits32(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                         0x0101010101010101LL, 0x0000000000000000LL);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuf);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Offset (m) of a weight block and sum field (s) of an activation block; the blocks without
// them return 0 and are never asked (kHasMin is false for them).
template <typename B> inline uint16_t MinOf(const B&) { return 0; }
inline uint16_t MinOf(const BlockQ4_1& b) { return b.m; }
inline uint16_t MinOf(const BlockQ5_1& b) { return b.m; }
template <typename B> inline uint16_t SumOf(const B&) { return 0; }
inline uint16_t SumOf(const BlockQ8_1& b) { return b.s; }

}  // namespace

float VecDotF32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // 4 independent accumulators hide the FMA latency
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
  float sum = HsumF32(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

namespace {
inline __m256 LoadF16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 LoadBF16x8(const uint16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
template <__m256 (*Load)(const uint16_t*), float (*ToF32)(uint16_t)>
float VecDotHalf(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(Load(x + i), Load(y + i), acc0);
    acc1 = _mm256_fmadd_ps(Load(x + i + 8), Load(y + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(Load(x + i + 16), Load(y + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(Load(x + i + 24), Load(y + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(Load(x + i), Load(y + i), acc0);
  float sum = HsumF32(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += ToF32(x[i]) * ToF32(y[i]);
  return sum;
}
}  // namespace

float VecDotF16(int64_t n, const void* w, const void* a) {
  return VecDotHalf<LoadF16x8, Fp16ToFp32>(n, w, a);
}

float VecDotBF16(int64_t n, const void* w, const void* a) {
  return VecDotHalf<LoadBF16x8, Bf16ToFp32>(n, w, a);
}

namespace {

// Shared loop of the 32-element formats: acc += (d_w * d_a) * BlockDot(w, a) over the blocks,
// two blocks per step into two accumulators (one FMA chain per block would be latency-bound),
// plus m * s for the formats with an offset (Q4_1/Q5_1 against Q8_1).
template <typename WBlock, typename ABlock, __m256i (*BlockDot)(const WBlock&, const ABlock&), bool kHasMin>
inline float DotBlocks32(int64_t n, const void* w, const void* a) {
  const WBlock* x = static_cast<const WBlock*>(w);
  const ABlock* y = static_cast<const ABlock*>(a);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summs0 = 0.0f, summs1 = 0.0f;
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const __m256 p0 = _mm256_cvtepi32_ps(BlockDot(x[i], y[i]));
    const __m256 p1 = _mm256_cvtepi32_ps(BlockDot(x[i + 1], y[i + 1]));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i].d) * H(y[i].d)), p0, acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i + 1].d) * H(y[i + 1].d)), p1, acc1);
    if (kHasMin) {
      summs0 += H(MinOf(x[i])) * H(SumOf(y[i]));
      summs1 += H(MinOf(x[i + 1])) * H(SumOf(y[i + 1]));
    }
  }
  for (; i < nb; ++i) {
    const __m256 p = _mm256_cvtepi32_ps(BlockDot(x[i], y[i]));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i].d) * H(y[i].d)), p, acc0);
    if (kHasMin) summs0 += H(MinOf(x[i])) * H(SumOf(y[i]));
  }
  return HsumF32(_mm256_add_ps(acc0, acc1)) + (summs0 + summs1);
}

inline __m256i DotQ8_0(const BlockQ8_0& x, const BlockQ8_0& y) { return DotI8(Load256(x.qs), Load256(y.qs)); }

inline __m256i DotQ4_0(const BlockQ4_0& x, const BlockQ8_0& y) {
  return DotI8(_mm256_sub_epi8(UnpackNibbles16(x.qs), _mm256_set1_epi8(8)), Load256(y.qs));
}

inline __m256i DotQ4_1(const BlockQ4_1& x, const BlockQ8_1& y) {
  return DotU8I8(UnpackNibbles16(x.qs), Load256(y.qs));
}

// The 5-bit quants of a Q5 block as bytes in [0, 31].
inline __m256i Q5Bytes(const uint8_t* qs, const uint8_t* qh) {
  return _mm256_or_si256(UnpackNibbles16(qs), _mm256_and_si256(ExpandBits32(qh), _mm256_set1_epi8(0x10)));
}

inline __m256i DotQ5_0(const BlockQ5_0& x, const BlockQ8_0& y) {
  return DotI8(_mm256_sub_epi8(Q5Bytes(x.qs, x.qh), _mm256_set1_epi8(16)), Load256(y.qs));
}

inline __m256i DotQ5_1(const BlockQ5_1& x, const BlockQ8_1& y) {
  return DotU8I8(Q5Bytes(x.qs, x.qh), Load256(y.qs));
}

}  // namespace

// Tiles of 2 weight rows x 4 tokens: |w| is computed once per weight block, each activation
// block is loaded once for both rows, and block scales are converted to float once per tile
// (8 independent accumulators keep the FMA pipes busy).
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
              size_t a_stride, int64_t n_tok, float* y, int64_t y_stride) {
  const int64_t nb = k / kQK;
  const auto* wbase = static_cast<const uint8_t*>(w);
  const auto* abase = static_cast<const uint8_t*>(a);
  const __m256i ones = _mm256_set1_epi16(1);
  constexpr int64_t kMaxBlocks = 512;  // scale staging on the stack; longer rows use VecDot
  if (nb > kMaxBlocks) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < n_tok; ++t) {
        y[t * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, abase + size_t(t) * a_stride);
      }
    }
    return;
  }
  float ad[4][kMaxBlocks];
  float wd[2][kMaxBlocks];
  int64_t t = 0;
  for (; t + 4 <= n_tok; t += 4) {
    const BlockQ8_0* at[4];
    for (int j = 0; j < 4; ++j) {
      at[j] = reinterpret_cast<const BlockQ8_0*>(abase + size_t(t + j) * a_stride);
      for (int64_t b = 0; b < nb; ++b) ad[j][b] = H(at[j][b].d);
    }
    int64_t r = 0;
    for (; r + 2 <= rows; r += 2) {
      const BlockQ8_0* wr[2];
      for (int i = 0; i < 2; ++i) {
        wr[i] = reinterpret_cast<const BlockQ8_0*>(wbase + size_t(r + i) * w_stride);
        for (int64_t b = 0; b < nb; ++b) wd[i][b] = H(wr[i][b].d);
      }
      __m256 acc[2][4];
      for (auto& row : acc) for (__m256& v : row) v = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        const __m256i w0 = Load256(wr[0][b].qs), w1 = Load256(wr[1][b].qs);
        const __m256i u0 = _mm256_sign_epi8(w0, w0), u1 = _mm256_sign_epi8(w1, w1);
        for (int j = 0; j < 4; ++j) {
          const __m256i aq = Load256(at[j][b].qs);
          const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(aq, w0)), ones);
          const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(aq, w1)), ones);
          acc[0][j] = _mm256_fmadd_ps(_mm256_set1_ps(wd[0][b] * ad[j][b]), _mm256_cvtepi32_ps(p0), acc[0][j]);
          acc[1][j] = _mm256_fmadd_ps(_mm256_set1_ps(wd[1][b] * ad[j][b]), _mm256_cvtepi32_ps(p1), acc[1][j]);
        }
      }
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 4; ++j) y[(t + j) * y_stride + r + i] = HsumF32(acc[i][j]);
      }
    }
    for (; r < rows; ++r) {
      for (int j = 0; j < 4; ++j) {
        y[(t + j) * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, at[j]);
      }
    }
  }
  for (; t < n_tok; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      y[t * y_stride + r] = VecDotQ8_0(k, wbase + size_t(r) * w_stride, abase + size_t(t) * a_stride);
    }
  }
}

float VecDotQ8_0(int64_t n, const void* w, const void* a) {
  return DotBlocks32<BlockQ8_0, BlockQ8_0, DotQ8_0, false>(n, w, a);
}
float VecDotQ4_0(int64_t n, const void* w, const void* a) {
  return DotBlocks32<BlockQ4_0, BlockQ8_0, DotQ4_0, false>(n, w, a);
}
float VecDotQ4_1(int64_t n, const void* w, const void* a) {
  return DotBlocks32<BlockQ4_1, BlockQ8_1, DotQ4_1, true>(n, w, a);
}
float VecDotQ5_0(int64_t n, const void* w, const void* a) {
  return DotBlocks32<BlockQ5_0, BlockQ8_0, DotQ5_0, false>(n, w, a);
}
float VecDotQ5_1(int64_t n, const void* w, const void* a) {
  return DotBlocks32<BlockQ5_1, BlockQ8_1, DotQ5_1, true>(n, w, a);
}

namespace {

// The per-lane min term of a Q4_K/Q5_K block: sum_j m_j * (bsums[2j] + bsums[2j+1]) spread
// over 8 int32 lanes (madd pairs each 16-element bsum with its sub-block's min).
inline __m256i KMinsTerm(const uint8_t* m, const int16_t* bsums) {
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m)));
  const __m256i mins = Combine(_mm_unpacklo_epi16(m16, m16), _mm_unpackhi_epi16(m16, m16));
  return _mm256_madd_epi16(Load256(bsums), mins);
}

inline const uint8_t* QhOf(const BlockQ4_K&) { return nullptr; }
inline const uint8_t* QhOf(const BlockQ5_K& b) { return b.qh; }

// Shared body of Q4_K and Q5_K (Q5_K adds the fifth bit from qh).
template <typename Block, bool kHasQh>
inline float VecDotK4(int64_t n, const Block* x, const BlockQ8_K* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  __m256 acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(x[i].scales, sc, m);
    const int8_t* q8 = y[i].qs;
    const __m256i hbits = kHasQh ? Load256(QhOf(x[i])) : _mm256_setzero_si256();
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {  // 64 elements: sub-blocks 2c (low nibbles) and 2c+1 (high)
      const __m256i q = Load256(x[i].qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if (kHasQh) {  // bit 2c / 2c+1 of each qh byte -> 0x10
        const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c)));
        const __m256i b1 = _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1)));
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b0), b0), bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b1), b1), bit4));
      }
      const __m256i p0 = _mm256_maddubs_epi16(lo, Load256(q8 + 64 * c));
      const __m256i p1 = _mm256_maddubs_epi16(hi, Load256(q8 + 64 * c + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * c])));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * c + 1])));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i].dmin) * y[i].d),
                            _mm256_cvtepi32_ps(KMinsTerm(m, y[i].bsums)), acc_m);
  }
  return HsumF32(acc) - HsumF32(acc_m);
}

}  // namespace

float VecDotQ4_K(int64_t n, const void* w, const void* a) {
  return VecDotK4<BlockQ4_K, false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a));
}

float VecDotQ5_K(int64_t n, const void* w, const void* a) {
  return VecDotK4<BlockQ5_K, true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a));
}

float VecDotQ6_K(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i two = _mm256_set1_epi8(0x30);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    // The -32 offset is applied once per block through the activation sums:
    // sum sc_j * (q - 32) * a = sum sc_j * q * a - 32 * sum_j sc_j * bsums_j.
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
    __m256i sumi = _mm256_slli_epi32(_mm256_madd_epi16(sc16, Load256(y[i].bsums)), 5);
    sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[i].ql + 64 * h;
      const __m256i qh = Load256(x[i].qh + 32 * h);
      const __m256i l0 = Load256(ql);
      const __m256i l1 = Load256(ql + 32);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), two));
      q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), two));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(qh, two));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), two));
      const int8_t* sc = x[i].scales + 8 * h;
      const int8_t* q8 = y[i].qs + 128 * h;
      for (int g = 0; g < 4; ++g) {
        const __m256i p = _mm256_maddubs_epi16(q[g], Load256(q8 + 32 * g));
        // The low 128-bit lane holds sub-block 2g, the high lane sub-block 2g+1.
        const __m256i s = Combine(_mm_set1_epi16(sc[2 * g]), _mm_set1_epi16(sc[2 * g + 1]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(H(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return HsumF32(acc);
}

// ---- activation quantizers ----

namespace {

inline __m256 AbsPs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// roundf semantics (half away from zero), exact: t = trunc(v); t += sign(v) if |v - t| >= 0.5.
inline __m256 RoundHalfAway(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = AbsPs(_mm256_sub_ps(v, t));
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
  const __m256 ge = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(ge, one));
}

// Packs 4 x 8 int32 (each within int8 range) into 32 int8 in element order.
inline __m256i PackI32ToI8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);
  // packs interleaves the 128-bit lanes; restore the order of the 32-bit groups.
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Quantizes one block of 32 to int8 with scale id; returns the sum of the quants.
inline int QuantizeBlock32(const float* x, float id, int8_t* out) {
  const __m256 vid = _mm256_set1_ps(id);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid)));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), PackI32ToI8(q[0], q[1], q[2], q[3]));
  return HsumI32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

inline float AbsMax32(const float* x) {
  __m256 m = AbsPs(_mm256_loadu_ps(x));
  for (int k = 1; k < 4; ++k) m = _mm256_max_ps(m, AbsPs(_mm256_loadu_ps(x + 8 * k)));
  return HmaxF32(m);
}

}  // namespace

void QuantizeQ8_0(const float* x, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = AbsMax32(x) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    QuantizeBlock32(x, id, y[i].qs);
  }
}

void QuantizeQ8_1(const float* x, void* dst, int64_t n) {
  BlockQ8_1* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = AbsMax32(x) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    const int sum = QuantizeBlock32(x, id, y[i].qs);
    y[i].s = Fp32ToFp16(static_cast<float>(sum) * d);
  }
}

void QuantizeQ8_K(const float* x, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    __m256 vmax = _mm256_setzero_ps();
    for (int j = 0; j < kQK_K; j += 8) vmax = _mm256_max_ps(vmax, AbsPs(_mm256_loadu_ps(x + j)));
    const float amax = HmaxF32(vmax);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // The reference takes the signed value of the first element with the largest magnitude.
    float max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(x[j]) == amax) {
        max = x[j];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i lim = _mm256_set1_epi32(127);
    for (int j = 0; j < kQK_K; j += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        // cvtps rounds to nearest even (default MXCSR), like the reference's nearest_int.
        q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * k), vs)), lim);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + j), PackI32ToI8(q[0], q[1], q[2], q[3]));
      y[i].bsums[j / 16] = static_cast<int16_t>(HsumI32(_mm256_add_epi32(q[0], q[1])));
      y[i].bsums[j / 16 + 1] = static_cast<int16_t>(HsumI32(_mm256_add_epi32(q[2], q[3])));
    }
    y[i].d = 1.0f / iscale;
  }
}

void QuantizeF16(const float* src, void* dst, int64_t n) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // vcvtps2ph with RNE: same bits as Fp32ToFp16 for all inputs
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = Fp32ToFp16(src[i]);
}

void DequantizeF16(const void* src, float* dst, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadF16x8(in + i));  // exact conversion
  for (; i < n; ++i) dst[i] = H(in[i]);
}

}  // namespace zf::quant::avx2

#endif  // x86

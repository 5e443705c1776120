// AVX-512 VNNI kernel of the packed prefill GEMM (layout and definition in gemm_packed.h).
//
// Register tile: 16 weight rows (the lanes) x up to 8 tokens. Per G-element group the G/4 weight
// chunks stay in registers (8 for G = 32) while each token's group is consumed: G/4 VPDPBUSD
// with a 32-bit broadcast of the activation bytes into one int32 accumulator (started at the
// token's -c * sum for fixed-offset formats), then one conversion, a multiply and one FMA
// (d * ad), plus one FMA (m * asum) for formats with a free m. That is
// 0.5 float operations per VPDPBUSD instead of 3 in the row-major kernels, and 8 independent
// token chains hide the VPDPBUSD latency. 8 weight + 8 float + 8 int registers + d, m fit in
// the 32 ZMM registers. Results differ from the scalar reference only by float rounding order.
#if defined(__x86_64__) || defined(__i386__)

#include "quant/avx512_intrinsics.h"

#include <cstring>

#include "quant/blocks.h"
#include "quant/gemm_packed.h"

namespace zf::quant::avx512 {
namespace {

constexpr size_t kQ8Block = 34;  // bytes of a Q8_0 block: F16 scale + 32 quants

inline int32_t Load32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int G, int T, bool kOff>
void Tile(const uint8_t* tile, int64_t k, const uint8_t* a, size_t a_stride, const float* ad, const float* asum,
          const int32_t* aoff, float* y, int64_t y_stride, __mmask16 rmask) {
  constexpr int C = G / 4;
  constexpr size_t kGroupBytes = size_t(16 * G + 128);
  const int64_t ng = k / G, nb = k / 32;
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* p = tile + size_t(g) * kGroupBytes;
    __m512i w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) w[c] = _mm512_loadu_si512(p + 64 * c);
    const __m512 d = _mm512_loadu_ps(p + 16 * G);
    const __m512 m = kOff ? _mm512_setzero_ps() : _mm512_loadu_ps(p + 16 * G + 64);
    const int64_t b = (g * G) / 32;
    const uint8_t* ag = a + size_t(b) * kQ8Block + 2 + size_t((g * G) % 32);
    // Fully unrolled so that the T accumulators stay in registers (GCC otherwise interchanges
    // the loops and keeps them in memory).
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const uint8_t* aq = ag + size_t(j) * a_stride;
      const __m512i s0 = kOff ? _mm512_set1_epi32(aoff[j * ng + g]) : _mm512_setzero_si512();
      // Two independent chains (even / odd chunks) halve the VPDPBUSD latency per token.
      __m512i s = _mm512_dpbusd_epi32(s0, w[0], _mm512_set1_epi32(Load32(aq)));
      __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], _mm512_set1_epi32(Load32(aq + 4)));
#pragma GCC unroll 8
      for (int c = 2; c < C; c += 2) {
        s = _mm512_dpbusd_epi32(s, w[c], _mm512_set1_epi32(Load32(aq + 4 * c)));
        s1 = _mm512_dpbusd_epi32(s1, w[c + 1], _mm512_set1_epi32(Load32(aq + 4 * c + 4)));
      }
      s = _mm512_add_epi32(s, s1);
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ad[j * nb + b])), _mm512_cvtepi32_ps(s), acc[j]);
      if (!kOff) acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(asum[j * ng + g]), acc[j]);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_mask_storeu_ps(y + j * y_stride, rmask, acc[j]);
}

template <int G, bool kOff>
void Run(const uint8_t* tile, int64_t k, int64_t rows, const PackedActs& pa, int64_t n_tok, float* y,
         int64_t y_stride) {
  const __mmask16 rmask = rows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
  const int64_t nb = k / 32, ng = k / G;
  const auto* a = static_cast<const uint8_t*>(pa.q);
  const size_t as = pa.q_stride;
  ForTokenTiles<8>(n_tok, [&](int64_t t, auto tokens) {
    Tile<G, decltype(tokens)::value, kOff>(tile, k, a + size_t(t) * as, as, pa.ad + t * nb, pa.asum + t * ng,
                                           pa.aoff + (kOff ? t * ng : 0), y + t * y_stride, y_stride, rmask);
  });
}

// ---- Packing (the layout of gemm_packed.h), vectorized per block and transposed in registers ----

inline float H(uint16_t h) { return _cvtsh_ss(h); }

// 32 quants of a legacy block: elements 0-15 from the low nibbles of qs, 16-31 from the high.
inline __m256i Nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x0F));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

// Q5 fifth bits: bit i of qh as 0x10 in byte i.
inline __m256i FifthBits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return _mm256_maskz_set1_epi8(__mmask32(h), 0x10);
}

// Bits n..n+width-1 of every byte of v, shifted to the bottom (n <= 7; the 16-bit shift's
// spill from the neighbouring byte is masked away).
inline __m256i ByteBits(__m256i v, int n, int mask) {
  return _mm256_and_si256(_mm256_srli_epi16(v, n), _mm256_set1_epi8(char(mask)));
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// One row's span (32 elements for the legacy formats, 256 for the K formats) unpacked into 32-
// or 16-element groups: quants to q (span bytes), scales to d[g * 16] and m[g * 16].
void UnpackSpan(GgmlType t, const uint8_t* row, int64_t s, uint8_t* q, float* d, float* m) {
  switch (t) {
    case GgmlType::Q4_0: {
      const auto& x = reinterpret_cast<const BlockQ4_0*>(row)[s];
      d[0] = H(x.d), m[0] = -8.0f * d[0];
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), Nibbles(x.qs));
      break;
    }
    case GgmlType::Q4_1: {
      const auto& x = reinterpret_cast<const BlockQ4_1*>(row)[s];
      d[0] = H(x.d), m[0] = H(x.m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), Nibbles(x.qs));
      break;
    }
    case GgmlType::Q5_0: {
      const auto& x = reinterpret_cast<const BlockQ5_0*>(row)[s];
      d[0] = H(x.d), m[0] = -16.0f * d[0];
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_or_si256(Nibbles(x.qs), FifthBits(x.qh)));
      break;
    }
    case GgmlType::Q5_1: {
      const auto& x = reinterpret_cast<const BlockQ5_1*>(row)[s];
      d[0] = H(x.d), m[0] = H(x.m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_or_si256(Nibbles(x.qs), FifthBits(x.qh)));
      break;
    }
    case GgmlType::Q8_0: {  // signed -> unsigned: q + 128 is q with the top bit flipped
      const auto& x = reinterpret_cast<const BlockQ8_0*>(row)[s];
      d[0] = H(x.d), m[0] = -128.0f * d[0];
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_xor_si256(Load256(x.qs), _mm256_set1_epi8(char(0x80))));
      break;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const bool q5 = t == GgmlType::Q5_K;
      const uint8_t* qs;
      const uint8_t* qh = nullptr;
      const uint8_t* scales;
      uint16_t dd16, dm16;
      if (q5) {
        const auto& x = reinterpret_cast<const BlockQ5_K*>(row)[s];
        qs = x.qs, qh = x.qh, scales = x.scales, dd16 = x.d, dm16 = x.dmin;
      } else {
        const auto& x = reinterpret_cast<const BlockQ4_K*>(row)[s];
        qs = x.qs, scales = x.scales, dd16 = x.d, dm16 = x.dmin;
      }
      uint8_t sc[8], mn[8];
      UnpackScaleMinK4(scales, sc, mn);
      const float dd = H(dd16), dm = H(dm16);
      const __m256i hv = q5 ? Load256(qh) : _mm256_setzero_si256();
      for (int c = 0; c < 4; ++c) {  // 64 elements: group 2c from the low nibbles, 2c+1 the high
        const __m256i v = Load256(qs + 32 * c);
        __m256i lo = _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
        __m256i hi = ByteBits(v, 4, 0x0F);
        if (q5) {
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(ByteBits(hv, 2 * c, 1), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(ByteBits(hv, 2 * c + 1, 1), 4));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + 32), hi);
        for (int j = 0; j < 2; ++j) {
          d[16 * (2 * c + j)] = dd * float(sc[2 * c + j]);
          m[16 * (2 * c + j)] = -dm * float(mn[2 * c + j]);
        }
      }
      break;
    }
    case GgmlType::Q6_K: {  // 16-element groups; element e = 128h + 32g + l (reference layout)
      const auto& x = reinterpret_cast<const BlockQ6_K*>(row)[s];
      const float dd = H(x.d);
      for (int j = 0; j < 16; ++j) {
        d[16 * j] = dd * float(x.scales[j]);
        m[16 * j] = -32.0f * d[16 * j];
      }
      for (int h = 0; h < 2; ++h) {
        const __m256i hv = Load256(x.qh + 32 * h);
        for (int g = 0; g < 4; ++g) {
          const __m256i lb = Load256(x.ql + 64 * h + 32 * (g & 1));
          const __m256i lo = g >= 2 ? ByteBits(lb, 4, 0x0F) : _mm256_and_si256(lb, _mm256_set1_epi8(0x0F));
          const __m256i hi = _mm256_slli_epi16(ByteBits(hv, 2 * g, 3), 4);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * h + 32 * g), _mm256_or_si256(lo, hi));
        }
      }
      break;
    }
    default:
      break;
  }
}

// Index vectors of the in-register transposes: idx[i] selects from (a, b) as 0..15 / 16..31.
struct TransposeIdx {
  __m512i s1[2], s2[2], s3[2];  // 16x8 dwords (G = 32): three stages
  __m512i t1[2], t2[2];         // 16x4 dwords (G = 16): two stages
  TransposeIdx() {
    alignas(64) int32_t v[16];
    for (int h = 0; h < 2; ++h) {
      // Stage 1: rows 4p..4p+3 x columns 4h..4h+3, lane = col * 4 + row (from two 2-row inputs).
      for (int cl = 0; cl < 4; ++cl) {
        for (int rl = 0; rl < 4; ++rl) v[cl * 4 + rl] = (rl < 2 ? 0 : 16) + (rl % 2) * 8 + 4 * h + cl;
      }
      s1[h] = _mm512_load_si512(v);
      // Stage 2: rows 8q..8q+7 x columns 2h2..2h2+1 (of the 4), lane = col * 8 + row.
      for (int cl = 0; cl < 2; ++cl) {
        for (int rl = 0; rl < 8; ++rl) v[cl * 8 + rl] = (rl < 4 ? 0 : 16) + (2 * h + cl) * 4 + rl % 4;
      }
      s2[h] = _mm512_load_si512(v);
      // Stage 3: rows 0..15 of column cl, lane = row.
      for (int r = 0; r < 16; ++r) v[r] = (r < 8 ? 0 : 16) + h * 8 + r % 8;
      s3[h] = _mm512_load_si512(v);
      // G = 16, stage 1: rows 8p..8p+7 x columns 2h..2h+1 from two 4-row inputs (lane = row * 4 + col).
      for (int cl = 0; cl < 2; ++cl) {
        for (int rl = 0; rl < 8; ++rl) v[cl * 8 + rl] = (rl < 4 ? 0 : 16) + (rl % 4) * 4 + 2 * h + cl;
      }
      t1[h] = _mm512_load_si512(v);
      // Stage 2: rows 0..15 of column cl.
      for (int r = 0; r < 16; ++r) v[r] = (r < 8 ? 0 : 16) + h * 8 + r % 8;
      t2[h] = _mm512_load_si512(v);
    }
  }
};

// 16 rows x 32 bytes (row r at q + r * q_stride) -> 8 chunks of 64 bytes (chunk c: the 16 rows'
// bytes 4c..4c+3), in 24 two-source permutes.
inline void Transpose32(const TransposeIdx& ix, const uint8_t* q, size_t q_stride, uint8_t* out) {
  __m512i z[8];
  for (int i = 0; i < 8; ++i) {
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(Load256(q + size_t(2 * i) * q_stride)),
                              Load256(q + size_t(2 * i + 1) * q_stride), 1);
  }
  __m512i a[4][2], b[2][2][2];
  for (int p = 0; p < 4; ++p) {
    for (int h = 0; h < 2; ++h) a[p][h] = _mm512_permutex2var_epi32(z[2 * p], ix.s1[h], z[2 * p + 1]);
  }
  for (int qq = 0; qq < 2; ++qq) {
    for (int h = 0; h < 2; ++h) {
      for (int h2 = 0; h2 < 2; ++h2) b[qq][h][h2] = _mm512_permutex2var_epi32(a[2 * qq][h], ix.s2[h2], a[2 * qq + 1][h]);
    }
  }
  for (int h = 0; h < 2; ++h) {
    for (int h2 = 0; h2 < 2; ++h2) {
      for (int cl = 0; cl < 2; ++cl) {
        const int c = 4 * h + 2 * h2 + cl;
        _mm512_storeu_si512(out + 64 * c, _mm512_permutex2var_epi32(b[0][h][h2], ix.s3[cl], b[1][h][h2]));
      }
    }
  }
}

// 16 rows x 16 bytes -> 4 chunks of 64 bytes, in 8 permutes.
inline void Transpose16(const TransposeIdx& ix, const uint8_t* q, size_t q_stride, uint8_t* out) {
  __m512i z[4];
  for (int i = 0; i < 4; ++i) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + size_t(4 * i) * q_stride)));
    for (int j = 1; j < 4; ++j) {
      const __m128i r = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + size_t(4 * i + j) * q_stride));
      v = j == 1 ? _mm512_inserti32x4(v, r, 1) : j == 2 ? _mm512_inserti32x4(v, r, 2) : _mm512_inserti32x4(v, r, 3);
    }
    z[i] = v;
  }
  __m512i a[2][2];
  for (int p = 0; p < 2; ++p) {
    for (int h = 0; h < 2; ++h) a[p][h] = _mm512_permutex2var_epi32(z[2 * p], ix.t1[h], z[2 * p + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    for (int cl = 0; cl < 2; ++cl) {
      _mm512_storeu_si512(out + 64 * (2 * h + cl), _mm512_permutex2var_epi32(a[0][h], ix.t2[cl], a[1][h]));
    }
  }
}

// roundf semantics (half away from zero), exactly as the reference: t = trunc(v), plus sign(v)
// when |v - t| >= 0.5.
inline __m512 RoundHalfAway(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
  const __mmask16 ge = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm512_mask_add_ps(t, ge, t, one);
}

}  // namespace

void QuantizeQ8_0Tables(const float* x, int64_t k, void* dst, int group, int offset, float* ad, float* asum,
                        int32_t* aoff) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  // = Fp32ToFp16 (nearest even)
    y[b].d = d16;
    const float s = _cvtsh_ss(d16);
    ad[b] = s;
    const __m512 vid = _mm512_set1_ps(id);
    // Clamped to [-127, 127] (NaN -> -127, max_ps returns its second operand): a non-finite
    // activation gives bounded quants, never INT_MIN sums (finite values are within range).
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    const __m512i q0 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v0, vid), lo), hi)));
    const __m512i q1 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v1, vid), lo), hi)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    if (group == 32) {
      const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
      asum[b] = s * float(sum);
      if (offset != 0) aoff[b] = -offset * sum;
    } else {
      const int32_t s0 = _mm512_reduce_add_epi32(q0), s1 = _mm512_reduce_add_epi32(q1);
      asum[2 * b] = s * float(s0);
      asum[2 * b + 1] = s * float(s1);
      if (offset != 0) {
        aoff[2 * b] = -offset * s0;
        aoff[2 * b + 1] = -offset * s1;
      }
    }
  }
}

void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch) {
  static const TransposeIdx ix;
  const int group = PackGroup(t);
  const bool k_quant = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
  const int64_t span = k_quant ? 256 : 32;
  const int64_t gps = span / group;  // groups per span
  const size_t gb = size_t(16 * group + 128);
  alignas(64) uint8_t q[16 * 256];
  alignas(64) float d[16 * 16], m[16 * 16];  // [group in span][row]
  (void)scratch;
  auto* out = static_cast<uint8_t*>(dst);
  const auto* base = static_cast<const uint8_t*>(w);
  if (rows < 16) {
    std::memset(q, 0, sizeof(q));
    std::memset(d, 0, sizeof(d));
    std::memset(m, 0, sizeof(m));
  }
  for (int64_t s = 0; s < k / span; ++s) {
    for (int64_t r = 0; r < rows; ++r) UnpackSpan(t, base + size_t(r) * w_stride, s, q + r * span, d + r, m + r);
    for (int64_t gi = 0; gi < gps; ++gi) {
      uint8_t* o = out + size_t(s * gps + gi) * gb;
      if (group == 32) {
        Transpose32(ix, q + gi * 32, size_t(span), o);
      } else {
        Transpose16(ix, q + gi * 16, size_t(span), o);
      }
      _mm512_storeu_ps(o + 16 * group, _mm512_load_ps(d + 16 * gi));
      _mm512_storeu_ps(o + 16 * group + 64, _mm512_load_ps(m + 16 * gi));
    }
  }
}

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  const auto* tp = static_cast<const uint8_t*>(tile);
  const bool off = a.aoff != nullptr;
  if (group == 32) {
    off ? Run<32, true>(tp, k, rows, a, n_tok, y, y_stride) : Run<32, false>(tp, k, rows, a, n_tok, y, y_stride);
  } else {
    off ? Run<16, true>(tp, k, rows, a, n_tok, y, y_stride) : Run<16, false>(tp, k, rows, a, n_tok, y, y_stride);
  }
}

}  // namespace zf::quant::avx512

#endif  // x86

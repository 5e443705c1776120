// AVX-512 VNNI grouped decode over a quantized KV cache (attention_quant.h).
//
// Scores: two 32-element K blocks per 512-bit register; VPDPBUSD multiplies K as unsigned bytes
// (Q8_0 + 128, or Q4_0's raw nibbles 0..15) with Q's signed bytes, and the offset that makes K
// unsigned (128 or 8 times the sum of Q's block) starts the accumulator, so each block's integer
// dot product is exact; per block it is scaled by d_k * d_q in F32. Each K row is loaded and
// made unsigned once for all heads of the group; four heads' sums are reduced together.
// Values: 64 dimensions per tile (NQ x 4 accumulators), each V row's integers widened to F32
// once and accumulated with weight p * d per head and block. Results differ from the scalar
// reference by float rounding only.
#if defined(__x86_64__) || defined(__i386__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/attention_quant_drivers.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace zf::engine::attn {
namespace {

constexpr int kMaxPairs = 8;  // K blocks in pairs: head sizes up to 512 (else the reference)

inline uint16_t Half(const uint8_t* p) {
  uint16_t d;
  std::memcpy(&d, p, 2);
  return d;
}

// Q of NQ heads, per pair of K blocks: the signed bytes, the F16 scales as F32 (8 lanes per
// block) and the accumulator's start (minus the unsigned offset's contribution, lanes 0 and 8).
struct QPairs {
  __m512i q[kDecodeHeads][kMaxPairs];
  __m512 d[kDecodeHeads][kMaxPairs];
  __m512i init[kDecodeHeads][kMaxPairs];
};

void PrepareQ(const QuantDecodeGroup& g, int32_t pairs, QPairs* qp) {
  const int32_t nbk = g.d_k / quant::kQK;
  const int32_t offset = g.kt == KvType::kQ8_0 ? 128 : 8;
  for (int32_t h = 0; h < g.n_q; ++h) {
    const auto* qb = reinterpret_cast<const quant::BlockQ8_0*>(g.q8) + size_t(h) * size_t(nbk);
    for (int32_t p = 0; p < pairs; ++p) {
      alignas(64) int8_t bytes[64] = {};
      alignas(64) float d[16] = {};
      alignas(64) int32_t init[16] = {};
      for (int half = 0; half < 2; ++half) {
        const int32_t b = 2 * p + half;
        if (b >= nbk) break;
        int32_t sum = 0;
        for (int i = 0; i < quant::kQK; ++i) sum += qb[b].qs[i], bytes[32 * half + i] = qb[b].qs[i];
        for (int i = 0; i < 8; ++i) d[8 * half + i] = quant::Fp16ToFp32(qb[b].d);
        init[8 * half] = -offset * sum;
      }
      qp->q[h][p] = _mm512_load_si512(bytes);
      qp->d[h][p] = _mm512_load_ps(d);
      qp->init[h][p] = _mm512_load_si512(init);
    }
  }
}

// The 64 unsigned bytes of K blocks 2p, 2p + 1 of row k (zeros past the last block) and their
// scales (8 lanes each).
template <KvType KT>
inline void LoadKPair(const uint8_t* k, int32_t p, int32_t nbk, __m512i* ku, __m512* dk) {
  constexpr size_t kB = KT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  const uint8_t* b0 = k + size_t(2 * p) * kB;
  const bool two = 2 * p + 1 < nbk;
  const uint8_t* b1 = b0 + kB;
  __m256i lo, hi;
  if constexpr (KT == KvType::kQ8_0) {
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2)), bias);
    hi = two ? _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), bias) : _mm256_setzero_si256();
  } else {
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2));
    lo = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x0, 4), m4), _mm_and_si128(x0, m4));
    if (two) {
      const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 2));
      hi = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x1, 4), m4), _mm_and_si128(x1, m4));
    } else {
      hi = _mm256_setzero_si256();
    }
  }
  *ku = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  const __m128i d0 = _mm_set1_epi16(short(Half(b0))), d1 = two ? _mm_set1_epi16(short(Half(b1))) : _mm_setzero_si128();
  *dk = _mm512_cvtph_ps(_mm256_set_m128i(d1, d0));
}

// The sums of four vectors' lanes, as one vector of 4 floats.
inline __m128 Reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const auto fold = [](__m512 x) { return _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1)); };
  const __m256 ab = _mm256_hadd_ps(fold(a), fold(b)), cd = _mm256_hadd_ps(fold(c), fold(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // per 128-bit lane: a, b, c, d
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Raw scores of NQ heads: s[h][j] = q_h . k_j.
template <int NQ, KvType KT>
void Scores(const QuantDecodeGroup& g, const QPairs& qp, int32_t pairs) {
  const int32_t nbk = g.d_k / quant::kQK;
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint8_t* k = g.k + j * g.k_stride;
    __m512 acc[4];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int32_t p = 0; p < pairs; ++p) {
      __m512i ku;
      __m512 dk;
      LoadKPair<KT>(k, p, nbk, &ku, &dk);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m512i t = _mm512_dpbusd_epi32(qp.init[h][p], ku, qp.q[h][p]);
        acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(dk, qp.d[h][p]), acc[h]);
      }
    }
    alignas(16) float r[4];
    _mm_store_ps(r, Reduce4(acc[0], acc[1], acc[2], acc[3]));
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = r[h];
  }
}

inline __m512 LoadF16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// out[h][e0 .. e0+63] = inv[h] * sum_j p[h][j] v_j[e0 ..]: each value row's integers (or halves)
// widened once for all heads; a quantized row's scale joins the weight, per block.
template <int NQ, KvType VT>
void Values(const QuantDecodeGroup& g, const float* inv) {
  constexpr size_t kB = VT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  constexpr bool kQuant = VT == KvType::kQ8_0 || VT == KvType::kQ4_0;
  for (int32_t e0 = 0; e0 < g.d_v; e0 += 64) {
    const int32_t nc = std::min(4, (g.d_v - e0) / 16);  // 16-wide chunks in this tile (2 or 4)
    __m512 acc[NQ][4];
    for (auto& row : acc) for (__m512& a : row) a = _mm512_setzero_ps();
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint8_t* v = g.v + j * g.v_stride;
      __m512 vv[4];
      float dv[2] = {1.0f, 1.0f};  // the scales of the tile's two blocks
      if constexpr (kQuant) {
        for (int bb = 0; bb < nc / 2; ++bb) {
          const uint8_t* blk = v + size_t(e0 / 32 + bb) * kB;
          dv[bb] = quant::Fp16ToFp32(Half(blk));
          if constexpr (VT == KvType::kQ8_0) {
            for (int c = 0; c < 2; ++c) {
              const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + 16 * c));
              vv[2 * bb + c] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x));
            }
          } else {
            const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
            const __m512i eight = _mm512_set1_epi32(8);
            vv[2 * bb] = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(x, _mm512_set1_epi32(15)), eight));
            vv[2 * bb + 1] = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(x, 4), eight));
          }
        }
      } else if constexpr (VT == KvType::kF16) {
        for (int c = 0; c < nc; ++c) vv[c] = LoadF16(v + size_t(e0 + 16 * c) * 2);
      } else {
        for (int c = 0; c < nc; ++c) vv[c] = _mm512_loadu_ps(reinterpret_cast<const float*>(v) + e0 + 16 * c);
      }
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const float p = g.s[h * g.n_keys + j];
        const __m512 w0 = _mm512_set1_ps(kQuant ? p * dv[0] : p);
        const __m512 w1 = kQuant ? _mm512_set1_ps(p * dv[1]) : w0;
        acc[h][0] = _mm512_fmadd_ps(w0, vv[0], acc[h][0]);
        acc[h][1] = _mm512_fmadd_ps(w0, vv[1], acc[h][1]);
        if (nc > 2) {
          acc[h][2] = _mm512_fmadd_ps(w1, vv[2], acc[h][2]);
          acc[h][3] = _mm512_fmadd_ps(w1, vv[3], acc[h][3]);
        }
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      const __m512 iv = _mm512_set1_ps(inv[h]);
      for (int c = 0; c < nc; ++c) _mm512_storeu_ps(g.out[h] + e0 + 16 * c, _mm512_mul_ps(acc[h][c], iv));
    }
  }
}

// The ops of the shared loops (attention_quant_drivers.h).
struct Avx512Ops {
  template <int NQ, KvType KT>
  static void Scores(const QuantDecodeGroup& g) {
    const int32_t pairs = (g.d_k / quant::kQK + 1) / 2;
    QPairs qp;
    PrepareQ(g, pairs, &qp);
    attn::Scores<NQ, KT>(g, qp, pairs);
  }
  static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
    return SoftmaxSumAvx512(x, n, scale, softcap, sink, mx);
  }
  template <int NQ, KvType VT>
  static void Values(const QuantDecodeGroup& g, const float* inv) {
    attn::Values<NQ, VT>(g, inv);
  }
};

}  // namespace

void RunQuantDecodeAvx512(const QuantDecodeGroup& g) {
  if (g.d_k > 64 * kMaxPairs) {
    RunQuantDecodeRef(g);
    return;
  }
  RunQuantDecodeWith<Avx512Ops>(g);
}

}  // namespace zf::engine::attn

#endif  // x86

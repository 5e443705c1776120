// AVX2 grouped decode over a quantized KV cache (attention_quant.h), the AVX-512 kernel's scheme
// without VNNI: per 32-element block, PMADDUBSW on unsigned K bytes (|K| for Q8_0 with Q's signs
// moved onto Q, as ggml's AVX2 dot products do; Q4_0's raw nibbles 0..15 with 8 times the sum of
// Q's block subtracted) and PMADDWD to 32-bit sums, exact; scaled by d_k * d_q in F32. Values in
// tiles of 16 dimensions (within one block), NQ x 2 accumulators. Results differ from the scalar
// reference by float rounding only.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/cpu/attention_quant_drivers.h"
#include "engine/cpu/vec_math_avx2.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace zf::engine::attn {
namespace {

constexpr int kMaxBlocks = 16;  // head sizes up to 512 (else the reference)

inline float HalfAt(const uint8_t* p) {
  uint16_t d;
  std::memcpy(&d, p, 2);
  return _cvtsh_ss(d);
}

// Q of NQ heads per K block: the signed bytes, the scale, the start of the 32-bit sums (Q4_0:
// minus 8 times the block's sum of Q, in lane 0).
struct QBlocks {
  __m256i q[kDecodeHeads][kMaxBlocks];
  float d[kDecodeHeads][kMaxBlocks];
  __m256i init[kDecodeHeads][kMaxBlocks];
};

void PrepareQ(const QuantDecodeGroup& g, QBlocks* qb) {
  const int32_t nbk = g.d_k / quant::kQK;
  for (int32_t h = 0; h < g.n_q; ++h) {
    const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(g.q8) + size_t(h) * size_t(nbk);
    for (int32_t i = 0; i < nbk; ++i) {
      int32_t sum = 0;
      for (int e = 0; e < quant::kQK; ++e) sum += b[i].qs[e];
      qb->q[h][i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
      qb->d[h][i] = quant::Fp16ToFp32(b[i].d);
      qb->init[h][i] = _mm256_setr_epi32(g.kt == KvType::kQ4_0 ? -8 * sum : 0, 0, 0, 0, 0, 0, 0, 0);
    }
  }
}

// The sums of four vectors' lanes, as one vector of 4 floats.
inline __m128 Reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));  // per 128-bit lane: a, b, c, d
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

template <int NQ, KvType KT>
void Scores(const QuantDecodeGroup& g, const QBlocks& qb) {
  constexpr size_t kB = KT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  const int32_t nbk = g.d_k / quant::kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint8_t* k = g.k + j * g.k_stride;
    __m256 acc[4];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int32_t b = 0; b < nbk; ++b) {
      const uint8_t* blk = k + size_t(b) * kB;
      const float dk = HalfAt(blk);
      __m256i ku, kraw = _mm256_setzero_si256();
      if constexpr (KT == KvType::kQ8_0) {
        kraw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        ku = _mm256_sign_epi8(kraw, kraw);  // |k|
      } else {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)), m4 = _mm_set1_epi8(15);
        ku = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), m4), _mm_and_si128(x, m4));
      }
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m256i qs = KT == KvType::kQ8_0 ? _mm256_sign_epi8(qb.q[h][b], kraw) : qb.q[h][b];
        const __m256i t = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ku, qs), ones), qb.init[h][b]);
        acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(dk * qb.d[h][b]), acc[h]);
      }
    }
    alignas(16) float r[4];
    _mm_store_ps(r, Reduce4(acc[0], acc[1], acc[2], acc[3]));
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = r[h];
  }
}

// out[h][e0 .. e0+15] = inv[h] * sum_j p[h][j] v_j[e0 ..]; a tile lies in one block, whose scale
// joins the weight.
template <int NQ, KvType VT>
void Values(const QuantDecodeGroup& g, const float* inv) {
  constexpr size_t kB = VT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  constexpr bool kQuant = VT == KvType::kQ8_0 || VT == KvType::kQ4_0;
  for (int32_t e0 = 0; e0 < g.d_v; e0 += 16) {
    __m256 acc[NQ][2];
    for (auto& row : acc) for (__m256& a : row) a = _mm256_setzero_ps();
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint8_t* v = g.v + j * g.v_stride;
      __m256 v0, v1;
      float dv = 1.0f;
      if constexpr (kQuant) {
        const uint8_t* blk = v + size_t(e0 / 32) * kB;
        dv = HalfAt(blk);
        __m128i x;
        if constexpr (VT == KvType::kQ8_0) {
          x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + e0 % 32));
        } else {  // the block's first 16 elements are the low nibbles, the next 16 the high ones
          const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
          x = _mm_sub_epi8(_mm_and_si128(e0 % 32 == 0 ? raw : _mm_srli_epi16(raw, 4), _mm_set1_epi8(15)),
                           _mm_set1_epi8(8));
        }
        v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
        v1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(x, 8)));
      } else if constexpr (VT == KvType::kF16) {
        v0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + size_t(e0) * 2)));
        v1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + size_t(e0 + 8) * 2)));
      } else {
        v0 = _mm256_loadu_ps(reinterpret_cast<const float*>(v) + e0);
        v1 = _mm256_loadu_ps(reinterpret_cast<const float*>(v) + e0 + 8);
      }
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const float p = g.s[h * g.n_keys + j];
        const __m256 w = _mm256_set1_ps(kQuant ? p * dv : p);
        acc[h][0] = _mm256_fmadd_ps(w, v0, acc[h][0]);
        acc[h][1] = _mm256_fmadd_ps(w, v1, acc[h][1]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      const __m256 iv = _mm256_set1_ps(inv[h]);
      _mm256_storeu_ps(g.out[h] + e0, _mm256_mul_ps(acc[h][0], iv));
      _mm256_storeu_ps(g.out[h] + e0 + 8, _mm256_mul_ps(acc[h][1], iv));
    }
  }
}

// The ops of the shared loops (attention_quant_drivers.h).
struct Avx2Ops {
  template <int NQ, KvType KT>
  static void Scores(const QuantDecodeGroup& g) {
    QBlocks qb;
    PrepareQ(g, &qb);
    attn::Scores<NQ, KT>(g, qb);
  }
  static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
    return SoftmaxSumAvx2(x, n, scale, softcap, sink, mx);
  }
  template <int NQ, KvType VT>
  static void Values(const QuantDecodeGroup& g, const float* inv) {
    attn::Values<NQ, VT>(g, inv);
  }
};

}  // namespace

void RunQuantDecodeAvx2(const QuantDecodeGroup& g) {
  if (g.d_k > quant::kQK * kMaxBlocks) {
    RunQuantDecodeRef(g);
    return;
  }
  RunQuantDecodeWith<Avx2Ops>(g);
}

}  // namespace zf::engine::attn

#endif  // x86

// NEON grouped decode over a quantized KV cache (attention_quant.h), baseline NEON (every aarch64
// CPU): the AVX2 kernel's scheme at 4 lanes. Per 32-element block the signed bytes of K (Q8_0's
// own, Q4_0's nibbles minus 8) and of Q are multiplied in widening int16 pairs (vmull / vmlal:
// exact, both sides lie in [-127, 127] as the KV quantizers write them, so a pair's sum fits
// int16) and added pairwise into int32 lanes, exact; the block's sum is scaled by d_k * d_q in F32.
// Values in tiles of 16 dimensions (within one block), NQ x 4 accumulators. Results differ from
// the scalar reference by float rounding only.
//
// Why: aarch64 ran the scalar reference, one integer multiply per element and key, so a
// quantized KV cache cost more decode time there than an F16 one.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#include "engine/cpu/attention_quant_drivers.h"
#include "engine/cpu/attention_kernels.h"
#include "quant/blocks.h"
#include "quant/neon_inline.h"
#include "quant/quant.h"

namespace zf::engine::attn {
namespace {

constexpr int kMaxBlocks = 16;  // head sizes up to 512 (else the reference)

inline float HalfAt(const uint8_t* p) {
  uint16_t d;
  std::memcpy(&d, p, 2);
  return quant::Fp16ToFp32(d);
}

// Q of NQ heads per K block: its two 16-byte halves and its scale.
struct QBlocks {
  int8x16_t lo[kDecodeHeads][kMaxBlocks], hi[kDecodeHeads][kMaxBlocks];
  float d[kDecodeHeads][kMaxBlocks];
};

void PrepareQ(const QuantDecodeGroup& g, QBlocks* qb) {
  const int32_t nbk = g.d_k / quant::kQK;
  for (int32_t h = 0; h < g.n_q; ++h) {
    const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(g.q8) + size_t(h) * size_t(nbk);
    for (int32_t i = 0; i < nbk; ++i) {
      qb->lo[h][i] = vld1q_s8(b[i].qs);
      qb->hi[h][i] = vld1q_s8(b[i].qs + 16);
      qb->d[h][i] = quant::Fp16ToFp32(b[i].d);
    }
  }
}

// A block's 32 signed integers as two 16-byte halves (elements 0-15, 16-31).
template <KvType T>
inline void BlockBytes(const uint8_t* blk, int8x16_t* lo, int8x16_t* hi) {
  if constexpr (T == KvType::kQ8_0) {
    *lo = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    *hi = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  } else {  // Q4_0: the low nibbles are elements 0-15, the high ones 16-31
    const uint8x16_t raw = vld1q_u8(blk + 2);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), eight);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
  }
}

template <int NQ, KvType KT>
void Scores(const QuantDecodeGroup& g, const QBlocks& qb) {
  constexpr size_t kB = KT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  const int32_t nbk = g.d_k / quant::kQK;
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint8_t* k = g.k + j * g.k_stride;
    float32x4_t acc[NQ];
    for (float32x4_t& a : acc) a = vdupq_n_f32(0.0f);
    for (int32_t b = 0; b < nbk; ++b) {
      const uint8_t* blk = k + size_t(b) * kB;
      const float dk = HalfAt(blk);
      int8x16_t klo, khi;
      BlockBytes<KT>(blk, &klo, &khi);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const int32x4_t t = quant::Dot32(klo, khi, qb.lo[h][b], qb.hi[h][b]);  // 32 products, 4 lanes
        acc[h] = vfmaq_n_f32(acc[h], vcvtq_f32_s32(t), dk * qb.d[h][b]);
      }
    }
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = vaddvq_f32(acc[h]);
  }
}

// out[h][e0 .. e0+15] = inv[h] * sum_j p[h][j] v_j[e0 ..]; a tile lies in one block, whose scale
// joins the weight.
template <int NQ, KvType VT>
void Values(const QuantDecodeGroup& g, const float* inv) {
  constexpr size_t kB = VT == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0);
  constexpr bool kQuant = VT == KvType::kQ8_0 || VT == KvType::kQ4_0;
  for (int32_t e0 = 0; e0 < g.d_v; e0 += 16) {
    float32x4_t acc[NQ][4];
    for (auto& row : acc) for (float32x4_t& a : row) a = vdupq_n_f32(0.0f);
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint8_t* v = g.v + j * g.v_stride;
      float32x4_t vv[4];
      float dv = 1.0f;
      if constexpr (kQuant) {
        const uint8_t* blk = v + size_t(e0 / 32) * kB;
        dv = HalfAt(blk);
        int8x16_t lo, hi;
        BlockBytes<VT>(blk, &lo, &hi);
        const int8x16_t x = e0 % 32 == 0 ? lo : hi;
        const int16x8_t w0 = vmovl_s8(vget_low_s8(x)), w1 = vmovl_high_s8(x);
        vv[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w0)));
        vv[1] = vcvtq_f32_s32(vmovl_high_s16(w0));
        vv[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w1)));
        vv[3] = vcvtq_f32_s32(vmovl_high_s16(w1));
      } else if constexpr (VT == KvType::kF16) {
        for (int c = 0; c < 4; ++c) vv[c] = quant::F16x4(v + size_t(e0 + 4 * c) * 2);
      } else {
        for (int c = 0; c < 4; ++c) vv[c] = vld1q_f32(reinterpret_cast<const float*>(v) + e0 + 4 * c);
      }
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const float p = g.s[h * g.n_keys + j];
        const float w = kQuant ? p * dv : p;
        for (int c = 0; c < 4; ++c) acc[h][c] = vfmaq_n_f32(acc[h][c], vv[c], w);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      for (int c = 0; c < 4; ++c) vst1q_f32(g.out[h] + e0 + 4 * c, vmulq_n_f32(acc[h][c], inv[h]));
    }
  }
}

// The ops of the shared loops (attention_quant_drivers.h).
struct AsimdQuantOps {
  template <int NQ, KvType KT>
  static void Scores(const QuantDecodeGroup& g) {
    QBlocks qb;
    PrepareQ(g, &qb);
    attn::Scores<NQ, KT>(g, qb);
  }
  static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
    return SoftmaxSumAsimd(x, n, scale, softcap, sink, mx);
  }
  template <int NQ, KvType VT>
  static void Values(const QuantDecodeGroup& g, const float* inv) {
    attn::Values<NQ, VT>(g, inv);
  }
};

}  // namespace

void RunQuantDecodeAsimd(const QuantDecodeGroup& g) {
  if (g.d_k > quant::kQK * kMaxBlocks) {
    RunQuantDecodeRef(g);
    return;
  }
  RunQuantDecodeWith<AsimdQuantOps>(g);
}

}  // namespace zf::engine::attn

#endif  // __aarch64__

// Scalar reference of the grouped quantized-KV decode (attention_quant.h) and its dispatch.
#include "engine/cpu/attention_quant.h"

#include <algorithm>
#include <cmath>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::engine::attn {
namespace {

// Element i (< 32) of a Q8_0 / Q4_0 block as its integer.
inline int BlockInt(KvType t, const uint8_t* blk, int i) {
  if (t == KvType::kQ8_0) return reinterpret_cast<const quant::BlockQ8_0*>(blk)->qs[i];
  const uint8_t b = reinterpret_cast<const quant::BlockQ4_0*>(blk)->qs[i & 15];
  return (i < 16 ? b & 15 : b >> 4) - 8;
}
inline size_t BlockBytes(KvType t) { return t == KvType::kQ8_0 ? sizeof(quant::BlockQ8_0) : sizeof(quant::BlockQ4_0); }
inline float BlockScale(const uint8_t* blk) {  // both block types start with their F16 scale
  uint16_t d;
  std::copy(blk, blk + 2, reinterpret_cast<uint8_t*>(&d));
  return quant::Fp16ToFp32(d);
}

}  // namespace

void RunQuantDecodeRef(const QuantDecodeGroup& g) {
  const int32_t nbk = g.d_k / quant::kQK, nbv = g.d_v / quant::kQK;
  const size_t kb = BlockBytes(g.kt);
  for (int32_t h = 0; h < g.n_q; ++h) {
    const uint8_t* q = g.q8 + size_t(h) * size_t(nbk) * sizeof(quant::BlockQ8_0);
    float* s = g.s + int64_t{h} * g.n_keys;
    float mx = -INFINITY;
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint8_t* k = g.k + j * g.k_stride;
      float dot = 0.0f;
      for (int32_t b = 0; b < nbk; ++b) {
        const uint8_t* kblk = k + size_t(b) * kb;
        const uint8_t* qblk = q + size_t(b) * sizeof(quant::BlockQ8_0);
        int32_t isum = 0;
        for (int i = 0; i < quant::kQK; ++i) isum += BlockInt(g.kt, kblk, i) * BlockInt(KvType::kQ8_0, qblk, i);
        dot += float(isum) * (BlockScale(kblk) * BlockScale(qblk));
      }
      float x = dot * g.scale;
      if (g.softcap > 0.0f) x = g.softcap * std::tanh(x / g.softcap);
      s[j] = x;
      mx = std::max(mx, x);
    }
    const float inv =
        SoftmaxRef(s, g.n_keys, mx, g.sink != nullptr ? g.sink + h : nullptr, g.part != nullptr ? g.part + h : nullptr);
    float* o = g.out[h];
    std::fill(o, o + g.d_v, 0.0f);
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint8_t* v = g.v + j * g.v_stride;
      if (g.vt == KvType::kF16 || g.vt == KvType::kF32) {
        for (int32_t e = 0; e < g.d_v; ++e) {
          const float x = g.vt == KvType::kF16 ? quant::Fp16ToFp32(reinterpret_cast<const uint16_t*>(v)[e])
                                               : reinterpret_cast<const float*>(v)[e];
          o[e] += s[j] * x;
        }
        continue;
      }
      for (int32_t b = 0; b < nbv; ++b) {  // the weight times the block's scale, then its integers
        const uint8_t* vblk = v + size_t(b) * BlockBytes(g.vt);
        const float w = s[j] * BlockScale(vblk);
        for (int i = 0; i < quant::kQK; ++i) o[b * quant::kQK + i] += w * float(BlockInt(g.vt, vblk, i));
      }
    }
    for (int32_t e = 0; e < g.d_v; ++e) o[e] *= inv;
  }
}

void RunQuantDecode(const QuantDecodeGroup& g) {
#if defined(__x86_64__) || defined(__i386__)
  static const quant::Isa isa = quant::SelectedIsa();
  if (isa == quant::Isa::kAvx512) {  // (SelectedIsa picks it only with VNNI)
    RunQuantDecodeAvx512(g);
    return;
  }
  if (isa == quant::Isa::kAvx2) {
    RunQuantDecodeAvx2(g);
    return;
  }
#elif defined(__aarch64__)
  static const quant::Isa isa = quant::SelectedIsa();
  if (isa == quant::Isa::kNeon || isa == quant::Isa::kNeonDot) {  // (not with ZF_NO_NEON=1)
    RunQuantDecodeAsimd(g);
    return;
  }
#endif
  RunQuantDecodeRef(g);
}

}  // namespace zf::engine::attn

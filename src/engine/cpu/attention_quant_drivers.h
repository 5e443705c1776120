// Internal: the loops shared by the quantized-KV decode kernels (attention_quant_avx512.cpp,
// attention_quant_avx2.cpp), as attention_drivers.h is for the F16 ones. Include only from
// those files: each passes its own Ops type (internal linkage), so every instantiation is
// compiled with that file's ISA flags.
//
// Ops provides, for its vector width:
//   template <int NQ, KvType KT> static void Scores(const QuantDecodeGroup& g);   s[h][j] = q_h . k_j
//   static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx);
//       exp(scaled x - max) in place; returns the sum (with a finite sink's term), max in *mx
//   template <int NQ, KvType VT> static void Values(const QuantDecodeGroup& g, const float* inv);
//       out[h] = inv[h] * sum_j s[h][j] v_j
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/cpu/attention_quant.h"

namespace zf::engine::attn {

template <typename Ops, int NQ, KvType KT, KvType VT>
void QuantDecodeWith(const QuantDecodeGroup& g) {
  Ops::template Scores<NQ, KT>(g);
  float inv[NQ];
  for (int h = 0; h < NQ; ++h) {
    float* s = g.s + h * g.n_keys;
    if (g.part != nullptr) {  // a block of a split decode: unnormalized, its max and sum kept
      g.part[h].sum = Ops::SoftmaxSum(s, g.n_keys, g.scale, g.softcap, -INFINITY, &g.part[h].max);
      inv[h] = 1.0f;
    } else {
      float mx;
      inv[h] = 1.0f / Ops::SoftmaxSum(s, g.n_keys, g.scale, g.softcap, g.sink != nullptr ? g.sink[h] : -INFINITY, &mx);
    }
  }
  Ops::template Values<NQ, VT>(g, inv);
}

template <typename Ops, int NQ, KvType KT>
void QuantDecodeV(const QuantDecodeGroup& g) {
  switch (g.vt) {
    case KvType::kQ8_0: QuantDecodeWith<Ops, NQ, KT, KvType::kQ8_0>(g); return;
    case KvType::kQ4_0: QuantDecodeWith<Ops, NQ, KT, KvType::kQ4_0>(g); return;
    case KvType::kF16: QuantDecodeWith<Ops, NQ, KT, KvType::kF16>(g); return;
    default: QuantDecodeWith<Ops, NQ, KT, KvType::kF32>(g); return;
  }
}

template <typename Ops, int NQ>
void QuantDecodeK(const QuantDecodeGroup& g) {
  if (g.kt == KvType::kQ8_0) {
    QuantDecodeV<Ops, NQ, KvType::kQ8_0>(g);
  } else {
    QuantDecodeV<Ops, NQ, KvType::kQ4_0>(g);
  }
}

static_assert(kDecodeHeads == 4, "RunQuantDecodeWith has cases for 1..4 heads");

template <typename Ops>
void RunQuantDecodeWith(const QuantDecodeGroup& g) {
  switch (g.n_q) {
    case 1: QuantDecodeK<Ops, 1>(g); return;
    case 2: QuantDecodeK<Ops, 2>(g); return;
    case 3: QuantDecodeK<Ops, 3>(g); return;
    default: QuantDecodeK<Ops, 4>(g); return;
  }
}

}  // namespace zf::engine::attn

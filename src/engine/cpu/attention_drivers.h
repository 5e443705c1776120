// Internal: the loops shared by the SIMD attention kernels (attention_avx512.cpp,
// attention_avx2.cpp), parameterized by each file's register tiles. Include only from those
// files. Each file passes its own Ops type (internal linkage), so every instantiation is
// compiled with that file's ISA flags; the loops call no out-of-line library code that two
// files could share.
//
// Ops provides, for its vector width:
//   static void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss);
//       S[a..a+3][j0 .. j0+63] (64 keys; K^T is padded)
//   static float Softmax(float* x, int64_t n, float scale, float softcap, float sink);
//       exp(scaled x - max) in place, unnormalized; returns 1 / sum (sink: -INFINITY or a
//       logit in the max and the sum)
//   static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx);
//       the same, returning the sum and the max
//   static void ValueTiles(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t na,
//                          const float* inv, float* const* out);
//       out[i] = inv[i] * sum over keys [ulo, uhi] of p[i][j] V[j], all d_v dimensions
//   template <int NQ> static void DecodeScores(const DecodeGroup& g);          s[h][j] = q_h . k_j
//   template <int NQ> static void DecodeValues(const DecodeGroup& g, const float* inv);
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/cpu/attention_kernels.h"

namespace zf::engine::attn {

template <typename Ops>
void RunBlockWith(const Block& b) {
  const int64_t ss = ScoreStride(b.n_keys);
  const auto zero = [](float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) p[i] = 0.0f;
  };
  for (int32_t a = 0; a < b.rows; a += 4) {
    const int32_t na = b.rows - a < 4 ? b.rows - a : 4;
    int32_t ulo = b.lo[a], uhi = b.hi[a];
    for (int i = 1; i < na; ++i) {
      ulo = b.lo[a + i] < ulo ? b.lo[a + i] : ulo;
      uhi = b.hi[a + i] > uhi ? b.hi[a + i] : uhi;
    }
    // Scores for keys [ulo & ~15, uhi] (tiles of 64; the 4 rows share each K^T load).
    for (int64_t j0 = ulo & ~15; j0 <= uhi; j0 += 64) Ops::ScoreTile(b, a, j0, b.s, ss);
    float inv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 4; ++i) {
      float* s = b.s + (a + i) * ss;
      if (i >= na) {  // padding row: weight 0 everywhere
        zero(s + ulo, int64_t{uhi} - ulo + 1);
        continue;
      }
      const int32_t lo = b.lo[a + i], hi = b.hi[a + i];
      inv[i] = Ops::Softmax(s + lo, int64_t{hi} - lo + 1, b.scale, b.softcap, b.sink != nullptr ? b.sink[a + i] : -INFINITY);
      zero(s + ulo, int64_t{lo} - ulo);  // keys the union sees but this row does not
      zero(s + hi + 1, int64_t{uhi} - hi);
    }
    // O = P V over the union of the rows' keys.
    Ops::ValueTiles(b, b.s + a * ss, ss, ulo, uhi, na, inv, b.out + a);
  }
}

template <typename Ops, int NQ>
void DecodeWith(const DecodeGroup& g) {
  Ops::template DecodeScores<NQ>(g);
  float inv[NQ];
  for (int h = 0; h < NQ; ++h) {
    if (g.part != nullptr) {  // a block of a split decode: unnormalized, its max and sum kept
      g.part[h].sum = Ops::SoftmaxSum(g.s + h * g.n_keys, g.n_keys, g.scale, g.softcap, -INFINITY, &g.part[h].max);
      inv[h] = 1.0f;
      continue;
    }
    inv[h] = Ops::Softmax(g.s + h * g.n_keys, g.n_keys, g.scale, g.softcap, g.sink != nullptr ? g.sink[h] : -INFINITY);
  }
  Ops::template DecodeValues<NQ>(g, inv);
}

static_assert(kDecodeHeads == 4, "RunDecodeWith has cases for 1..4 heads");

template <typename Ops>
void RunDecodeWith(const DecodeGroup& g) {
  switch (g.n_q) {
    case 1: DecodeWith<Ops, 1>(g); return;
    case 2: DecodeWith<Ops, 2>(g); return;
    case 3: DecodeWith<Ops, 3>(g); return;
    default: DecodeWith<Ops, 4>(g); return;
  }
}

}  // namespace zf::engine::attn

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
//                          const float* inv, float* const* out, bool acc_in);
//       out[i] = inv[i] * ((acc_in ? out[i] : 0) + sum over keys [ulo, uhi] of p[i][j] V[j]), all
//       d_v dimensions (inv null: no scaling, a partial sum)
//   template <int NQ> static void DecodeScores(const DecodeGroup& g);          s[h][j] = q_h . k_j
//   template <int NQ> static void DecodeValues(const DecodeGroup& g, const float* inv);
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/cpu/attention_kernels.h"

namespace zf::engine::attn {

// Keys per chunk of the score and value passes: a chunk of K^T (kKeyChunk x d_k floats) or of V
// is read from memory once and serves every 4-row tile of the block from L2. (With the tiles
// outside, each 4-row tile streamed all of the block's K^T and V from memory: 64 MiB per tile at
// 32k keys of Gemma 3's 256-dimension heads, what made the fast path slow at long prompts.)
constexpr int64_t kKeyChunk = 256;

template <typename Ops>
void RunBlockWith(const Block& b) {
  const int64_t ss = ScoreStride(b.n_keys);
  const auto zero = [](float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) p[i] = 0.0f;
  };
  constexpr int kTiles = kAttnRows / 4;
  const int32_t n_tiles = (b.rows + 3) / 4;
  int32_t ulo[kTiles], uhi[kTiles], na[kTiles];
  int64_t base = INT32_MAX, top = 0;  // the union of the tiles' score tiles
  for (int32_t t = 0; t < n_tiles; ++t) {
    const int32_t a = 4 * t;
    na[t] = b.rows - a < 4 ? b.rows - a : 4;
    ulo[t] = b.lo[a], uhi[t] = b.hi[a];
    for (int i = 1; i < na[t]; ++i) {
      ulo[t] = b.lo[a + i] < ulo[t] ? b.lo[a + i] : ulo[t];
      uhi[t] = b.hi[a + i] > uhi[t] ? b.hi[a + i] : uhi[t];
    }
    base = (ulo[t] & ~15) < base ? (ulo[t] & ~15) : base;
    top = uhi[t] > top ? uhi[t] : top;
  }
  // Scores of each tile for keys [ulo & ~15, uhi] (tiles of 64 from there; the 4 rows share
  // each K^T load), key chunks outside: a tile's 64-key tile runs in the chunk where it starts.
  for (int64_t c0 = base; c0 <= top; c0 += kKeyChunk) {
    for (int32_t t = 0; t < n_tiles; ++t) {
      const int64_t start = ulo[t] & ~15;
      int64_t j0 = start >= c0 ? start : start + (c0 - start + 63) / 64 * 64;
      for (; j0 < c0 + kKeyChunk && j0 <= uhi[t]; j0 += 64) Ops::ScoreTile(b, 4 * t, j0, b.s, ss);
    }
  }
  float inv[kTiles][4] = {};
  for (int32_t t = 0; t < n_tiles; ++t) {
    for (int i = 0; i < 4; ++i) {
      float* s = b.s + (4 * t + i) * ss;
      if (i >= na[t]) {  // padding row: weight 0 everywhere
        zero(s + ulo[t], int64_t{uhi[t]} - ulo[t] + 1);
        continue;
      }
      const int32_t a = 4 * t + i, lo = b.lo[a], hi = b.hi[a];
      inv[t][i] = Ops::Softmax(s + lo, int64_t{hi} - lo + 1, b.scale, b.softcap, b.sink != nullptr ? b.sink[a] : -INFINITY);
      zero(s + ulo[t], int64_t{lo} - ulo[t]);  // keys the union sees but this row does not
      zero(s + hi + 1, int64_t{uhi[t]} - hi);
    }
  }
  // O = P V over the union of each tile's keys, key chunks outside: each chunk adds to the
  // partial sums left in the output rows, in key order (the same sums as one pass over all
  // keys), and the last one scales them.
  for (int64_t c0 = base; c0 <= top; c0 += kKeyChunk) {
    for (int32_t t = 0; t < n_tiles; ++t) {
      const int64_t lo = c0 > ulo[t] ? c0 : ulo[t], hi = c0 + kKeyChunk - 1 < uhi[t] ? c0 + kKeyChunk - 1 : uhi[t];
      if (lo > hi) continue;
      Ops::ValueTiles(b, b.s + 4 * t * ss, ss, int32_t(lo), int32_t(hi), na[t], hi == uhi[t] ? inv[t] : nullptr,
                      b.out + 4 * t, lo > ulo[t]);
    }
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

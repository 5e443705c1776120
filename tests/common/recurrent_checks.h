// Checks of the recurrent mixers' kernels (engine/cpu/recurrent_kernels.h) against their
// reference, shared by the unit tests (each ISA of this CPU) and the emulated AVX-512 tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/random_data.h"
#include "engine/cpu/recurrent_kernels.h"

namespace zf::testing {

using DeltaFn = void (*)(const engine::rec::DeltaRuleArgs&, int32_t, int32_t);
using ScanFn = void (*)(const engine::rec::ScanArgs&);

inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One head's inputs: n_tok rows of [q | k | v] (q, k L2-normalized as the op feeds them),
// decays in (0, 1), betas in (0, 1), a random state.
struct DeltaCase {
  int32_t dk, dv, n_tok;
  std::vector<float> qkv, g, b, S0;
  size_t stride() const { return size_t(2 * dk + dv); }
  DeltaCase(int32_t dk_, int32_t dv_, int32_t n, uint32_t seed) : dk(dk_), dv(dv_), n_tok(n) {
    qkv = RandomFloats(stride() * size_t(n), seed);
    for (int32_t t = 0; t < n; ++t) {
      for (int32_t part = 0; part < 2; ++part) {
        float* x = qkv.data() + size_t(t) * stride() + size_t(part * dk);
        float ss = 0.0f;
        for (int32_t i = 0; i < dk; ++i) ss += x[i] * x[i];
        for (int32_t i = 0; i < dk; ++i) x[i] /= std::sqrt(ss);
      }
    }
    const std::vector<float> r = RandomFloats(size_t(2 * n), seed + 1);
    for (int32_t t = 0; t < n; ++t) {
      g.push_back(1.0f / (1.0f + std::exp(-r[size_t(t)] - 2.0f)));
      b.push_back(1.0f / (1.0f + std::exp(-r[size_t(n + t)])));
    }
    S0 = RandomFloats(size_t(dk) * size_t(dv), seed + 2, 0.3f);
  }
  // Positions [t0, t1) into S and out (n_tok rows of dv), columns [c0, c1).
  void Run(DeltaFn fn, std::vector<float>* S, std::vector<float>* out, int32_t t0, int32_t t1, int32_t c0,
           int32_t c1) const {
    engine::rec::DeltaRuleArgs a;
    a.S = S->data();
    a.dk = dk;
    a.dv = dv;
    a.q = qkv.data() + size_t(t0) * stride();
    a.k = a.q + dk;
    a.qk_stride = stride();
    a.v = a.q + 2 * dk;
    a.v_stride = stride();
    a.g = g.data() + t0;
    a.b = b.data() + t0;
    a.scale = 1.0f / std::sqrt(float(dk));
    a.o = out->data() + size_t(t0) * size_t(dv);
    a.o_stride = size_t(dv);
    a.n_tok = t1 - t0;
    fn(a, c0, c1);
  }
};

struct ScanCase {
  int32_t P, N, n_tok;
  std::vector<float> x, bc, dt, dA, s0;
  ScanCase(int32_t P_, int32_t N_, int32_t n, uint32_t seed) : P(P_), N(N_), n_tok(n) {
    x = RandomFloats(size_t(P) * size_t(n), seed);
    bc = RandomFloats(size_t(2 * N) * size_t(n), seed + 1);
    const std::vector<float> r = RandomFloats(size_t(n), seed + 2);
    for (int32_t t = 0; t < n; ++t) {
      dt.push_back(std::log1p(std::exp(r[size_t(t)])));
      dA.push_back(std::exp(-dt.back()));
    }
    s0 = RandomFloats(size_t(P) * size_t(N), seed + 3, 0.3f);
  }
  void Run(ScanFn fn, std::vector<float>* s, std::vector<float>* y, int32_t t0, int32_t t1) const {
    engine::rec::ScanArgs a;
    a.s = s->data();
    a.P = P;
    a.N = N;
    a.x = x.data() + size_t(t0) * size_t(P);
    a.x_stride = size_t(P);
    a.B = bc.data() + size_t(t0) * size_t(2 * N);
    a.C = a.B + N;
    a.bc_stride = size_t(2 * N);
    a.dt = dt.data() + t0;
    a.dA = dA.data() + t0;
    a.D = 0.75f;
    a.y = y->data() + size_t(t0) * size_t(P);
    a.y_stride = size_t(P);
    a.n_tok = t1 - t0;
    fn(a);
  }
};

// The kernel against the reference, whole and one position at a time in column blocks of the
// dispatcher's width and an odd one: the same bits.
inline void CheckDeltaRuleKernel(DeltaFn fn) {
  for (auto [dk, dv] : {std::pair{128, 128}, std::pair{32, 32}, std::pair{32, 44}, std::pair{256, 256}}) {
    const DeltaCase c(dk, dv, 7, uint32_t(dk + dv));
    std::vector<float> S_ref = c.S0, o_ref(size_t(c.n_tok) * size_t(dv));
    c.Run(engine::rec::DeltaRuleRef, &S_ref, &o_ref, 0, c.n_tok, 0, dv);
    {
      std::vector<float> S = c.S0, o(o_ref.size());
      c.Run(fn, &S, &o, 0, c.n_tok, 0, dv);
      EXPECT_TRUE(SameBits(S, S_ref) && SameBits(o, o_ref)) << "dk " << dk << " dv " << dv;
      // One position at a time, in column blocks of the dispatcher's width and an odd one.
      for (int32_t block : {engine::rec::DeltaRuleBlock(dk), 24}) {
        S = c.S0;
        std::fill(o.begin(), o.end(), 0.0f);
        for (int32_t t = 0; t < c.n_tok; ++t) {
          for (int32_t c0 = 0; c0 < dv; c0 += block) c.Run(fn, &S, &o, t, t + 1, c0, std::min(dv, c0 + block));
        }
        EXPECT_TRUE(SameBits(S, S_ref) && SameBits(o, o_ref)) << "dk " << dk << " dv " << dv << " block " << block;
      }
    }
  }
}

// The kernel against the reference, whole, in steps of 2, 1, 1, ... and in two chunks split
// inside a 16-position tile: the same bits. 37 positions take two full tiles of the AVX-512
// kernel and a partial one; the state sizes cover its tiled widths (32 ... 256) and the rest.
inline void CheckScanKernel(ScanFn fn) {
  for (auto [P, N] : {std::pair{64, 128}, std::pair{6, 32}, std::pair{5, 20}, std::pair{64, 16}, std::pair{3, 256},
                      std::pair{7, 64}}) {
    for (int32_t n_tok : {6, 37}) {
      const ScanCase c(P, N, n_tok, uint32_t(P * N + n_tok));
      std::vector<float> s_ref = c.s0, y_ref(size_t(P) * size_t(c.n_tok));
      c.Run(engine::rec::ScanRef, &s_ref, &y_ref, 0, c.n_tok);
      std::vector<float> s = c.s0, y(y_ref.size());
      c.Run(fn, &s, &y, 0, c.n_tok);
      EXPECT_TRUE(SameBits(s, s_ref) && SameBits(y, y_ref)) << "P " << P << " N " << N << " n " << n_tok;
      s = c.s0;
      std::fill(y.begin(), y.end(), 0.0f);
      c.Run(fn, &s, &y, 0, 2);
      for (int32_t t = 2; t < c.n_tok; ++t) c.Run(fn, &s, &y, t, t + 1);
      EXPECT_TRUE(SameBits(s, s_ref) && SameBits(y, y_ref)) << "P " << P << " N " << N << " n " << n_tok << " in steps";
      s = c.s0;
      std::fill(y.begin(), y.end(), 0.0f);
      const int32_t split = c.n_tok / 2 + 1;
      c.Run(fn, &s, &y, 0, split);
      c.Run(fn, &s, &y, split, c.n_tok);
      EXPECT_TRUE(SameBits(s, s_ref) && SameBits(y, y_ref)) << "P " << P << " N " << N << " n " << n_tok << " in two";
    }
  }
}

}  // namespace zf::testing

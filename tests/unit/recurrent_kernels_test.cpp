// The recurrent mixers' kernels (engine/cpu/recurrent_kernels.h): every ISA's delta rule and
// Mamba-2 scan give the reference's bits, and so does any split into column blocks or steps
// (the exactness rule: one token at a time = chunks = a cached prefix).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/random_data.h"
#include "engine/cpu/recurrent_kernels.h"
#include "quant/kernels.h"

namespace zf::engine::rec {
namespace {

using testing::RandomFloats;
using DeltaFn = void (*)(const DeltaRuleArgs&, int32_t, int32_t);
using ScanFn = void (*)(const ScanArgs&);

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<DeltaFn> DeltaKernels() {
  std::vector<DeltaFn> k = {DeltaRule};
#if defined(__x86_64__) || defined(__i386__)
  if (quant::CpuHasAvx2Fma16()) k.push_back(DeltaRuleAvx2);
  if (quant::CpuHasAvx512Vnni()) k.push_back(DeltaRuleAvx512);
#endif
  return k;
}

std::vector<ScanFn> ScanKernels() {
  std::vector<ScanFn> k = {Scan};
#if defined(__x86_64__) || defined(__i386__)
  if (quant::CpuHasAvx2Fma16()) k.push_back(ScanAvx2);
  if (quant::CpuHasAvx512Vnni()) k.push_back(ScanAvx512);
#endif
  return k;
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
    DeltaRuleArgs a;
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

TEST(DeltaRule, EveryKernelAndSplitGivesTheReferenceBits) {
  for (auto [dk, dv] : {std::pair{128, 128}, std::pair{32, 32}, std::pair{32, 44}, std::pair{256, 256}}) {
    const DeltaCase c(dk, dv, 7, uint32_t(dk + dv));
    std::vector<float> S_ref = c.S0, o_ref(size_t(c.n_tok) * size_t(dv));
    c.Run(DeltaRuleRef, &S_ref, &o_ref, 0, c.n_tok, 0, dv);
    for (DeltaFn fn : DeltaKernels()) {
      std::vector<float> S = c.S0, o(o_ref.size());
      c.Run(fn, &S, &o, 0, c.n_tok, 0, dv);
      EXPECT_TRUE(SameBits(S, S_ref) && SameBits(o, o_ref)) << "dk " << dk << " dv " << dv;
      // One position at a time, in column blocks of the dispatcher's width and an odd one.
      for (int32_t block : {DeltaRuleBlock(dk), 24}) {
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

// The delta rule itself: with g = 1, b = 1 and a zero state, one step stores k v^T and reads
// (k . q) v back.
TEST(DeltaRule, FirstStepWritesKeyTimesValue) {
  DeltaCase c(32, 32, 1, 5);
  c.g[0] = 1.0f;
  c.b[0] = 1.0f;
  std::vector<float> S(c.S0.size(), 0.0f), o(32);
  c.Run(DeltaRule, &S, &o, 0, 1, 0, 32);
  const float* q = c.qkv.data();
  const float* k = q + 32;
  const float* v = q + 64;
  float kq = 0.0f;
  for (int i = 0; i < 32; ++i) kq += k[i] * q[i];
  for (int j = 0; j < 32; ++j) {
    EXPECT_NEAR(S[size_t(5 * 32 + j)], k[5] * v[j], 1e-6f);
    EXPECT_NEAR(o[size_t(j)], kq * v[j] / std::sqrt(32.0f), 1e-5f);
  }
}

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
    ScanArgs a;
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

TEST(MambaScan, EveryKernelAndSplitGivesTheReferenceBits) {
  for (auto [P, N] : {std::pair{64, 128}, std::pair{6, 32}, std::pair{5, 20}, std::pair{64, 16}}) {
    const ScanCase c(P, N, 6, uint32_t(P * N));
    std::vector<float> s_ref = c.s0, y_ref(size_t(P) * size_t(c.n_tok));
    c.Run(ScanRef, &s_ref, &y_ref, 0, c.n_tok);
    for (ScanFn fn : ScanKernels()) {
      std::vector<float> s = c.s0, y(y_ref.size());
      c.Run(fn, &s, &y, 0, c.n_tok);
      EXPECT_TRUE(SameBits(s, s_ref) && SameBits(y, y_ref)) << "P " << P << " N " << N;
      s = c.s0;
      std::fill(y.begin(), y.end(), 0.0f);
      c.Run(fn, &s, &y, 0, 2);
      for (int32_t t = 2; t < c.n_tok; ++t) c.Run(fn, &s, &y, t, t + 1);
      EXPECT_TRUE(SameBits(s, s_ref) && SameBits(y, y_ref)) << "P " << P << " N " << N << " in steps";
    }
  }
}

// The scan itself against a plain double-precision loop: s = s dA + B x dt, y = C . s + D x.
TEST(MambaScan, MatchesThePlainRecurrence) {
  const ScanCase c(6, 40, 4, 11);
  std::vector<float> s = c.s0, y(size_t(6 * 4));
  c.Run(Scan, &s, &y, 0, 4);
  std::vector<double> sd(c.s0.begin(), c.s0.end());
  for (int32_t t = 0; t < 4; ++t) {
    const float* B = c.bc.data() + size_t(t) * 80;
    for (int32_t i = 0; i < 6; ++i) {
      double sum = 0.0;
      for (int32_t n = 0; n < 40; ++n) {
        double& e = sd[size_t(i * 40 + n)];
        e = e * c.dA[size_t(t)] + double(B[n]) * c.x[size_t(t * 6 + i)] * c.dt[size_t(t)];
        sum += e * B[40 + n];
      }
      EXPECT_NEAR(y[size_t(t * 6 + i)], sum + 0.75 * c.x[size_t(t * 6 + i)], 1e-4) << t << " " << i;
    }
  }
}

}  // namespace
}  // namespace zf::engine::rec

// Inner loops of the recurrent mixers (gated DeltaNet's delta rule, Mamba-2's selective scan):
// scalar reference, AVX-512 and AVX2. Every kernel computes each output element with the same
// operations in the same order (fused multiply-adds, sums in a fixed order), so the ISA, the
// split into column blocks and the split into steps never change a bit; the reference
// (std::fma) is the specification the vector kernels are tested against.
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/ops.h"

namespace zf::engine::rec {

// A recurrence over n_tok positions cut at the snapshots' rows (increasing): run(t0, t1) for
// each non-empty span of positions, in order, and at(k) once the positions before snapshot k
// ran (the state then is that snapshot's). Positions run in order either way: the cuts change
// no bit (the same as steps ending there).
template <typename Run, typename At>
void RunToSnapshots(const StateSnapshots& snaps, int32_t n_tok, Run&& run, At&& at) {
  int32_t t0 = 0;
  for (int32_t k = 0; k <= snaps.n; ++k) {
    const int32_t t1 = k < snaps.n ? snaps.at[k].rows : n_tok;
    if (t1 > t0) run(t0, t1);
    if (k < snaps.n) at(k);
    t0 = t1;
  }
}

// One value head of the gated delta rule over n_tok positions, value columns [c0, c1) of the
// key-major state S [dk][dv] (row stride dv). Position t reads q_t = q + t * qk_stride and
// k_t = k + t * qk_stride (dk floats each), v_t = v + t * v_stride, the decay g[t] and beta b[t],
// and writes o_t = o + t * o_stride (columns c0..c1). Per column j, in this order:
//   acc = sum over i (in order) of (S[i][j] * g) * k[i]            (fma chain from 0)
//   d = (v[j] - acc) * b
//   S[i][j] = fma(k[i], d, S[i][j] * g); o = sum over i of S[i][j] * q[i]   (fma chain from 0)
//   o[j] = o * scale
// Columns are independent: any column split gives the same bits.
struct DeltaRuleArgs {
  float* S;
  int32_t dk, dv;
  const float* q;
  const float* k;
  size_t qk_stride;
  const float* v;
  size_t v_stride;
  const float* g;
  const float* b;
  float scale;
  float* o;
  size_t o_stride;
  int32_t n_tok;
};

// a's positions [t0, t1) alone.
inline DeltaRuleArgs Positions(DeltaRuleArgs a, int32_t t0, int32_t t1) {
  a.q += size_t(t0) * a.qk_stride;
  a.k += size_t(t0) * a.qk_stride;
  a.v += size_t(t0) * a.v_stride;
  a.g += t0;
  a.b += t0;
  a.o += size_t(t0) * a.o_stride;
  a.n_tok = t1 - t0;
  return a;
}

// With the fastest kernel this CPU has.
void DeltaRule(const DeltaRuleArgs& a, int32_t c0, int32_t c1);
// The column block a task of DeltaRule should take: a multiple of every kernel's width that keeps
// the block's [dk][width] state in the L1 cache.
int32_t DeltaRuleBlock(int32_t dk);

void DeltaRuleRef(const DeltaRuleArgs& a, int32_t c0, int32_t c1);
#if defined(__x86_64__) || defined(__i386__)
void DeltaRuleAvx512(const DeltaRuleArgs& a, int32_t c0, int32_t c1);  // recurrent_avx512.cpp
void DeltaRuleAvx2(const DeltaRuleArgs& a, int32_t c0, int32_t c1);    // recurrent_avx2.cpp
#endif

// One Mamba-2 head's selective scan over n_tok positions, state s [P][N]. Position t reads
// x_t = x + t * x_stride (P floats), B_t = B + t * bc_stride and C_t = C + t * bc_stride (N
// floats), dt[t] and dA[t], and writes y_t = y + t * y_stride (P floats). Per row i:
//   xdt = x[i] * dt;  s[i][n] = fma(B[n], xdt, s[i][n] * dA)
//   16 partial sums part[n % 16] = fma(s[i][n], C[n], part) over the first N - N % 16 state
//   entries, folded in halves (part[j] += part[j + 8], then + 4, + 2, + 1), then the remaining
//   entries' fma in order;  y[i] = fma(x[i], D, sum)
struct ScanArgs {
  float* s;
  int32_t P, N;
  const float* x;
  size_t x_stride;
  const float* B;
  const float* C;
  size_t bc_stride;
  const float* dt;
  const float* dA;
  float D;
  float* y;
  size_t y_stride;
  int32_t n_tok;
};

// a's positions [t0, t1) alone.
inline ScanArgs Positions(ScanArgs a, int32_t t0, int32_t t1) {
  a.x += size_t(t0) * a.x_stride;
  a.B += size_t(t0) * a.bc_stride;
  a.C += size_t(t0) * a.bc_stride;
  a.dt += t0;
  a.dA += t0;
  a.y += size_t(t0) * a.y_stride;
  a.n_tok = t1 - t0;
  return a;
}

void Scan(const ScanArgs& a);  // with the fastest kernel this CPU has
void ScanRef(const ScanArgs& a);
#if defined(__x86_64__) || defined(__i386__)
void ScanAvx512(const ScanArgs& a);  // recurrent_avx512.cpp
void ScanAvx2(const ScanArgs& a);    // recurrent_avx2.cpp
#endif

// The mixers' SiLUs with the activation kernels' silu (act::SiluMul, vectorized): x = silu(x),
// and y = y * silu(z), over n floats. Element by element, so any split gives the same bits.
void SiluInPlace(float* x, int64_t n);
void SiluGate(float* y, const float* z, int64_t n);

}  // namespace zf::engine::rec

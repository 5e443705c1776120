// The CPU engine's recurrent op of Qwen3.5: the gated DeltaNet (Backend::GatedDeltaNet) and the
// sigmoid gate of its attention layers' output. Exact per-position recurrence (no chunked form:
// the WY/UT chunked form would make a position's bits depend on where its chunk starts).
#include <algorithm>
#include <cmath>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/recurrent_kernels.h"

namespace zf::engine {
namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// The reference's softplus: the identity above 20 (exp would lose nothing).
float Softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// x / sqrt(sum x^2 + eps), in place.
void L2Normalize(float* x, int32_t n, float eps) {
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float s = 1.0f / std::sqrt(sum + eps);
  for (int32_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace

void CpuBackend::GatedDeltaNet(const float* qkv, const float* alpha, const float* beta, int32_t n_tok,
                               const DeltaNetParams& p, float* state, const StateSnapshots& snaps, float* y) {
  const int32_t C = p.channels(), d = p.d_conv - 1, dk = p.head_k_dim, dv = p.head_v_dim;
  const size_t W = size_t(C);
  // 1. The causal convolution over the state's rows and the step's, then SiLU; q and k of each
  // key head L2-normalized. Positions are independent: split across threads by position, each
  // computed by the same code whatever the split.
  conv_window_.resize(size_t(d + n_tok) * W);
  float* u = conv_window_.data();
  std::copy(state, state + size_t(d) * W, u);
  std::copy(qkv, qkv + size_t(n_tok) * W, u + size_t(d) * W);
  delta_qkv_.resize(size_t(n_tok) * W);
  const float* kt = TransposedConv(p.conv, W, p.d_conv);
  pool_->ParallelFor(n_tok, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* out = delta_qkv_.data() + size_t(t) * W;
      // Per channel 0 + the taps in order; the loops run along contiguous channels.
      std::fill(out, out + W, 0.0f);
      for (int32_t j = 0; j <= d; ++j) {
        const float* uj = u + size_t(t + j) * W;
        const float* kj = kt + size_t(j) * W;
        for (size_t c = 0; c < W; ++c) out[c] += uj[c] * kj[c];
      }
      rec::SiluInPlace(out, int64_t(W));
      for (int32_t h = 0; h < 2 * p.n_k_heads; ++h) L2Normalize(out + size_t(h) * size_t(dk), dk, p.eps);
    }
  });
  // The convolution's state after `rows` positions is the window's d rows from there.
  for (int32_t k = 0; k < snaps.n; ++k) {
    std::copy(u + size_t(snaps.at[k].rows) * W, u + size_t(snaps.at[k].rows + d) * W, snaps.at[k].state);
  }
  std::copy(u + size_t(n_tok) * W, u + size_t(n_tok + d) * W, state);

  // 2. The delta rule (engine/cpu/recurrent_kernels.h): per value head and block of value
  // columns, every position in order. Columns and heads are independent, so the tasks (and the
  // ISA's kernel) never change a bit: one token at a time = chunks = a cached prefix.
  float* S_all = state + size_t(d) * W;
  const float scale = 1.0f / std::sqrt(float(dk));
  const int32_t key_dim = p.n_k_heads * dk, Hv = p.n_v_heads;
  delta_gb_.resize(size_t(2) * size_t(Hv) * size_t(n_tok));
  float* gs = delta_gb_.data();  // [Hv][n_tok] decays, then [Hv][n_tok] betas
  float* bs = gs + size_t(Hv) * size_t(n_tok);
  for (int32_t h = 0; h < Hv; ++h) {
    for (int32_t t = 0; t < n_tok; ++t) {
      const size_t at = size_t(t) * size_t(Hv) + size_t(h), to = size_t(h) * size_t(n_tok) + size_t(t);
      gs[to] = std::exp(Softplus(alpha[at] + p.dt_bias[h]) * p.a[h]);
      bs[to] = Sigmoid(beta[at]);
    }
  }
  const int32_t block = rec::DeltaRuleBlock(dk), per_head = (dv + block - 1) / block;
  pool_->ParallelFor(int64_t{Hv} * per_head, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int32_t h = int32_t(j / per_head), c0 = int32_t(j % per_head) * block;
      const int32_t kh = h % p.n_k_heads;
      rec::DeltaRuleArgs a;
      a.S = S_all + size_t(h) * size_t(dk) * size_t(dv);
      a.dk = dk;
      a.dv = dv;
      a.q = delta_qkv_.data() + size_t(kh) * size_t(dk);
      a.k = delta_qkv_.data() + size_t(key_dim) + size_t(kh) * size_t(dk);
      a.qk_stride = W;
      a.v = delta_qkv_.data() + size_t(2 * key_dim) + size_t(h) * size_t(dv);
      a.v_stride = W;
      a.g = gs + size_t(h) * size_t(n_tok);
      a.b = bs + size_t(h) * size_t(n_tok);
      a.scale = scale;
      a.o = y + size_t(h) * size_t(dv);
      a.o_stride = size_t(Hv) * size_t(dv);
      const int32_t c1 = std::min(dv, c0 + block);
      // The task's columns of the head's state copied out at each snapshot's row
      // (rec::RunToSnapshots).
      rec::RunToSnapshots(
          snaps, n_tok, [&](int32_t t0, int32_t t1) { rec::DeltaRule(rec::Positions(a, t0, t1), c0, c1); },
          [&](int32_t k) {
            float* to = snaps.at[k].state + size_t(d) * W + size_t(h) * size_t(dk) * size_t(dv);
            for (int32_t i = 0; i < dk; ++i) {
              const float* row = a.S + size_t(i) * size_t(dv);
              std::copy(row + c0, row + c1, to + size_t(i) * size_t(dv) + c0);
            }
          });
    }
  });
}

void CpuBackend::SigmoidGate(float* x, const float* gate, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= Sigmoid(gate[i]);
}

}  // namespace zf::engine

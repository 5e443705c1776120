// Mamba-2's mixer on the CPU (Backend::Mamba2): the causal depthwise convolution over the conv
// state and the step's xBC rows, then the selective scan token by token (recurrent_kernels.h),
// the D skip, the SiLU gate of z and the group RMS norm. The math is the reference's ssm_conv / ssm_scan /
// swiglu_split / rms_norm sequence (llama.cpp's build_mamba2_layer).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/split_work.h"
#include "engine/cpu/recurrent_kernels.h"

namespace zf::engine {
namespace {

// ggml's softplus: the identity above 20 (exp would overflow the float).
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

// Transposing on every call cost 1.25% of Qwen 3.5 0.8B decode at one thread (perf), on the
// caller while the workers waited.
const float* CpuBackend::TransposedConv(const float* kernel, size_t channels, int32_t taps) {
  std::vector<float>& t = conv_t_[kernel];
  if (t.size() != channels * size_t(taps)) {
    t.resize(channels * size_t(taps));
    for (size_t c = 0; c < channels; ++c) {
      for (int32_t j = 0; j < taps; ++j) t[size_t(j) * channels + c] = kernel[c * size_t(taps) + size_t(j)];
    }
  }
  return t.data();
}

void CpuBackend::Mamba2(const float* zxbcdt, int32_t n_tok, const Mamba2Params& p, float* state,
                        const StateSnapshots& snaps, float* y) {
  const int64_t C = int64_t{p.d_inner} + 2 * int64_t{p.n_group} * p.d_state;  // conv channels
  const int64_t row = int64_t{p.d_inner} + C + p.n_head;                     // ssm_in's output row
  const int64_t taps = p.d_conv - 1, N = p.d_state, P = p.d_inner / p.n_head;
  const int64_t heads_per_group = p.n_head / p.n_group;
  float* conv_state = state;                 // [taps][C]
  float* ssm_state = state + taps * C;       // [n_head][P][N]

  // Convolution: window u = the state rows then this step's xBC rows; output t reads u[t .. t + taps].
  conv_window_.resize(size_t((taps + n_tok) * C));
  float* u = conv_window_.data();
  std::copy(conv_state, conv_state + taps * C, u);
  for (int32_t t = 0; t < n_tok; ++t) {
    const float* xbc = zxbcdt + t * row + p.d_inner;
    std::copy(xbc, xbc + C, u + (taps + t) * C);
  }
  ssm_xbc_.resize(size_t(int64_t{n_tok} * C));
  // Per channel 0 + the taps in order (+ the bias); the loops run along contiguous channels.
  const float* wt = TransposedConv(p.conv_w, size_t(C), p.d_conv);
  const auto conv = [&](int64_t c0, int64_t c1) {
    for (int32_t t = 0; t < n_tok; ++t) {
      float* out = ssm_xbc_.data() + t * C;
      std::fill(out + c0, out + c1, 0.0f);
      for (int64_t j = 0; j <= taps; ++j) {
        const float* uj = u + (t + j) * C;
        const float* wj = wt + j * C;
        for (int64_t c = c0; c < c1; ++c) out[c] += uj[c] * wj[c];
      }
      if (p.conv_b != nullptr) {
        for (int64_t c = c0; c < c1; ++c) out[c] += p.conv_b[c];
      }
      rec::SiluInPlace(out + c0, c1 - c0);
    }
  };
  // A decode step's few thousand channels on the caller: less work than a pool round trip.
  SplitRows(pool_, C, n_tok, kSplitElements, conv);
  // The conv state after `rows` positions is the window's taps rows from there.
  for (int32_t k = 0; k < snaps.n; ++k) {
    std::copy(u + int64_t{snaps.at[k].rows} * C, u + (snaps.at[k].rows + taps) * C, snaps.at[k].state);
  }
  std::copy(u + int64_t{n_tok} * C, u + (n_tok + taps) * C, conv_state);

  // Selective scan (engine/cpu/recurrent_kernels.h), head by head: heads are independent and
  // every position runs in order, so neither the split nor the steps change a bit.
  ssm_dt_.resize(size_t(2) * size_t(p.n_head) * size_t(n_tok));
  float* dts = ssm_dt_.data();  // [n_head][n_tok] dt, then [n_head][n_tok] exp(dt * A)
  float* dAs = dts + size_t(p.n_head) * size_t(n_tok);
  for (int64_t h = 0; h < p.n_head; ++h) {
    for (int32_t t = 0; t < n_tok; ++t) {
      const float dt = Softplus(zxbcdt[t * row + p.d_inner + C + h] + p.dt_bias[h]);
      dts[h * n_tok + t] = dt;
      dAs[h * n_tok + t] = std::exp(dt * p.a[h]);
    }
  }
  pool_->ParallelFor(p.n_head, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t g = h / heads_per_group;
      rec::ScanArgs a;
      a.s = ssm_state + h * P * N;
      a.P = int32_t(P);
      a.N = int32_t(N);
      a.x = ssm_xbc_.data() + h * P;
      a.x_stride = size_t(C);
      a.B = ssm_xbc_.data() + p.d_inner + g * N;
      a.C = ssm_xbc_.data() + p.d_inner + int64_t{p.n_group} * N + g * N;
      a.bc_stride = size_t(C);
      a.dt = dts + h * n_tok;
      a.dA = dAs + h * n_tok;
      a.D = p.d[h];
      a.y = y + h * P;
      a.y_stride = size_t(p.d_inner);
      // The head's state copied out at each snapshot's row (rec::RunToSnapshots).
      rec::RunToSnapshots(
          snaps, n_tok, [&](int32_t t0, int32_t t1) { rec::Scan(rec::Positions(a, t0, t1)); },
          [&](int32_t k) { std::copy(a.s, a.s + P * N, snaps.at[k].state + taps * C + h * P * N); });
    }
  });

  // Gate with silu(z), then the RMS norm of each group of d_inner / n_group: per position and
  // group, independent, split across threads.
  const int64_t gw = p.d_inner / p.n_group;
  pool_->ParallelFor(int64_t{n_tok} * p.n_group, [&](int64_t u0, int64_t u1) {
    for (int64_t unit = u0; unit < u1; ++unit) {
      const int64_t t = unit / p.n_group, g = unit % p.n_group;
      const float* z = zxbcdt + t * row + g * gw;
      float* yg = y + t * p.d_inner + g * gw;
      rec::SiluGate(yg, z, gw);
      if (p.norm_w == nullptr) continue;
      double sq = 0.0;
      for (int64_t i = 0; i < gw; ++i) sq += double(yg[i]) * double(yg[i]);
      const float scale = 1.0f / std::sqrt(float(sq / double(gw)) + p.eps);
      for (int64_t i = 0; i < gw; ++i) yg[i] = yg[i] * scale * p.norm_w[g * gw + i];
    }
  });
}

}  // namespace zf::engine

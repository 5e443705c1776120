// The CPU engine's recurrent op of Qwen3.5: the gated DeltaNet (Backend::GatedDeltaNet) and the
// sigmoid gate of its attention layers' output. Exact per-position recurrence (no chunked form).
#include <algorithm>
#include <cmath>

#include "engine/cpu/cpu_backend.h"

namespace zf::engine {
namespace {

float Silu(float x) { return x / (1.0f + std::exp(-x)); }
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
                               const DeltaNetParams& p, float* state, float* y) {
  const int32_t C = p.channels(), d = p.d_conv - 1, dk = p.head_k_dim, dv = p.head_v_dim;
  const size_t W = size_t(C);
  // 1. The causal convolution over the state's rows and the step's, then SiLU; q and k of each
  // key head L2-normalized. Small work per position: the calling thread.
  conv_window_.resize(size_t(d + n_tok) * W);
  float* u = conv_window_.data();
  std::copy(state, state + size_t(d) * W, u);
  std::copy(qkv, qkv + size_t(n_tok) * W, u + size_t(d) * W);
  delta_qkv_.resize(size_t(n_tok) * W);
  for (int32_t t = 0; t < n_tok; ++t) {
    float* out = delta_qkv_.data() + size_t(t) * W;
    for (size_t c = 0; c < W; ++c) {
      const float* k = p.conv + c * size_t(p.d_conv);
      float sum = 0.0f;
      for (int32_t j = 0; j <= d; ++j) sum += u[size_t(t + j) * W + c] * k[j];
      out[c] = Silu(sum);
    }
    for (int32_t h = 0; h < 2 * p.n_k_heads; ++h) L2Normalize(out + size_t(h) * size_t(dk), dk, p.eps);
  }
  std::copy(u + size_t(n_tok) * W, u + size_t(n_tok + d) * W, state);

  // 2. Per value head the delta rule over the positions in order. Heads are independent: split
  // across threads without changing any head's arithmetic. S is key-major [d_k][d_v], so every
  // loop below runs along a contiguous row of d_v (vectorized) while each value column still
  // sums over the key dims in order.
  float* S_all = state + size_t(d) * W;
  const float scale = 1.0f / std::sqrt(float(dk));
  const int32_t key_dim = p.n_k_heads * dk, Hv = p.n_v_heads;
  pool_->ParallelFor(Hv, [&](int64_t h0, int64_t h1) {
    float delta[1024];  // dv <= 1024 (the description's head sizes are checked at load)
    for (int64_t h = h0; h < h1; ++h) {
      const int32_t kh = int32_t(h) % p.n_k_heads;
      float* S = S_all + size_t(h) * size_t(dk) * size_t(dv);
      for (int32_t t = 0; t < n_tok; ++t) {
        const float* row = delta_qkv_.data() + size_t(t) * W;
        const float* q = row + size_t(kh) * size_t(dk);
        const float* k = row + size_t(key_dim) + size_t(kh) * size_t(dk);
        const float* v = row + size_t(2 * key_dim) + size_t(h) * size_t(dv);
        const float g = std::exp(Softplus(alpha[size_t(t) * size_t(Hv) + size_t(h)] + p.dt_bias[h]) * p.a[h]);
        const float b = Sigmoid(beta[size_t(t) * size_t(Hv) + size_t(h)]);
        for (size_t i = 0; i < size_t(dk) * size_t(dv); ++i) S[i] *= g;
        // delta = (v - S^T k) * beta
        for (int32_t j = 0; j < dv; ++j) delta[j] = 0.0f;
        for (int32_t i = 0; i < dk; ++i) {
          const float* si = S + size_t(i) * size_t(dv);
          for (int32_t j = 0; j < dv; ++j) delta[j] += si[j] * k[i];
        }
        for (int32_t j = 0; j < dv; ++j) delta[j] = (v[j] - delta[j]) * b;
        // S += k delta^T; o = S^T q / sqrt(d_k)
        float* o = y + size_t(t) * size_t(Hv) * size_t(dv) + size_t(h) * size_t(dv);
        for (int32_t j = 0; j < dv; ++j) o[j] = 0.0f;
        for (int32_t i = 0; i < dk; ++i) {
          float* si = S + size_t(i) * size_t(dv);
          for (int32_t j = 0; j < dv; ++j) si[j] += k[i] * delta[j];
          for (int32_t j = 0; j < dv; ++j) o[j] += si[j] * q[i];
        }
        for (int32_t j = 0; j < dv; ++j) o[j] *= scale;
      }
    }
  });
}

void CpuBackend::SigmoidGate(float* x, const float* gate, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= Sigmoid(gate[i]);
}

}  // namespace zf::engine

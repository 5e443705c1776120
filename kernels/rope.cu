// Rotary position embedding, optionally fused with the per-head RMSNorm that QK-norm models
// apply right before it (one read and one write of q/k instead of two each). Positions come
// from device memory. Angles are computed like the CPU engine (theta multiplied by
// base^(-2/n_rot) once per pair index, in float) so both engines agree to rounding.
#include "common.cuh"

namespace zfk {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 512;

__global__ void __launch_bounds__(kThreads)
    RopeKernel(float* x, int n_heads, int head_dim, const int32_t* __restrict__ pos, zfk_rope_params p,
               float theta_scale) {
  __shared__ float row[kMaxHeadDim];
  __shared__ float red[32];
  const int t = blockIdx.y, h = blockIdx.x;
  float* v = x + (int64_t(t) * n_heads + h) * head_dim;
  for (int i = threadIdx.x; i < head_dim; i += kThreads) row[i] = v[i];
  if (p.d_norm_w != nullptr) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < head_dim; i += kThreads) s += row[i] * row[i];
    s = BlockSum(s, red);
    const float scale = rsqrtf(s / float(head_dim) + p.norm_eps);
    __syncthreads();
    for (int i = threadIdx.x; i < head_dim; i += kThreads) row[i] = row[i] * scale * p.d_norm_w[i];
  }
  __syncthreads();
  const int half = p.n_rot / 2;
  const float base_theta = float(pos[t]) * p.freq_scale;
  for (int i = threadIdx.x; i < half; i += kThreads) {
    float theta = base_theta;
    for (int j = 0; j < i; ++j) theta *= theta_scale;  // same rounding sequence as the CPU loop
    if (p.d_freq_factors != nullptr) theta /= p.d_freq_factors[i];
    float s, c;
    sincosf(theta, &s, &c);
    const int i0 = p.style == ZFK_ROPE_NORM ? 2 * i : i;
    const int i1 = p.style == ZFK_ROPE_NORM ? 2 * i + 1 : i + half;
    const float a = row[i0], b = row[i1];
    row[i0] = a * c - b * s;
    row[i1] = a * s + b * c;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < head_dim; i += kThreads) v[i] = row[i];
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_rope(float* d_x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* d_pos,
                            const zfk_rope_params* p, void* stream) {
  using namespace zfk;
  if (!d_x || !d_pos || !p) return Fail(ZFK_ERR_ARG, "zfk_rope: NULL pointer");
  if (n_tok <= 0 || n_tok > 65535 || n_heads <= 0 || head_dim <= 0 || head_dim > kMaxHeadDim || p->n_rot < 0 ||
      p->n_rot > head_dim || p->n_rot % 2 != 0 || (p->style != ZFK_ROPE_NORM && p->style != ZFK_ROPE_NEOX)) {
    return Fail(ZFK_ERR_ARG, "zfk_rope: bad shape n_tok=%d n_heads=%d head_dim=%d n_rot=%d style=%d", n_tok, n_heads,
                head_dim, p->n_rot, p->style);
  }
  const float theta_scale = p->n_rot > 0 ? powf(p->base, -2.0f / float(p->n_rot)) : 1.0f;
  RopeKernel<<<dim3(n_heads, n_tok), kThreads, 0, S(stream)>>>(d_x, n_heads, head_dim, d_pos, *p, theta_scale);
  return CheckLaunch("rope kernel launch");
}

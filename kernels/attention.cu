// Attention over the F16 KV cache with online softmax (no score matrix in memory), causal with
// an optional sliding window and logit softcap; positions are read from device memory.
//  - Decode (one query): flash-decoding. The KV range is cut into kChunk-position splits, one
//    block per (head, split) computes a partial (max, sum, weighted V); a combine kernel merges
//    them. The grid covers n_ctx, so a captured graph stays valid as the position grows
//    (splits past the position exit at once).
//  - Prefill: one warp per (query, head) streaming its causal range.
//    TODO(gpu session): a tensor-core tiled flash-attention kernel for long prompts.
// Q is rounded to F16 before the dot products, as the CPU engine does with an F16 cache.
#include <cuda_fp16.h>
#include <math.h>

#include "common.cuh"

namespace zfk {
namespace {

constexpr int kChunk = 256;   // KV positions per decode split
constexpr int kWarps = 4;
constexpr int kMaxDim = 256;  // head_dim_k and head_dim_v limit (8 values per lane)
constexpr int kPerLane = kMaxDim / 32;

struct Shape {
  const __half* k;
  const __half* v;
  int k_width, v_width, n_head, group, hd_k, hd_v;
  float scale, softcap;
  int window, n_split;
};

__device__ __forceinline__ float Score(float dot, const Shape& s) {
  float x = dot * s.scale;
  if (s.softcap > 0.0f) x = s.softcap * tanhf(x / s.softcap);
  return x;
}

__device__ __forceinline__ int WindowStart(int pq, int window) { return window > 0 ? max(0, pq - window + 1) : 0; }

// One key of the online softmax (flash attention): fold score x and V row vr into the running
// max m, normalizer l and this lane's output elements acc (elements lane + 32 i).
template <int kLanes>
__device__ __forceinline__ void OnlineSoftmaxStep(float x, const __half* vr, int hd_v, int lane, float& m, float& l,
                                                  float (&acc)[kLanes]) {
  const float m_new = fmaxf(m, x);
  const float corr = expf(m - m_new), p = expf(x - m_new);
  l = l * corr + p;
#pragma unroll
  for (int i = 0; i < kLanes; ++i) {
    const int d = lane + 32 * i;
    if (d < hd_v) acc[i] = acc[i] * corr + p * __half2float(vr[d]);
  }
  m = m_new;
}

__global__ void __launch_bounds__(kWarps * 32)
    DecodeSplitKernel(Shape s, const float* __restrict__ q, const int32_t* __restrict__ pos, float* __restrict__ work) {
  __shared__ float qs[kMaxDim];
  __shared__ float wm[kWarps], wl[kWarps];
  __shared__ float wacc[kWarps][kMaxDim];
  const int h = blockIdx.x, split = blockIdx.y;
  const int g = h / s.group;
  const int pq = pos[0];
  const int start = WindowStart(pq, s.window) + split * kChunk;
  const int end = min(start + kChunk, pq + 1);
  float* part = work + (int64_t(h) * s.n_split + split) * (s.hd_v + 2);
  if (start >= end) {  // block-uniform: this split lies past the current position
    if (threadIdx.x == 0) part[0] = -INFINITY, part[1] = 0.0f;
    return;
  }
  for (int d = threadIdx.x; d < s.hd_k; d += blockDim.x) qs[d] = __half2float(__float2half_rn(q[h * s.hd_k + d]));
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m = -INFINITY, l = 0.0f, acc[kPerLane] = {};
  for (int j = start + warp; j < end; j += kWarps) {
    const __half* kr = s.k + int64_t(j) * s.k_width + g * s.hd_k;
    float dot = 0.0f;
    for (int d = lane; d < s.hd_k; d += 32) dot += qs[d] * __half2float(kr[d]);
    OnlineSoftmaxStep(Score(WarpSum(dot), s), s.v + int64_t(j) * s.v_width + g * s.hd_v, s.hd_v, lane, m, l, acc);
  }
  if (lane == 0) wm[warp] = m, wl[warp] = l;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < s.hd_v) wacc[warp][d] = acc[i];
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, wm[w]);
  float f[kWarps];
  float sum = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    f[w] = wm[w] == -INFINITY ? 0.0f : expf(wm[w] - mx);  // a warp with no key contributes nothing
    sum += f[w] * wl[w];
  }
  for (int d = threadIdx.x; d < s.hd_v; d += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kWarps; ++w) o += f[w] * wacc[w][d];
    part[2 + d] = o;
  }
  if (threadIdx.x == 0) part[0] = mx, part[1] = sum;
}

__global__ void DecodeCombineKernel(Shape s, const int32_t* __restrict__ pos, const float* __restrict__ work,
                                    float* __restrict__ out) {
  const int h = blockIdx.x;
  const int pq = pos[0];
  const int n_used = min(s.n_split, (pq + 1 - WindowStart(pq, s.window) + kChunk - 1) / kChunk);
  const float* part = work + int64_t(h) * s.n_split * (s.hd_v + 2);
  float mx = -INFINITY;
  for (int i = 0; i < n_used; ++i) mx = fmaxf(mx, part[i * (s.hd_v + 2)]);
  float sum = 0.0f;
  for (int i = 0; i < n_used; ++i) {
    const float* p = part + i * (s.hd_v + 2);
    if (p[0] != -INFINITY) sum += expf(p[0] - mx) * p[1];
  }
  const float inv = 1.0f / sum;
  for (int d = threadIdx.x; d < s.hd_v; d += blockDim.x) {
    float o = 0.0f;
    for (int i = 0; i < n_used; ++i) {
      const float* p = part + i * (s.hd_v + 2);
      if (p[0] != -INFINITY) o += expf(p[0] - mx) * p[2 + d];
    }
    out[h * s.hd_v + d] = o * inv;
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    PrefillKernel(Shape s, const float* __restrict__ q, int n_tok, const int32_t* __restrict__ pos,
                  float* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const int h = blockIdx.x;
  const int t = blockIdx.y * kWarps + (threadIdx.x >> 5);
  if (t >= n_tok) return;  // warp-uniform
  const int g = h / s.group;
  const int pq = pos[t];
  float qr[kPerLane];
  const float* qh = q + (int64_t(t) * s.n_head + h) * s.hd_k;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    qr[i] = d < s.hd_k ? __half2float(__float2half_rn(qh[d])) : 0.0f;
  }
  float m = -INFINITY, l = 0.0f, acc[kPerLane] = {};
  for (int j = WindowStart(pq, s.window); j <= pq; ++j) {
    const __half* kr = s.k + int64_t(j) * s.k_width + g * s.hd_k;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < s.hd_k) dot += qr[i] * __half2float(kr[d]);
    }
    OnlineSoftmaxStep(Score(WarpSum(dot), s), s.v + int64_t(j) * s.v_width + g * s.hd_v, s.hd_v, lane, m, l, acc);
  }
  float* oh = out + (int64_t(t) * s.n_head + h) * s.hd_v;
  const float inv = 1.0f / l;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < s.hd_v) oh[d] = acc[i] * inv;
  }
}

int32_t MakeShape(const zfk_kv_layer* kv, const zfk_attn_params* p, Shape* s) {
  if (!kv || !p || !kv->d_k || !kv->d_v) return Fail(ZFK_ERR_ARG, "zfk_attention: NULL pointer");
  if (p->n_head <= 0 || p->n_head_kv <= 0 || p->n_head % p->n_head_kv != 0 || p->head_dim_k <= 0 ||
      p->head_dim_k > kMaxDim || p->head_dim_v <= 0 || p->head_dim_v > kMaxDim || kv->n_ctx <= 0 ||
      kv->k_width < p->n_head_kv * p->head_dim_k || kv->v_width < p->n_head_kv * p->head_dim_v || p->window < 0) {
    return Fail(ZFK_ERR_ARG, "zfk_attention: bad shape (n_head=%d n_head_kv=%d head_dim=%d/%d, max %d)", p->n_head,
                p->n_head_kv, p->head_dim_k, p->head_dim_v, kMaxDim);
  }
  *s = Shape{static_cast<const __half*>(kv->d_k), static_cast<const __half*>(kv->d_v), kv->k_width, kv->v_width,
             p->n_head, p->n_head / p->n_head_kv, p->head_dim_k, p->head_dim_v, p->scale, p->softcap, p->window,
             (kv->n_ctx + kChunk - 1) / kChunk};
  return ZFK_OK;
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_attention_workspace(const zfk_kv_layer* kv, const zfk_attn_params* p, size_t* n_floats) {
  using namespace zfk;
  Shape s;
  if (n_floats == nullptr) return Fail(ZFK_ERR_ARG, "zfk_attention_workspace: n_floats is NULL");
  if (int32_t st = MakeShape(kv, p, &s)) return st;
  *n_floats = size_t(s.n_head) * size_t(s.n_split) * size_t(s.hd_v + 2);
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_attention(const zfk_kv_layer* kv, const zfk_attn_params* p, const float* d_q, int32_t n_tok,
                                 const int32_t* d_pos, float* d_out, float* d_work, void* stream) {
  using namespace zfk;
  Shape s;
  if (int32_t st = MakeShape(kv, p, &s)) return st;
  if (!d_q || !d_pos || !d_out || n_tok <= 0) return Fail(ZFK_ERR_ARG, "zfk_attention: bad arguments");
  if (n_tok == 1) {
    if (d_work == nullptr) return Fail(ZFK_ERR_ARG, "zfk_attention: decode needs a workspace");
    DecodeSplitKernel<<<dim3(s.n_head, s.n_split), kWarps * 32, 0, S(stream)>>>(s, d_q, d_pos, d_work);
    if (int32_t st = CheckLaunch("attention decode kernel launch")) return st;
    DecodeCombineKernel<<<s.n_head, 128, 0, S(stream)>>>(s, d_pos, d_work, d_out);
    return CheckLaunch("attention combine kernel launch");
  }
  if (Blocks(n_tok, kWarps) > 65535) return Fail(ZFK_ERR_ARG, "zfk_attention: n_tok %d too large", n_tok);
  PrefillKernel<<<dim3(s.n_head, Blocks(n_tok, kWarps)), kWarps * 32, 0, S(stream)>>>(s, d_q, n_tok, d_pos, d_out);
  return CheckLaunch("attention prefill kernel launch");
}

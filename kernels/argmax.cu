// Greedy sampling on the device: the index of the largest logit (lowest index among equals, as
// the CPU sampler picks), so only 4 bytes cross to the host per token.
#include <float.h>

#include "common.cuh"

namespace zfk {
namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) ArgmaxKernel(const float* __restrict__ x, int n, int32_t* out) {
  __shared__ float best_v[kThreads];
  __shared__ int best_i[kThreads];
  float bv = -FLT_MAX;
  int bi = n;  // sentinel larger than any index
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float v = x[i];
    if (v > bv || (v == bv && i < bi)) bv = v, bi = i;  // NaN never wins
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float ov = best_v[threadIdx.x + s];
      const int oi = best_i[threadIdx.x + s];
      if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = best_i[0] < n ? best_i[0] : 0;
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_argmax(const float* d_x, int32_t n, int32_t* d_index, void* stream) {
  using namespace zfk;
  if (!d_x || !d_index || n <= 0) return Fail(ZFK_ERR_ARG, "zfk_argmax: bad arguments");
  ArgmaxKernel<<<1, kThreads, 0, S(stream)>>>(d_x, n, d_index);
  return CheckLaunch("argmax kernel launch");
}

// RMSNorm, plain and fused with the residual add that precedes it in every block (x += h; y =
// norm(x) * w): one block per row, the row read once into registers/shared memory.
#include "common.cuh"

namespace zfk {
namespace {

constexpr int kThreads = 256;

// Fused = true: x += h first (x written back), then normalized into y.
template <bool Fused>
__global__ void __launch_bounds__(kThreads)
    RmsNormKernel(float* x, const float* h, const float* __restrict__ w, int n, float eps, float* y) {  // y may alias h
  __shared__ float red[32];
  float* xr = x + int64_t(blockIdx.x) * n;
  float* yr = y + int64_t(blockIdx.x) * n;
  const float* hr = Fused ? h + int64_t(blockIdx.x) * n : nullptr;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    float v = xr[i];
    if (Fused) {
      v += hr[i];
      xr[i] = v;
    }
    sum += v * v;
  }
  sum = BlockSum(sum, red);
  const float scale = rsqrtf(sum / float(n) + eps);
  for (int i = threadIdx.x; i < n; i += kThreads) yr[i] = xr[i] * scale * w[i];  // each thread rereads its own x
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_rms_norm(const float* d_x, const float* d_w, int32_t rows, int32_t n, float eps, float* d_y,
                                void* stream) {
  using namespace zfk;
  if (!d_x || !d_w || !d_y) return Fail(ZFK_ERR_ARG, "zfk_rms_norm: NULL pointer");
  if (rows <= 0 || n <= 0) return Fail(ZFK_ERR_ARG, "zfk_rms_norm: rows=%d n=%d", rows, n);
  RmsNormKernel<false><<<rows, kThreads, 0, S(stream)>>>(const_cast<float*>(d_x), nullptr, d_w, n, eps, d_y);
  return CheckLaunch("rms_norm kernel launch");
}

ZFK_EXPORT int32_t zfk_add_rms_norm(float* d_x, const float* d_h, const float* d_w, int32_t rows, int32_t n, float eps,
                                    float* d_y, void* stream) {
  using namespace zfk;
  if (!d_x || !d_h || !d_w || !d_y) return Fail(ZFK_ERR_ARG, "zfk_add_rms_norm: NULL pointer");
  if (rows <= 0 || n <= 0) return Fail(ZFK_ERR_ARG, "zfk_add_rms_norm: rows=%d n=%d", rows, n);
  RmsNormKernel<true><<<rows, kThreads, 0, S(stream)>>>(d_x, d_h, d_w, n, eps, d_y);
  return CheckLaunch("add_rms_norm kernel launch");
}

// Element-wise ops of the forward pass: residual add, bias add, logit softcap.
#include "common.cuh"

namespace zfk {
namespace {

constexpr int kThreads = 256;

__global__ void AddKernel(float* x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) x[i] += y[i];
}
__global__ void AddBiasKernel(float* x, const float* __restrict__ b, int64_t total, int n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    x[i] += b[i % n];
  }
}
__global__ void SoftcapKernel(float* x, int64_t n, float cap) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] / cap);
  }
}

// Grid-stride loops: enough blocks to fill the GPU, never more than the 2^31-1 limit.
unsigned Grid(int64_t n) { return unsigned(n / kThreads + 1 < 65536 ? n / kThreads + 1 : 65536); }

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_add(float* d_x, const float* d_y, int64_t n, void* stream) {
  using namespace zfk;
  if (!d_x || !d_y || n < 0) return Fail(ZFK_ERR_ARG, "zfk_add: bad arguments");
  if (n == 0) return ZFK_OK;
  AddKernel<<<Grid(n), kThreads, 0, S(stream)>>>(d_x, d_y, n);
  return CheckLaunch("add kernel launch");
}

ZFK_EXPORT int32_t zfk_add_bias(float* d_x, const float* d_b, int32_t rows, int32_t n, void* stream) {
  using namespace zfk;
  if (!d_x || !d_b || rows < 0 || n <= 0) return Fail(ZFK_ERR_ARG, "zfk_add_bias: bad arguments");
  const int64_t total = int64_t(rows) * n;
  if (total == 0) return ZFK_OK;
  AddBiasKernel<<<Grid(total), kThreads, 0, S(stream)>>>(d_x, d_b, total, n);
  return CheckLaunch("add_bias kernel launch");
}

ZFK_EXPORT int32_t zfk_softcap(float* d_x, int64_t n, float cap, void* stream) {
  using namespace zfk;
  if (!d_x || n < 0 || !(cap > 0.0f)) return Fail(ZFK_ERR_ARG, "zfk_softcap: bad arguments");
  if (n == 0) return ZFK_OK;
  SoftcapKernel<<<Grid(n), kThreads, 0, S(stream)>>>(d_x, n, cap);
  return CheckLaunch("softcap kernel launch");
}

// Gated activations: gate = act(gate) * up (SwiGLU, GeGLU). GELU follows the CPU reference
// exactly: tanh approximation evaluated on the F16-rounded input, result rounded to F16,
// inputs beyond +-10 bypass (that reference uses an F16 lookup table).
#include "common.cuh"

#include <cuda_fp16.h>

namespace zfk {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float GeluF16(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  const float h = __half2float(__float2half_rn(x));
  const float g = 0.5f * h * (1.0f + tanhf(0.79788456080286535587989211986876f * h * (1.0f + 0.044715f * h * h)));
  return __half2float(__float2half_rn(g));
}

template <int Act>
__global__ void GluKernel(float* gate, const float* __restrict__ up, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = gate[i];
    const float a = Act == ZFK_ACT_GELU_TANH ? GeluF16(x) : x / (1.0f + expf(-x));
    gate[i] = a * up[i];
  }
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_gated_act(int32_t act, float* d_gate, const float* d_up, int64_t n, void* stream) {
  using namespace zfk;
  if (!d_gate || !d_up || n < 0) return Fail(ZFK_ERR_ARG, "zfk_gated_act: bad arguments");
  if (n == 0) return ZFK_OK;
  const unsigned grid = unsigned(n / kThreads + 1 < 65536 ? n / kThreads + 1 : 65536);
  if (act == ZFK_ACT_SILU) {
    GluKernel<ZFK_ACT_SILU><<<grid, kThreads, 0, S(stream)>>>(d_gate, d_up, n);
  } else if (act == ZFK_ACT_GELU_TANH) {
    GluKernel<ZFK_ACT_GELU_TANH><<<grid, kThreads, 0, S(stream)>>>(d_gate, d_up, n);
  } else {
    return Fail(ZFK_ERR_ARG, "zfk_gated_act: unknown activation %d", act);
  }
  return CheckLaunch("gated activation kernel launch");
}

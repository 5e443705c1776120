// Appends k/v rows to the F16 KV cache at positions read from device memory (F32 -> F16 with
// round-to-nearest-even, as the CPU engine stores them).
#include <cuda_fp16.h>

#include "common.cuh"

namespace zfk {
namespace {

__global__ void StoreKvKernel(__half* kc, __half* vc, const float* __restrict__ k, const float* __restrict__ v,
                              const int32_t* __restrict__ pos, int k_width, int v_width) {
  const int t = blockIdx.y;
  const int64_t slot = pos[t];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < k_width + v_width; i += gridDim.x * blockDim.x) {
    if (i < k_width) {
      kc[slot * k_width + i] = __float2half_rn(k[int64_t(t) * k_width + i]);
    } else {
      const int j = i - k_width;
      vc[slot * v_width + j] = __float2half_rn(v[int64_t(t) * v_width + j]);
    }
  }
}

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_store_kv(const zfk_kv_layer* kv, const float* d_k, const float* d_v, int32_t n_tok,
                                const int32_t* d_pos, void* stream) {
  using namespace zfk;
  if (!kv || !kv->d_k || !kv->d_v || !d_k || !d_v || !d_pos) return Fail(ZFK_ERR_ARG, "zfk_store_kv: NULL pointer");
  if (n_tok <= 0 || n_tok > 65535 || kv->k_width <= 0 || kv->v_width <= 0) {
    return Fail(ZFK_ERR_ARG, "zfk_store_kv: bad shape n_tok=%d", n_tok);
  }
  const int width = kv->k_width + kv->v_width;
  StoreKvKernel<<<dim3(Blocks(width, 256), n_tok), 256, 0, S(stream)>>>(
      static_cast<__half*>(kv->d_k), static_cast<__half*>(kv->d_v), d_k, d_v, d_pos, kv->k_width, kv->v_width);
  return CheckLaunch("store_kv kernel launch");
}

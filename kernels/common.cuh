// Shared by every kernel file: exported-symbol macro, the thread-local error text behind
// zfk_last_error, status helpers, and warp reductions.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "zfk.h"

#define ZFK_EXPORT extern "C" __attribute__((visibility("default")))

namespace zfk {

// Records the message for zfk_last_error() on this thread and returns `status`.
int32_t Fail(int32_t status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// ZFK_OK, or ZFK_ERR_CUDA naming `what` when the last launch (or `e`) failed.
int32_t Check(cudaError_t e, const char* what);
inline int32_t CheckLaunch(const char* what) { return Check(cudaGetLastError(), what); }

inline cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over a block of up to 1024 threads (every thread gets the result). `smem` holds 32 floats.
__device__ __forceinline__ float BlockSum(float v, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpSum(v);
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) >> 5;
  v = lane < n_warps ? smem[lane] : 0.0f;
  return WarpSum(v);
}

inline unsigned Blocks(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace zfk

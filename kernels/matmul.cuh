// Launchers behind zfk_matmul: warp-per-row GEMV (few tokens) and tensor-core GEMM (prefill).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace zfk {

// y[t, r] = W[r, :] . x[t, :]; W rows are row_bytes apart; k % 32 == 0. Returns a ZFK status.
int32_t LaunchGemv(int type, const uint8_t* w, size_t row_bytes, int64_t k, int64_t m, const float* x, int32_t n_tok,
                   float* y, cudaStream_t s);
int32_t LaunchGemmMma(int type, const uint8_t* w, size_t row_bytes, int64_t k, int64_t m, const float* x,
                      int32_t n_tok, float* y, cudaStream_t s);

}  // namespace zfk

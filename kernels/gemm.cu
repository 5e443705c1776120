// Prefill GEMM on tensor cores: each 64x64 output tile (weight rows x tokens) walks K in
// 32-element groups; a group of 64 weight rows is dequantized from the GGUF blocks into shared
// memory as F16 (the "dequantize tiles" approach: no dequantized copy of the weights in device
// memory), the activations are rounded to F16, and WMMA 16x16x16 accumulates in F32.
// F16 rather than BF16: 3 more mantissa bits; activations beyond +-65504 would overflow, which
// the parity tests on real-shaped models are there to catch (then switch this file to BF16).
#include <mma.h>

#include "common.cuh"
#include "matmul.cuh"
#include "quant.cuh"

namespace zfk {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kLd = kBK + 8;  // +8 halves: rows start on different banks
constexpr int kThreads = 128; // 4 warps, each a 32x32 quarter of the tile

template <int Type>
__global__ void __launch_bounds__(kThreads)
    GemmKernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t k, int64_t m, const float* __restrict__ x,
               int32_t n_tok, float* __restrict__ y) {
  using namespace nvcuda;
  __shared__ __align__(32) __half ws[kBM][kLd];
  __shared__ __align__(32) __half xs[kBN][kLd];
  __shared__ __align__(32) float cs[kBN][kBM + 4];
  const int tid = threadIdx.x, warp = tid >> 5;
  const int64_t r0 = int64_t(blockIdx.x) * kBM;
  const int t0 = blockIdx.y * kBN;
  const int wr = (warp >> 1) * 32, wt = (warp & 1) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int ng = int(k / kBK);
  for (int g = 0; g < ng; ++g) {
    if (tid < kBM) {
      float v[32];
      if (r0 + tid < m) {
        DequantGroup<Type>(w + (r0 + tid) * row_bytes, g, v);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j) v[j] = 0.0f;
      }
#pragma unroll
      for (int j = 0; j < 32; ++j) ws[tid][j] = __float2half_rn(v[j]);
    }
    for (int i = tid; i < kBN * kBK; i += kThreads) {
      const int t = i / kBK, j = i % kBK;
      const float f = t0 + t < n_tok ? x[int64_t(t0 + t) * k + int64_t(g) * kBK + j] : 0.0f;
      xs[t][j] = __float2half_rn(f);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &ws[wr + 16 * i][kk], kLd);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &xs[wt + 16 * j][kk], kLd);  // B[k][t] = xs[t][k]
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  // C[r][t] stored column-major = cs[t][r]; then written with bounds checks, coalesced over r.
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&cs[wt + 16 * j][wr + 16 * i], acc[i][j], kBM + 4, wmma::mem_col_major);
  __syncthreads();
  for (int i = tid; i < kBM * kBN; i += kThreads) {
    const int t = i / kBM, r = i % kBM;
    if (t0 + t < n_tok && r0 + r < m) y[int64_t(t0 + t) * m + r0 + r] = cs[t][r];
  }
}

struct Gemm {
  const uint8_t* w; size_t row_bytes; int64_t k, m; const float* x; int32_t n_tok; float* y; cudaStream_t s;
  template <int Type>
  void operator()() const {
    const dim3 grid(Blocks(m, kBM), Blocks(n_tok, kBN));
    GemmKernel<Type><<<grid, kThreads, 0, s>>>(w, row_bytes, k, m, x, n_tok, y);
  }
};

}  // namespace

int32_t LaunchGemmMma(int type, const uint8_t* w, size_t row_bytes, int64_t k, int64_t m, const float* x,
                      int32_t n_tok, float* y, cudaStream_t s) {
  if (!DispatchType(type, Gemm{w, row_bytes, k, m, x, n_tok, y, s})) {
    return Fail(ZFK_ERR_UNSUPPORTED, "zfk_matmul: no GEMM kernel for type %d", type);
  }
  return CheckLaunch("GEMM kernel launch");
}

}  // namespace zfk

// Quantized GEMV for decode: each weight row is dotted by `split` warps of a block (1, 2 or 4),
// each lane dequantizing whole 32-element groups straight from the GGUF blocks (no dequantized
// copy of the weights) and dotting them with up to kTok activation rows at once, so a few tokens
// share one read of the weights; the split warps' sums meet in shared memory.
// Decode is bound by weight bandwidth and, for the narrow matrices of small models, by how many
// loads are in flight: with one warp per row a 1152-row matrix keeps ~9 warps per SM busy (H200
// profile, doc/cuda.md), so matrices with few rows split each row across more warps.
// TODO(gpu session): a q8_1 activation + dp4a variant and 128-bit weight loads are the next steps
// (the measured GEMV bandwidth is in doc/cuda.md).
#include "common.cuh"
#include "matmul.cuh"
#include "quant.cuh"

namespace zfk {
namespace {

constexpr int kTok = 4;         // activation rows per pass
constexpr int kWarpsPerBlock = 4;

template <int Type, int Split>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    GemvKernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t k, int64_t m, const float* __restrict__ x,
               int32_t n_tok, float* __restrict__ y) {
  __shared__ float part[kWarpsPerBlock][kTok];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t r = int64_t(blockIdx.x) * (kWarpsPerBlock / Split) + warp / Split;
  const int piece = warp % Split;
  const int t0 = blockIdx.y * kTok;
  float acc[kTok] = {};
  if (r < m) {  // warp-uniform
    const uint8_t* row = w + r * row_bytes;
    const int ng = int(k / 32);
    for (int g = piece * 32 + lane; g < ng; g += 32 * Split) {
      float v[32];
      DequantGroup<Type>(row, g, v);
#pragma unroll
      for (int t = 0; t < kTok; ++t) {
        if (t0 + t >= n_tok) break;
        const float4* xp = reinterpret_cast<const float4*>(x + int64_t(t0 + t) * k + g * 32);
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float4 f = __ldg(xp + i);
          s += v[4 * i] * f.x + v[4 * i + 1] * f.y + v[4 * i + 2] * f.z + v[4 * i + 3] * f.w;
        }
        acc[t] += s;
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kTok; ++t) acc[t] = WarpSum(acc[t]);
  if (Split == 1) {
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (lane == 0 && r < m && t0 + t < n_tok) y[int64_t(t0 + t) * m + r] = acc[t];
    }
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < kTok; ++t) part[warp][t] = acc[t];
  }
  __syncthreads();
  if (piece == 0 && lane < kTok && r < m && t0 + lane < n_tok) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < Split; ++i) s += part[warp + i][lane];  // the row's pieces, in order
    y[int64_t(t0 + lane) * m + r] = s;
  }
}

// Warps per row: enough warps in flight to cover the memory latency (a few per SM slot), but
// each lane keeps at least two groups of a row to walk.
int SplitFor(int64_t k, int64_t m) {
  const int64_t groups = k / 32;
  int split = 1;
  while (split < kWarpsPerBlock && m * split < 16384 && groups >= int64_t(64) * split * 2) split *= 2;
  return split;
}

struct Gemv {
  const uint8_t* w; size_t row_bytes; int64_t k, m; const float* x; int32_t n_tok; float* y; cudaStream_t s;
  template <int Type>
  void operator()() const {
    switch (SplitFor(k, m)) {
      case 4: Launch<Type, 4>(); break;
      case 2: Launch<Type, 2>(); break;
      default: Launch<Type, 1>(); break;
    }
  }
  template <int Type, int Split>
  void Launch() const {
    const dim3 grid(Blocks(m, kWarpsPerBlock / Split), Blocks(n_tok, kTok));
    GemvKernel<Type, Split><<<grid, kWarpsPerBlock * 32, 0, s>>>(w, row_bytes, k, m, x, n_tok, y);
  }
};
}  // namespace

int32_t LaunchGemv(int type, const uint8_t* w, size_t row_bytes, int64_t k, int64_t m, const float* x, int32_t n_tok,
                   float* y, cudaStream_t s) {
  if (Blocks(n_tok, kTok) > 65535) return Fail(ZFK_ERR_ARG, "zfk_matmul: n_tok %d too large for GEMV", n_tok);
  if (!DispatchType(type, Gemv{w, row_bytes, k, m, x, n_tok, y, s})) {
    return Fail(ZFK_ERR_UNSUPPORTED, "zfk_matmul: no GEMV kernel for type %d", type);
  }
  return CheckLaunch("GEMV kernel launch");
}

}  // namespace zfk

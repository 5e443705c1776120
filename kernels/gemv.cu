// Quantized GEMV for decode: one warp per weight row, each lane dequantizes whole 32-element
// groups straight from the GGUF blocks (no dequantized copy of the weights) and dots them with
// up to kTok activation rows at once, so a few tokens share one read of the weights.
// Decode is bound by weight bandwidth; this reads each weight byte exactly once per kTok tokens.
// TODO(gpu session): measure; a q8_1 activation + dp4a variant and 128-bit weight loads by
// quarter-warps per block are the next steps if it is below ~70% of peak bandwidth.
#include "common.cuh"
#include "matmul.cuh"
#include "quant.cuh"

namespace zfk {
namespace {

constexpr int kTok = 4;         // activation rows per pass
constexpr int kWarpsPerBlock = 4;

template <int Type>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    GemvKernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t k, int64_t m, const float* __restrict__ x,
               int32_t n_tok, float* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (r >= m) return;  // warp-uniform
  const int t0 = blockIdx.y * kTok;
  const uint8_t* row = w + r * row_bytes;
  float acc[kTok] = {};
  const int ng = int(k / 32);
  for (int g = lane; g < ng; g += 32) {
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
#pragma unroll
  for (int t = 0; t < kTok; ++t) {
    const float s = WarpSum(acc[t]);
    if (lane == 0 && t0 + t < n_tok) y[int64_t(t0 + t) * m + r] = s;
  }
}

struct Gemv {
  const uint8_t* w; size_t row_bytes; int64_t k, m; const float* x; int32_t n_tok; float* y; cudaStream_t s;
  template <int Type>
  void operator()() const {
    const dim3 grid(Blocks(m, kWarpsPerBlock), Blocks(n_tok, kTok));
    GemvKernel<Type><<<grid, kWarpsPerBlock * 32, 0, s>>>(w, row_bytes, k, m, x, n_tok, y);
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

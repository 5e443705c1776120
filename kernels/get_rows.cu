// Embedding lookup: row ids are read on the device (so a captured decode step replays with a new
// token), each thread dequantizes one 32-element group of a row from its GGUF blocks.
#include "common.cuh"
#include "quant.cuh"

namespace zfk {
namespace {

template <int Type>
__global__ void GetRowsKernel(const uint8_t* __restrict__ table, size_t row_bytes, int64_t width,
                              const int32_t* __restrict__ ids, float scale, float* __restrict__ out) {
  const int t = blockIdx.y;
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g * 32 >= width) return;
  float v[32];
  DequantGroup<Type>(table + size_t(ids[t]) * row_bytes, int(g), v);
  float4* o = reinterpret_cast<float4*>(out + int64_t(t) * width + g * 32);
#pragma unroll
  for (int i = 0; i < 8; ++i) o[i] = make_float4(v[4 * i] * scale, v[4 * i + 1] * scale, v[4 * i + 2] * scale, v[4 * i + 3] * scale);
}

struct GetRows {
  const uint8_t* table; size_t row_bytes; int64_t width; const int32_t* ids; int32_t n; float scale; float* out;
  cudaStream_t s;
  template <int Type>
  void operator()() const {
    const dim3 grid(Blocks(width / 32, 64), n);
    GetRowsKernel<Type><<<grid, 64, 0, s>>>(table, row_bytes, width, ids, scale, out);
  }
};

}  // namespace
}  // namespace zfk

ZFK_EXPORT int32_t zfk_get_rows(int32_t type, const void* d_table, int64_t width, const int32_t* d_ids, int32_t n,
                                float scale, float* d_out, void* stream) {
  using namespace zfk;
  if (!d_table || !d_ids || !d_out) return Fail(ZFK_ERR_ARG, "zfk_get_rows: NULL pointer");
  if (n <= 0 || n > 65535 || width <= 0 || width % 32 != 0 || BlockBytes(type) == 0 || width % BlockElems(type) != 0) {
    return Fail(ZFK_ERR_ARG, "zfk_get_rows: bad shape width=%lld n=%d type=%d", (long long)width, n, type);
  }
  const GetRows op{static_cast<const uint8_t*>(d_table), RowBytes(type, width), width, d_ids, n, scale, d_out, S(stream)};
  if (!DispatchType(type, op)) return Fail(ZFK_ERR_UNSUPPORTED, "zfk_get_rows: type %d", type);
  return CheckLaunch("get_rows kernel launch");
}

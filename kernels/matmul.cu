// zfk_matmul: validates the arguments and picks GEMV (decode, few tokens) or the tensor-core
// GEMM (prefill). ZFK_NO_MMA=1 in the environment forces GEMV everywhere (debugging parity).
#include <stdlib.h>

#include "common.cuh"
#include "matmul.cuh"
#include "quant.cuh"

namespace {
// From 16 tokens on, one 64-token GEMM tile beats re-reading the weights every 4 tokens.
constexpr int32_t kMmaMinTokens = 16;

bool NoMma() {
  static const bool no = [] {
    const char* e = getenv("ZFK_NO_MMA");
    return e != nullptr && e[0] == '1';
  }();
  return no;
}
}  // namespace

ZFK_EXPORT int32_t zfk_matmul(int32_t type, const void* d_w, int64_t k, int64_t m, const float* d_x, int32_t n_tok,
                              float* d_y, void* stream) {
  using namespace zfk;
  if (d_w == nullptr || d_x == nullptr || d_y == nullptr) return Fail(ZFK_ERR_ARG, "zfk_matmul: NULL pointer");
  if (k <= 0 || m <= 0 || n_tok <= 0 || k % 32 != 0 || BlockBytes(type) == 0 || k % BlockElems(type) != 0) {
    return Fail(ZFK_ERR_ARG, "zfk_matmul: bad shape k=%lld m=%lld n_tok=%d for type %d", (long long)k, (long long)m,
                n_tok, type);
  }
  const size_t row_bytes = RowBytes(type, k);
  const auto* w = static_cast<const uint8_t*>(d_w);
  if (n_tok >= kMmaMinTokens && !NoMma()) return LaunchGemmMma(type, w, row_bytes, k, m, d_x, n_tok, d_y, S(stream));
  return LaunchGemv(type, w, row_bytes, k, m, d_x, n_tok, d_y, S(stream));
}

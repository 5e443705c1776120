// Dispatch and the GELU table of the encoders' F16 products (f16_gemm.h).
#include "quant/f16_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/kernels.h"
#include "quant/quant.h"

namespace zf::quant::f16 {

bool Available() {
#if defined(__x86_64__) || defined(_M_X64)
  static const bool ok = CpuHasAvx2Fma16();
  return ok;
#else
  return false;
#endif
}

void Gemm(int64_t k, const uint16_t* w, int64_t ldw, int64_t rows, const float* a, int64_t lda, int64_t n_tok,
          float* y, int64_t ldy) {
#if defined(__x86_64__) || defined(_M_X64)
  static const bool avx512 = std::strcmp(ActiveIsa(), "avx512-vnni") == 0;
  // The kernels take whole groups of 8; the k % 8 left (a 14 x 14 x 3 patch: 588 = 73 x 8 + 4)
  // is added per pair here, a few products against the hundreds before it.
  const int64_t k8 = k / 8 * 8;
  if (k8 == 0) {
    for (int64_t t = 0; t < n_tok; ++t) std::fill(y + t * ldy, y + t * ldy + rows, 0.0f);
  } else if (avx512) {
    avx512::GemmF16(k8, w, ldw, rows, a, lda, n_tok, y, ldy);
  } else {
    avx2::GemmF16(k8, w, ldw, rows, a, lda, n_tok, y, ldy);
  }
  if (k8 == k) return;
  for (int64_t r = 0; r < rows; ++r) {
    float wt[8];
    for (int64_t i = k8; i < k; ++i) wt[i - k8] = Fp16ToFp32(w[r * ldw + i]);
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* at = a + t * lda + k8;
      float s = 0.0f;
      for (int64_t i = 0; i < k - k8; ++i) s += at[i] * wt[i];
      y[t * ldy + r] += s;
    }
  }
#else
  (void)k, (void)w, (void)ldw, (void)rows, (void)a, (void)lda, (void)n_tok, (void)y, (void)ldy;
#endif
}

void GemmT(int64_t k, const uint16_t* wt, int64_t ldw, int64_t cols, const float* a, int64_t lda, int64_t n_tok,
           float* y, int64_t ldy) {
#if defined(__x86_64__) || defined(_M_X64)
  static const bool avx512 = std::strcmp(ActiveIsa(), "avx512-vnni") == 0;
  if (avx512) {
    avx512::GemmF16T(k, wt, ldw, cols, a, lda, n_tok, y, ldy);
    return;
  }
  avx2::GemmF16T(k, wt, ldw, cols, a, lda, n_tok, y, ldy);
#else
  (void)k, (void)wt, (void)ldw, (void)cols, (void)a, (void)lda, (void)n_tok, (void)y, (void)ldy;
#endif
}

const uint16_t* GeluTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const float x = Fp16ToFp32(uint16_t(i));
      t[i] = Fp32ToFp16(0.5f * x * (1.0f + std::tanh(0.79788456080286535588f * x * (1.0f + 0.044715f * x * x))));
    }
    return t;
  }();
  return table.data();
}

}  // namespace zf::quant::f16

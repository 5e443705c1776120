// Store-side quantizers of the CPU KV cache (kv_quant.h).
#include "engine/cpu/kv_quant.h"

#include <cmath>

#include "quant/blocks.h"
#include "quant/quant.h"

namespace zf::engine::kvq {

void Rotate32(float* x, int64_t n) {
  constexpr float kScale = 0.17677669529663687f;  // 1 / sqrt(32)
  for (int64_t g = 0; g < n; g += quant::kQK, x += quant::kQK) {
    for (int len = 1; len < quant::kQK; len <<= 1) {  // butterflies: (a, b) -> (a + b, a - b)
      for (int i = 0; i < quant::kQK; i += 2 * len) {
        for (int j = i; j < i + len; ++j) {
          const float a = x[j], b = x[j + len];
          x[j] = a + b;
          x[j + len] = a - b;
        }
      }
    }
    for (int j = 0; j < quant::kQK; ++j) x[j] *= kScale;
  }
}

void QuantizeQ8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<quant::BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / quant::kQK; ++b, x += quant::kQK) {
    float amax = 0.0f;
    for (int j = 0; j < quant::kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = quant::Fp32ToFp16(d);
    for (int j = 0; j < quant::kQK; ++j) y[b].qs[j] = int8_t(std::roundf(x[j] * id));
  }
}

void QuantizeQ4_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<quant::BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / quant::kQK; ++b, x += quant::kQK) {
    float amax = 0.0f, mx = 0.0f;
    for (int j = 0; j < quant::kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        mx = x[j];
      }
    }
    const float d = mx / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = quant::Fp32ToFp16(d);
    for (int j = 0; j < quant::kQK / 2; ++j) {
      const float x0 = x[j] * id, x1 = x[quant::kQK / 2 + j] * id;
      const int lo = int(int8_t(x0 + 8.5f)), hi = int(int8_t(x1 + 8.5f));
      y[b].qs[j] = uint8_t((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
    }
  }
}

}  // namespace zf::engine::kvq

#include "vision/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/f16_gemm.h"
#include "quant/quant.h"

namespace zf::vision {
namespace {

double PortableNumerators(float* s, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j] *= scale);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += double(s[j] = std::exp(s[j] - mx));
  return sum;
}

}  // namespace

void SoftmaxRow(float* s, int64_t n, float scale) {
  const float inv = float(1.0 / PortableNumerators(s, n, scale));
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

double SoftmaxNumerators(float* s, int64_t n, float scale) {
#if defined(__x86_64__) || defined(_M_X64)
  static const bool avx512 = std::strcmp(quant::ActiveIsa(), "avx512-vnni") == 0;
  if (avx512) return avx512::SoftmaxNumerators(s, n, scale);
  if (quant::f16::Available()) return avx2::SoftmaxNumerators(s, n, scale);
#endif
  return PortableNumerators(s, n, scale);
}

}  // namespace zf::vision

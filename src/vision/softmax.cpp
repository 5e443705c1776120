#include "vision/softmax.h"

#include <algorithm>
#include <cmath>

namespace zf::vision {

void SoftmaxRow(float* s, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j] *= scale);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += double(s[j] = std::exp(s[j] - mx));
  const float inv = float(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

}  // namespace zf::vision

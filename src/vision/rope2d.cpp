#include "vision/rope2d.h"

#include <cmath>

namespace zf::vision {

std::vector<RopeSegment> PixtralRope(int32_t d, float base) {
  return {RopeSegment{0, d / 2, 0, 1.0f, false}, RopeSegment{d / 2, d / 2, 1, std::pow(base, -2.0f / float(d)), false}};
}

void ApplyRope2D(const std::vector<RopeSegment>& layout, float base, const std::vector<int32_t> pos[2], int64_t T,
                 int64_t n_head, int64_t d, float* x) {
  std::vector<float> cs;
  for (const RopeSegment& s : layout) {
    const float theta_scale = std::pow(base, -2.0f / float(s.n_dims));
    const int64_t half = s.n_dims / 2;
    cs.resize(size_t(s.n_dims));
    for (int64_t t = 0; t < T; ++t) {
      // ggml_rope_cache_init: theta starts at the position and shrinks by theta_scale per pair.
      float theta = float(pos[s.axis][size_t(t)]);
      for (int64_t i = 0; i < half; ++i) {
        cs[size_t(2 * i)] = std::cos(s.freq_scale * theta);
        cs[size_t(2 * i + 1)] = std::sin(s.freq_scale * theta);
        theta *= theta_scale;
      }
      for (int64_t h = 0; h < n_head; ++h) {
        float* v = x + (t * n_head + h) * d + s.offset;
        for (int64_t i = 0; i < half; ++i) {
          float* a = s.neox ? v + i : v + 2 * i;
          float* b = s.neox ? v + i + half : v + 2 * i + 1;
          const float x0 = *a, x1 = *b, c = cs[size_t(2 * i)], sn = cs[size_t(2 * i + 1)];
          *a = x0 * c - x1 * sn;
          *b = x0 * sn + x1 * c;
        }
      }
    }
  }
}

}  // namespace zf::vision

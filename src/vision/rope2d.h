// Rotary positions in a ViT, as ggml_rope_ext computes them on the CPU, with the 2D layout as
// data: a head's vector is rotated in segments, each by one position axis (a patch's row or
// column) with its own frequency scale and pairing. Pixtral: the first half of each head by the
// row (adjacent pairs), the second half by the column with the odd frequencies
// (freq_scale = base^(-2/d)), as clip.cpp's build_rope_2d.
#pragma once

#include <cstdint>
#include <vector>

namespace zf::vision {

struct RopeSegment {
  int32_t offset = 0;        // first dimension of the segment within a head
  int32_t n_dims = 0;        // its width (even)
  int32_t axis = 0;          // which position: 0 the patch's row, 1 its column
  float freq_scale = 1.0f;   // theta multiplier (ggml's freq_scale)
  bool neox = false;         // pairs (i, i + n_dims / 2) instead of (i, i + 1)
};

// Pixtral's layout for heads of d dimensions and rotary base `base`.
std::vector<RopeSegment> PixtralRope(int32_t d, float base);

// Rotates T tokens' heads in place: x is [T][n_head][d]; pos[axis][t] the positions.
// The cos/sin per position are ggml's (theta in float, multiplied by base^(-2/n_dims) per pair).
void ApplyRope2D(const std::vector<RopeSegment>& layout, float base, const std::vector<int32_t> pos[2], int64_t T,
                 int64_t n_head, int64_t d, float* x);

}  // namespace zf::vision

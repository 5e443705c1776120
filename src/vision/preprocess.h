// An image made ready for a fixed-size encoder as libmtmd prepares it for Gemma 3: scaled to fit
// image_size x image_size with the aspect ratio kept (Pillow's bilinear resampling in 8-bit
// fixed point, the size rounded up), centred on black, then x / 255, (x - mean) / std.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vision/image.h"

namespace zf::vision {

// Pillow's separable resampling (Image.resize with BILINEAR: a triangle filter widened by the
// downscaling factor, 22-bit fixed-point weights, horizontal pass then vertical, each only when
// that side changes size). src must be non-empty; w, h > 0.
Image ResizeBilinear(const Image& src, int32_t w, int32_t h);

// The image scaled into a size x size square as above: RGB bytes.
Image FitAndPad(const Image& src, int32_t size);

// FitAndPad, then normalized: size x size pixels, R G B floats interleaved.
std::vector<float> PreprocessFixedSize(const Image& src, int32_t size, const std::array<float, 3>& mean,
                                       const std::array<float, 3>& std);

}  // namespace zf::vision

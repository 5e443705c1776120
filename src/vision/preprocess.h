// An image made ready for the encoder as libmtmd prepares it: for Gemma 3 scaled to fit
// image_size x image_size with the aspect ratio kept (Pillow's bilinear resampling in 8-bit
// fixed point, the size rounded up), centred on black; for Idefics3 cut into image_size tiles
// and an overview (Lanczos, TileImages); then x / 255, (x - mean) / std.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vision/image.h"
#include "vision/mmproj.h"
#include "vision/projector.h"

namespace zf::vision {

// Pillow's separable resampling (Image.resize with BILINEAR: a triangle filter widened by the
// downscaling factor, 22-bit fixed-point weights, horizontal pass then vertical, each only when
// that side changes size). src must be non-empty; w, h > 0.
Image ResizeBilinear(const Image& src, int32_t w, int32_t h);
// The same with Pillow's filter f (Lanczos: sinc(x) sinc(x / 3) over 3 pixels, widened alike).
Image Resize(const Image& src, int32_t w, int32_t h, Resample f);

// The tile grid of a width x height image (0 x 0 for the fixed-size types), and the size of the
// first resize (*rw x *rh; may be null). Only sizes: nothing is decoded.
TileGrid PlanTiles(const VisionHparams& hp, int32_t width, int32_t height, int32_t* rw = nullptr, int32_t* rh = nullptr);

// Tiling::kSmartResize with a TileRule: whether libmtmd cuts a width x height image into tiles,
// and the grid it cuts it into (columns *gx, rows *gy).
bool OverTileBudget(const VisionHparams& hp, int32_t width, int32_t height);
void ChooseTileGrid(const TileRule& r, int32_t width, int32_t height, int32_t* gx, int32_t* gy);

// The encoder's inputs as RGB bytes in placement order: one image_size square (FitAndPad) for
// the fixed-size types; for kLongestEdge the tiles row by row, then the overview; for
// kDynamic the image fitted into its DynamicSize (grid->w x grid->h, grid->rows); for
// kSmartResize that size stretched, or over the TileRule's budget the tiles row by row, then
// the stretched image as the thumbnail.
std::vector<Image> TileImages(const VisionHparams& hp, const Image& src, TileGrid* grid);

// x / 255, then (x - mean) / std per channel: R G B floats interleaved.
std::vector<float> Normalize(const Image& img, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// The image scaled into a size x size square as above: RGB bytes.
Image FitAndPad(const Image& src, int32_t size);
// The same into tw x th with filter f (libmtmd's PAD_CEIL resize).
Image FitAndPad(const Image& src, int32_t tw, int32_t th, Resample f);

// Tiling::kDynamic: the size a width x height image is resized to (whole patch_size x n_merge
// blocks, aspect kept, within hp.min_pixels..max_pixels), and the rows such an image gives
// (vision/pixtral.cpp: its tokens and the [IMG_BREAK] rows).
void DynamicSize(const VisionHparams& hp, int32_t width, int32_t height, int32_t* tw, int32_t* th);
int64_t DynamicRows(const VisionHparams& hp, int32_t tw, int32_t th);

// FitAndPad, then normalized: size x size pixels, R G B floats interleaved.
std::vector<float> PreprocessFixedSize(const Image& src, int32_t size, const std::array<float, 3>& mean,
                                       const std::array<float, 3>& std);

}  // namespace zf::vision

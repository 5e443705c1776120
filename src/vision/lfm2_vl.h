// LFM2-VL's vision side (clip.projector_type lfm2) as libmtmd runs it (clip.cpp's LFM2 loading,
// mtmd-image.cpp's lfm2 preprocessor, models/siglip.cpp): one image of its own size, stretched
// (Pillow's bilinear, no border) to whole patch_size x n_merge blocks within 64 .. 256 tokens
// (Tiling::kSmartResize); the SigLIP encoder with its learned position table resized to the
// patch grid (bilinear with antialiasing, as ggml_interpolate); each n_merge x n_merge block of
// patches concatenated (pixel unshuffle), LayerNorm (eps 1e-5, mm.input_norm weight and bias,
// each optional), mm.1, GELU, mm.2. Images over twice the budget's pixels are cut into 512 px
// tiles and a thumbnail (the spec's TileRule, vision/preprocess.cpp); each goes through the same
// encoder at its own size.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "vision/mmproj.h"

namespace zf::gguf {
class GgufFile;
}

namespace zf::vision {

// mm.input_norm (optional), mm.1 (into Mmproj::mm1) and mm.2 (Mmproj::proj); sets hp->proj_width.
Status LoadLfm2Projector(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, std::set<std::string>* used);

// A side x side table of rows of n (row-major, x fastest) resized to nx x ny as ggml_interpolate
// does in bilinear mode with antialiasing (a triangle filter widened when shrinking, half-pixel
// centres, weights normalized per output).
std::vector<float> ResizePositions(const std::vector<float>& pos, int64_t n, int32_t side, int32_t nx, int32_t ny);

// Each m x m block of an nx x ny grid of rows of n (row-major) as one row of m*m*n: the block's
// rows outer, columns inner (libmtmd's build_patch_merge_permute); nx, ny multiples of m.
std::vector<float> PixelUnshuffle(const float* x, int64_t nx, int64_t ny, int64_t m, int64_t n);

}  // namespace zf::vision

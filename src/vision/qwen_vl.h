// Qwen2.5-VL's vision encoder (clip.projector_type qwen25vl) as libmtmd runs it (clip.cpp's
// QWEN25VL loading and inputs, models/qwen2vl.cpp): an image of its own size (whole 28 x 28
// blocks, Tiling::kDynamic), two 14 x 14 patch convolutions summed (the temporal pair, one still
// frame), patches ordered by 2 x 2 blocks, ViT blocks with RMS norms, q/k/v/out with biases,
// 2D rotary positions (rope_multi's vision mode: pairs (j, j + d/2), the first d/4 pairs by the
// patch's row, the rest by its column), window attention (112 px windows of whole blocks; every
// n_wa_pattern-th layer attends over all patches), a SiLU-gated MLP with biases; the final RMS
// norm, each 2 x 2 block's four rows as one of 4 E, mm.0, GELU, mm.2; rows in raster order.
// Qwen3-VL (clip.projector_type qwen3vl_merger, models/qwen3vl.cpp) is the same tower with what
// its file holds: a patch bias, a learned position table resized to the patch grid (bilinear,
// corners aligned) in the same 2 x 2 block order, LayerNorms with biases, a fused q/k/v, a GELU
// MLP (no gate), no windows; and deepstack mergers after the listed blocks (each block's rows as
// rows of 4 E, LayerNorm, fc1, GELU, fc2), whose rows follow the main merger's in each output
// row: n_embd x (1 + deepstack mergers) floats per row, as the language model's input takes them.
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

// A deepstack merger (v.deepstack.N.*): block N's output as rows of 4 E, LayerNorm, fc1, GELU, fc2.
struct DeepstackMerger {
  int32_t layer = 0;
  LayerNormW norm;
  Linear fc1, fc2;
};

struct QwenVlWeights {
  Linear patch1;              // v.patch_embd.weight.1 (the second frame's kernel; Mmproj::patch the first)
  Linear mm0;                 // mm.0 (4 E -> hidden, bias); Mmproj::proj is mm.2 (hidden -> LM width)
  int32_t n_wa_pattern = 0;   // clip.vision.n_wa_pattern: layer il attends fully when (il + 1) % it == 0
  int32_t window_px = 112;    // libmtmd's fixed attention window for qwen25vl
  bool layer_norm = false;    // LayerNorms with biases (Qwen3-VL) rather than RMS norms (Qwen2.5-VL)
  int32_t pos_side = 0;       // the learned position table's side (Mmproj::pos; 0: none)
  std::vector<DeepstackMerger> deepstack;  // in block order
};

// Hparams beyond the shared ones (n_merge 2 or clip.vision.spatial_merge_size, n_wa_pattern,
// libmtmd's token limits 8 .. 4096 as pixels).
Status QwenVlHparams(const gguf::GgufFile& f, VisionHparams* hp, QwenVlWeights* w);
// The encoder's and projector's tensors; sets hp->proj_width.
Status LoadQwenVl(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, QwenVlWeights* w, std::set<std::string>* used);

// The window order of a pw x ph grid of merged tokens (libmtmd's window_idx / inv_window_idx):
// windows of `grid` x `grid` tokens row by row, tokens row by row inside each; idx[raster] =
// window-order index, inv[window-order] = raster; *windows: each window's token count in order.
void QwenVlWindows(int32_t pw, int32_t ph, int32_t grid, std::vector<int32_t>* idx, std::vector<int32_t>* inv,
                   std::vector<int32_t>* windows);

// A side x side table of rows of n (row-major, x fastest) resized to nx x ny as ggml_interpolate
// does in bilinear mode with corners aligned (no antialiasing): the table as is when it fits.
std::vector<float> ResizePositionsAligned(const std::vector<float>& pos, int64_t n, int32_t side, int32_t nx, int32_t ny);

// Rotates T tokens' heads in place (x: [T][n_head][d]) by rope_multi's vision mode with sections
// d/4 x 4 and base 10000: pair (j, j + d/2) by py[t] for j < d/4, by px[t] after.
void QwenVlRope(const int32_t* py, const int32_t* px, int64_t T, int64_t n_head, int64_t d, float* x);

}  // namespace zf::vision

// Gemma 4's vision encoder (clip.projector_type gemma4v), as libmtmd builds it
// (tools/mtmd/models/gemma4v.cpp, clip.cpp's build_vit): pixels scaled to [-1, 1], a 16 x 16
// patch convolution without bias, learned x and y position tables, pre-norm RMS blocks (per-head
// RMS norms on q and k, 2D rotary in NEOX halves: x on the first half of each head, y on the
// second, theta 100; values RMS-normed without a weight; q.k unscaled; post-attention and
// post-FFN RMS norms; a GELU-gated FFN; an optional per-layer output scale), n_merge x n_merge
// average pooling times sqrt(width), the optional standardization ((x - v.std_bias) *
// v.std_scale), an RMS norm without weight and mm.input_projection. Every product may carry
// Gemma4ClippableLinear's input and output clamps (NAME.input_min/max, NAME.output_min/max).
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

// A product with Gemma4ClippableLinear's clamps (none: +-FLT_MAX).
struct ClampedLinear {
  Linear l;
  float in_min, in_max, out_min, out_max;
  bool clamped = false;
};

struct Gemma4vBlock {
  std::vector<float> ln1, ln2, attn_post, ffn_post, q_norm, k_norm;  // RMS norm weights
  ClampedLinear q, k, v, o, gate, up, down;
  float out_scale = 1.0f;  // v.blk.N.out_scale (1: none)
};

struct Gemma4vWeights {
  Linear patch;                  // rows n_embd of [3][P][P], no bias
  std::vector<float> pos;        // [2][pos_size][n_embd]: the x table, then the y table
  int64_t pos_size = 0;
  std::vector<float> pre_ln, post_ln;  // optional RMS norm weights
  std::vector<Gemma4vBlock> blocks;
  std::vector<float> std_bias, std_scale;  // optional [n_embd]
  ClampedLinear proj;            // mm.input_projection: proj_width rows of n_embd
  float rope_theta = 100.0f;
};

// gemma4v's hyperparameters past the common ones (ReadHparams): n_merge (3 unless
// clip.vision.projector.scale_factor), the pixel budget (70..1120 tokens, libmtmd's limits).
Status Gemma4vHparams(const gguf::GgufFile& f, VisionHparams* hp);
// Every gemma4v tensor by name and shape (an audio tower beside it skipped); sets hp->proj_width.
Status LoadGemma4v(const gguf::GgufFile& f, VisionHparams* hp, std::set<std::string>* used, Gemma4vWeights* w);

}  // namespace zf::vision

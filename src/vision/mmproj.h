// A vision projector file (llama.cpp's mmproj GGUF: general.architecture = clip), read and
// validated as clip.cpp reads it: the projector type, the clip.vision.* hyperparameters, the
// image mean/std and every tensor's name and shape. The types differ as projector.h's specs
// say: gemma3 (SigLIP encoder, 4 x 4 average pooling, soft-embedding RMS norm, the transposed
// input projection) and idefics3 (SigLIP encoder, pixel shuffle, mm.model.fc); any other is
// refused by name.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/ggml_types.h"
#include "common/status.h"
#include "vision/projector.h"

namespace zf::gguf {
class GgufFile;
}

namespace zf::vision {

struct VisionHparams {
  std::string projector;  // clip.projector_type
  const ProjectorSpec* spec = nullptr;
  int32_t image_size = 0, patch_size = 0;
  int32_t n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0;
  int32_t n_merge = 4;       // pooling / shuffle factor per side (clip.vision.projector.scale_factor)
  int32_t longest_edge = 0;  // kLongestEdge tiling: clip.vision.preproc_image_size
  int32_t proj_width = 0;    // output width: the projection's rows (the LM's embedding width)
  float eps = 1e-6f;
  std::array<float, 3> mean{}, std{};
  // Tiling::kDynamic: the pixel budget (libmtmd's token limits times a token's pixels), and
  // Vit::kPixtral's rotary base (clip.cpp's fixed 10000).
  int32_t min_pixels = 0, max_pixels = 0;
  float rope_theta = 10000.0f;
  // Vit::kQwen3vl: deepstack mergers, whose rows follow the main ones in each output row.
  int32_t n_deepstack = 0;

  // Floats per output row: the language model's input row (its n_embd, times 1 + n_deepstack).
  int32_t row_width() const { return proj_width * (1 + n_deepstack); }

  int32_t patches_per_side() const { return image_size / patch_size; }
  int32_t tokens_per_side() const { return patches_per_side() / n_merge; }
  int32_t n_tokens() const { return tokens_per_side() * tokens_per_side(); }  // per encoder input
};

// A product's weight: `out` rows of `in` elements in the file's blocks (F32, F16, Q8_0, ... as
// the quant kernels take them), and its bias (empty: none).
struct Linear {
  GgmlType type = GgmlType::F32;
  int64_t in = 0, out = 0;
  size_t stride = 0;              // bytes per row
  const uint8_t* w = nullptr;     // into the file mapping, or into `owned`
  std::vector<uint8_t> owned;     // a weight rearranged at load (the transposed projection)
  std::vector<float> b;
};

struct Gemma4vWeights;  // vision/gemma4v.h
struct QwenVlWeights;   // vision/qwen_vl.h

struct LayerNormW {
  std::vector<float> w, b;
};

struct VitBlock {
  LayerNormW ln1, ln2;  // RMS norms (Vit::kPixtral): weights only
  Linear q, k, v, o, up, down;
  Linear gate;          // Vit::kPixtral's SiLU gate (empty otherwise)
};

class Mmproj;
// The Pixtral ViT's and projector's tensors (vision/pixtral.cpp); sets hp->proj_width.
Status LoadPixtral(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, std::set<std::string>* used);

class Mmproj {
 public:
  ~Mmproj();
  static Status Load(const std::string& path, std::unique_ptr<Mmproj>* out);
  // Binds a parsed file (which the result keeps).
  static Status FromGguf(std::unique_ptr<gguf::GgufFile> file, std::unique_ptr<Mmproj>* out);

  const VisionHparams& hparams() const { return hp_; }
  // OK when the projector's output rows are the language model's input rows: row_width() is
  // lm_n_embd_inp (its n_embd, times 1 + its deepstack layers).
  Status CheckLanguageModel(int64_t lm_n_embd_inp) const;

  Linear patch;                   // rows n_embd of [3][patch][patch] (with the patch bias)
  std::vector<float> pos;         // [n_patches][n_embd]
  LayerNormW pre_ln;              // optional (empty w)
  std::vector<VitBlock> blocks;
  LayerNormW post_ln;             // optional (empty w)
  std::vector<float> soft_norm;   // mm.soft_emb_norm.weight [n_embd] (spec->soft_norm)
  Linear proj;                    // rows proj_width of the merged token's width (transposed at
                                  // load when spec->proj_transposed)
  std::unique_ptr<Gemma4vWeights> gemma4v;  // Vit::kGemma4v's weights (the rest stay empty)
  std::unique_ptr<QwenVlWeights> qwen_vl;   // Vit::kQwen25vl / kQwen3vl: second kernel, mm.0, windows, deepstack
  // Merge::kPatchMerger (Pixtral): mm.input_norm, mm.patch_merger (none when n_merge is 1),
  // mm.1 before the GELU (proj is mm.2), and the [IMG_BREAK] row.
  std::vector<float> input_norm;
  std::vector<float> input_norm_b;  // Vit::kLfm2: mm.input_norm's bias (a LayerNorm; optional)
  Linear merger, mm1;
  std::vector<float> img_break;

 private:
  Mmproj() = default;
  VisionHparams hp_;
  std::unique_ptr<gguf::GgufFile> file_;
};

}  // namespace zf::vision

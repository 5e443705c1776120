// The mmproj reader's tensor lookups (vision/mmproj.cpp), shared with the family loaders
// (vision/pixtral.cpp, qwen_vl.cpp, ...): each checks the name and exact shape and records the
// name in `used`; and the ViT blocks' loader (vision/vit_blocks.cpp).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "gguf/tensor_shape.h"
#include "vision/mmproj.h"

namespace zf::vision {

// The tensor `name` with exactly the shape ne (ggml order).
Status Find(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
            const gguf::TensorInfo** out);
// An F32 or F16 tensor as floats.
Status Floats(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
              std::vector<float>* out);
// NAME.weight as `out` rows of `in` (and NAME.bias when `bias`); ne: the file's shape when it
// is not [in, out] (the patch convolution).
Status Matrix(const gguf::GgufFile& f, const std::string& name, int64_t in, int64_t out, std::set<std::string>* used,
              Linear* l, bool bias, std::vector<int64_t> ne = {});

// NAME.weight, and NAME.bias when `bias` (a LayerNorm; an RMS norm has none).
Status NormWeights(const gguf::GgufFile& f, const std::string& name, int64_t n, bool bias, std::set<std::string>* used,
                   LayerNormW* out);

// How a family stores its ViT blocks (v.blk.N.*), as data: the rest is the same.
struct VitBlockLayout {
  bool norm_bias = true;     // ln1 / ln2: LayerNorms (weight, bias); false: RMS norms (weight)
  bool linear_bias = true;   // the attention's and the MLP's matrices have biases
  bool gated = false;        // a SiLU-gated MLP: ffn_gate beside ffn_up and ffn_down
  bool fused_qkv = false;    // attn_qkv (q's, k's, v's rows) in place of attn_q/k/v when present
  bool swapped_ffn = false;  // older conversions' swapped ffn_up / ffn_down names, read back
};
// hp.n_layer blocks of width hp.n_embd and MLP width hp.n_ff.
Status LoadVitBlocks(const gguf::GgufFile& f, const VisionHparams& hp, const VitBlockLayout& layout,
                     std::set<std::string>* used, std::vector<VitBlock>* blocks);

}  // namespace zf::vision

// The tensor-role table: every tensor a model can have, with its GGUF name, its expected shape
// computed from the model description, and whether the description requires it. Binding,
// validation and the engines' weight copies all iterate this one table (tensor_roles.cpp);
// adding a role is one row there.
//
// Fused and 3-D tensors are bound as they are in the file, then split into views (row ranges of
// the same bytes): attn_qkv into Q/K/V, a fused ffn_up into gate/up, and each expert's slice of
// ffn_{gate,up,down}_exps into a 2-D matrix. The forward pass and the engines see only 2-D
// matrices, so every kernel (packed decode GEMV, prefill GEMM) serves every family.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "model/description.h"

namespace zf::model {

using Tensor = gguf::TensorInfo;

enum class GlobalRole : int32_t {
  kTokenEmbd, kOutputNorm, kOutputNormBias, kOutput, kOutputBias, kRopeFreqs, kRopeFactorsLong, kRopeFactorsShort,
  kPosEmbd, kTokenTypes, kInputNorm, kInputNormBias,  // BERT's input: positions, token types, LayerNorm
  kCls, kClsBias, kClsOut, kClsOutBias,                 // rerankers' classification head
  kDense2, kDense3,                                     // projections after pooling (EmbeddingGemma)
  kPerLayerTokenEmbd, kPerLayerModelProj, kPerLayerProjNorm,  // Gemma 4's per-layer inputs
  kCount
};

enum class LayerRole : int32_t {
  kAttnNorm, kAttnNormBias,
  kAttnQ, kAttnK, kAttnV, kAttnQkv, kAttnQkvBias, kAttnOut,
  kAttnQBias, kAttnKBias, kAttnVBias, kAttnOutBias,
  kAttnQNorm, kAttnKNorm, kPostAttnNorm,
  kFfnNorm, kFfnNormBias,
  kFfnGate, kFfnUp, kFfnDown, kPostFfnNorm,
  kFfnGateInp, kFfnGateExps, kFfnUpExps, kFfnDownExps,
  kFfnGateShexp, kFfnUpShexp, kFfnDownShexp, kFfnGateInpShexp,
  kFfnUpBias, kFfnDownBias,
  kAttnOutNorm, kAttnOutNormBias, kLayerOutNorm, kLayerOutNormBias,  // post-LN over the residual (BERT)
  kAttnSinks,                                                          // per-head sink logits (gpt-oss)
  kFfnGateInpBias, kFfnGateExpsBias, kFfnUpExpsBias, kFfnDownExpsBias, // router and expert biases (gpt-oss)
  kPerLayerInpGate, kPerLayerProj, kPerLayerPostNorm, kLayerOutScale,  // Gemma 4
  kFfnGateInpScale, kFfnPreNorm2, kFfnPostNorm1, kFfnPostNorm2, kFfnGateUpExps, kFfnDownExpsScale,  // Gemma 4 MoE
  kShortConvConv, kShortConvInProj, kShortConvOutProj,  // MixerKind::kShortConv (LFM2)
  kFfnExpProbsBias,  // FfnDesc::selection_bias
  // MixerKind::kMamba2 and kGatedDeltaNet (the converter gives both the same ssm_* names; the
  // shapes follow the layer's mixer): Mamba-2's in-projection, the convolution and its bias, the
  // dt bias, A, D, the norm, out.
  kSsmIn, kSsmConv1d, kSsmConv1dBias, kSsmDtBias, kSsmA, kSsmD, kSsmNorm, kSsmOut,
  // kGatedDeltaNet (Qwen3.5): attn_qkv and attn_gate (z) of the linear attention, the beta /
  // alpha projections.
  kDeltaQkv, kDeltaGate, kSsmBeta, kSsmAlpha,
  kCount
};

struct LayerTensors {
  std::array<const Tensor*, size_t(LayerRole::kCount)> t{};
  const Tensor* operator[](LayerRole r) const { return t[size_t(r)]; }
  const Tensor*& operator[](LayerRole r) { return t[size_t(r)]; }
  // MoE: each expert's 2-D slice of the 3-D tensors, [n_expert] each.
  std::vector<const Tensor*> expert_gate, expert_up, expert_down;
};

// The bound tensors of a model. Pointers refer into the GgufFile (memory-mapped, read-only) or
// into `views`; not copyable (the pointers would dangle). Immutable after Bind.
struct Weights {
  Weights() = default;
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  std::array<const Tensor*, size_t(GlobalRole::kCount)> global{};
  const Tensor* operator[](GlobalRole r) const { return global[size_t(r)]; }
  std::vector<LayerTensors> layers;

  // Every matrix the forward pass multiplies with (views in place of fused and 3-D tensors),
  // each once: what the engines copy or repack.
  std::vector<const Tensor*> Matrices() const;
  // The addresses of every bound 1-D tensor pointer (norms, biases, factors) and of the short
  // convolutions' kernels, so the model can move those small tensors out of the file mapping
  // and rebind them.
  std::vector<const Tensor**> VectorRefs();

  std::vector<const Tensor*> bound;  // every file tensor bound (views' parents included)
  // Row-range and expert views, and copies of file tensors whose rank differs from the role's
  // ([n] bound as [n, 1] and the inverse: llama-quantize drops trailing 1s). Stable addresses.
  std::deque<Tensor> views;
  std::deque<std::string> names;  // their names ("blk.0.attn_qkv.weight[q]")
};

// Binds every tensor the description needs and checks shapes and types, shapes as ggml compares
// them (four dims, missing ones 1). kFormat names a missing tensor or a misshaped one (expected
// and actual shape); kUnsupported names a tensor type the engine cannot compute with or a
// layout the description cannot express.
Status BindWeights(const gguf::GgufFile& file, const ModelDesc& desc, Weights* weights);

}  // namespace zf::model

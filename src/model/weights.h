// Tensor name map: GGUF tensor names (blk.N.attn_q.weight, ...) bound to their roles in the
// transformer, with shapes and types checked against the config. Pointers refer into the
// GgufFile (memory-mapped, read-only); Weights is immutable after binding.
#pragma once

#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "model/config.h"

namespace zf::model {

using Tensor = gguf::TensorInfo;

// Matrices are stored with ne[0] = input features (contiguous rows), ne[1] = output features.
struct LayerWeights {
  const Tensor* attn_norm = nullptr;       // [n_embd] F32
  const Tensor* wq = nullptr;              // [n_embd, n_head * head_dim_k]
  const Tensor* wk = nullptr;              // [n_embd, n_head_kv * head_dim_k]
  const Tensor* wv = nullptr;              // [n_embd, n_head_kv * head_dim_v]
  const Tensor* wo = nullptr;              // [n_head * head_dim_v, n_embd]
  const Tensor* bq = nullptr;              // optional biases [rows]
  const Tensor* bk = nullptr;
  const Tensor* bv = nullptr;
  const Tensor* q_norm = nullptr;          // [head_dim_k] F32 (qk_norm)
  const Tensor* k_norm = nullptr;          // [head_dim_k] F32 (qk_norm)
  const Tensor* post_attn_norm = nullptr;  // [n_embd] F32 (post_norms)
  const Tensor* ffn_norm = nullptr;        // [n_embd] F32
  const Tensor* ffn_gate = nullptr;        // [n_embd, n_ff]
  const Tensor* ffn_up = nullptr;          // [n_embd, n_ff]
  const Tensor* ffn_down = nullptr;        // [n_ff, n_embd]
  const Tensor* post_ffn_norm = nullptr;   // [n_embd] F32 (post_norms)
};

struct Weights {
  const Tensor* token_embd = nullptr;   // [n_embd, n_vocab]
  const Tensor* output_norm = nullptr;  // [n_embd] F32
  const Tensor* output = nullptr;       // [n_embd, n_vocab]; == token_embd when tied
  const Tensor* rope_freqs = nullptr;   // optional [n_rot/2] F32 frequency divisors (llama 3.1)
  std::vector<LayerWeights> layers;     // [n_layer]
};

// Binds and validates every tensor the config needs. kFormat names a missing tensor or a shape
// mismatch; kUnsupported names a tensor type the CPU engine cannot compute with.
Status BindWeights(const gguf::GgufFile& file, const ModelConfig& config, Weights* weights);

}  // namespace zf::model

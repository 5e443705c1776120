// Model hyperparameters read from GGUF metadata (`<arch>.*` keys), one struct for every
// architecture: the shared transformer body switches on these options, not on the arch name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"

namespace zf::model {

enum class RopeStyle : int32_t {
  kNorm,  // rotate adjacent pairs (x[2i], x[2i+1]) — llama family (GGUF permutes Q/K for this)
  kNeox,  // rotate halves (x[i], x[i + n_rot/2]) — gemma, qwen, phi3
};

enum class FfnActivation : int32_t { kSilu, kGeluTanh };

struct ModelConfig {
  std::string arch;              // general.architecture
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;            // hidden size
  int32_t n_layer = 0;
  int32_t n_ff = 0;              // FFN inner size
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;        // key/query head size (attention.key_length or n_embd/n_head)
  int32_t head_dim_v = 0;        // value head size
  int32_t n_rot = 0;             // rotary dimensions (<= head_dim_k)
  float norm_eps = 1e-5f;
  RopeStyle rope_style = RopeStyle::kNorm;
  float rope_base = 10000.0f;        // global layers
  float rope_freq_scale = 1.0f;      // linear scaling: position multiplier (1/factor)
  float rope_base_local = 10000.0f;  // sliding-window layers (gemma3)
  float rope_freq_scale_local = 1.0f;
  FfnActivation activation = FfnActivation::kSilu;

  // Gemma-style options.
  float embed_scale = 1.0f;          // inputs multiplied by this (sqrt(n_embd) for gemma)
  bool qk_norm = false;              // RMSNorm on each q/k head (attn_q_norm / attn_k_norm)
  bool post_norms = false;           // post_attention_norm / post_ffw_norm on block outputs
  float attn_scale = 0.0f;           // q scale before QK^T; 0 = 1/sqrt(head_dim_k)
  float final_logit_softcap = 0.0f;  // 0 = off; else cap * tanh(logit / cap)
  float attn_logit_softcap = 0.0f;
  int32_t sliding_window = 0;        // 0 = none; else local layers see the last N positions
  std::vector<uint8_t> layer_is_local;  // [n_layer]: 1 = sliding-window layer

  // Total elements of the weights (reported through zf_model_info).
  uint64_t n_params = 0;
};

// Reads the hyperparameters for `arch` from the file. kFormat for missing/inconsistent keys,
// kUnsupported for an architecture without a builder.
Status LoadConfig(const gguf::GgufFile& file, ModelConfig* config);

}  // namespace zf::model

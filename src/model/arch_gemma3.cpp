// Gemma 3: scaled embeddings, QK-norm, post-norms, GeGLU, 5 sliding-window layers per global one.
#include <cmath>

#include "model/registry.h"

namespace zf::model {

Status SetupGemma3(const gguf::GgufFile& f, ModelConfig* c) {
  c->rope_style = RopeStyle::kNeox;
  c->activation = FfnActivation::kGeluTanh;
  c->embed_scale = std::sqrt(static_cast<float>(c->n_embd));
  c->qk_norm = true;
  c->post_norms = true;
  // Queries are scaled by query_pre_attn_scalar^-1/2; the GGUF has no key for it, and the
  // reference uses 1/sqrt(head_dim) for every size except 27B (1/sqrt(n_embd/n_head)).
  c->attn_scale = (c->n_layer == 62) ? 1.0f / std::sqrt(static_cast<float>(c->n_embd / c->n_head))
                                     : 1.0f / std::sqrt(static_cast<float>(c->head_dim_k));
  // Local layers use a fixed rope base of 10000 and no scaling; global layers use the file's.
  c->rope_base_local = 10000.0f;
  c->rope_freq_scale_local = 1.0f;
  int32_t window = 0;
  Status s = f.GetI32("gemma3.attention.sliding_window", &window);
  if (!s.ok() && s.code() != Code::kNotFound) return s;
  if (window <= 0) window = 512;
  c->sliding_window = window;
  // Every 6th layer (il % 6 == 5) is global; the rest are sliding-window layers.
  for (int32_t il = 0; il < c->n_layer; ++il) c->layer_is_local[static_cast<size_t>(il)] = (il % 6 != 5);
  return Status::Ok();
}

}  // namespace zf::model

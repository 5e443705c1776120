// llama family (Llama 2/3, SmolLM, Mistral): pre-norm blocks, SwiGLU FFN, rope on adjacent pairs.
#include "model/registry.h"

namespace zf::model {

Status SetupLlama(const gguf::GgufFile& f, ModelConfig* c) {
  c->rope_style = RopeStyle::kNorm;
  c->activation = FfnActivation::kSilu;
  c->rope_base_local = c->rope_base;
  c->rope_freq_scale_local = c->rope_freq_scale;
  int32_t window = 0;  // Mistral v0.1 style sliding window on every layer
  Status s = f.GetI32(c->arch + ".attention.sliding_window", &window);
  if (s.ok() && window > 0) {
    c->sliding_window = window;
    c->layer_is_local.assign(static_cast<size_t>(c->n_layer), 1);
  }
  return Status::Ok();
}

}  // namespace zf::model

// llama family (Llama 2/3, SmolLM2, Mistral): ReadCommon's defaults are this family — pre-norm
// RMS, SwiGLU, rope on adjacent pairs, llama3 scaling through rope_freqs, Mixtral-style experts
// when expert_count is set (softmax router, top-k weights renormalized).
#include "model/registry.h"

namespace zf::model {

Status BuildLlama(const Hparams& h, ModelDesc* d) {
  int32_t window = 0;  // Mistral v0.1 style sliding window on every layer
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  for (LayerDesc& l : d->layers) {
    if (window > 0) l.attn.window = window;
    if (l.ffn.kind == FfnKind::kMoe) {
      l.ffn.gating = Gating::kSoftmax;
      l.ffn.norm_topk = true;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

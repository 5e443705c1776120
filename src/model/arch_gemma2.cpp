// Gemma 2: scaled embeddings, post-norms, GeGLU, attention and final logit softcaps (defaults
// 50 and 30), every other layer sliding (window default 4096). As in the reference, the output
// head is always the token embedding, even when the file has output.weight.
#include <cmath>

#include "model/registry.h"

namespace zf::model {

Status BuildGemma2(const Hparams& h, ModelDesc* d) {
  d->embed_scale = std::sqrt(float(d->n_embd));
  d->tied_output = true;
  d->final_logit_softcap = 30.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("final_logit_softcapping", &d->final_logit_softcap));
  float attn_softcap = 50.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("attn_logit_softcapping", &attn_softcap));
  int32_t window = 4096;
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  float base_local = d->layers.empty() ? 10000.0f : d->layers[0].attn.rope.base;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_local));
  std::vector<bool> local;
  ZF_RETURN_IF_ERROR(h.SlidingPattern(d->n_layer, 2, &local));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.softcap = attn_softcap;
    l.ffn.act = Activation::kGeluTanh;
    l.norm.post_attn = l.norm.post_ffn = true;
    // 27B (46 layers) scales queries by 1/sqrt(n_embd/n_head), the others by 1/sqrt(head_dim).
    l.attn.scale = d->n_layer == 46 ? 1.0f / std::sqrt(float(d->n_embd / l.attn.n_head))
                                    : 1.0f / std::sqrt(float(l.attn.head_dim_k));
    if (local[size_t(il)] && window > 0) {
      l.attn.window = window;
      l.attn.rope.base = base_local;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

// OLMo 2: no pre-norms; RMS post-norms on the attention and FFN outputs before each residual
// add, QK-norm over the whole projection width (not per head), rope on halves. OLMo 3 files add
// a sliding window on 3 of every 4 layers (rope without scaling there).
#include "model/registry.h"

namespace zf::model {

Status BuildOlmo2(const Hparams& h, ModelDesc* d) {
  int32_t window = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  std::vector<bool> local(size_t(d->n_layer), false);
  float base_local = d->layers.empty() ? 10000.0f : d->layers[0].attn.rope.base;
  if (window > 0) {
    ZF_RETURN_IF_ERROR(h.SlidingPattern(d->n_layer, 4, &local));
    ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_local));
  }
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.qk_norm = QkNorm::kFullWidth;
    l.norm.pre_attn = l.norm.pre_ffn = false;
    l.norm.post_attn = l.norm.post_ffn = true;
    if (local[size_t(il)]) {
      l.attn.window = window;
      l.attn.rope.base = base_local;
      l.attn.rope.freq_scale = 1.0f;
      l.attn.rope.attn_factor = 1.0f;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

// LFM2 (Liquid AI): layers with head_count_kv 0 are gated short convolutions (MixerKind::kShortConv,
// kernel shortconv.l_cache), the others GQA attention with per-head QK-norm and rope on halves;
// every layer has a gated SiLU FFN. The output norm is stored as token_embd_norm.weight.
#include "model/registry.h"

namespace zf::model {

Status BuildLfm2(const Hparams& h, ModelDesc* d) {
  int32_t l_cache = 0;
  if (!h.Has("shortconv.l_cache")) return FormatError("missing required metadata key '" + h.Key("shortconv.l_cache") + "'");
  ZF_RETURN_IF_ERROR(h.OptI32("shortconv.l_cache", &l_cache));
  int32_t window = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  d->output_norm_name = "token_embd_norm.weight";
  for (LayerDesc& l : d->layers) {
    if (l.attn.n_head_kv == 0) {
      l.mixer = MixerKind::kShortConv;
      l.conv.l_cache = l_cache;
      continue;
    }
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.qk_norm = QkNorm::kPerHead;
    if (window > 0) l.attn.window = window;  // the reference's sliding-window variant: every attention layer
  }
  return Status::Ok();
}

}  // namespace zf::model

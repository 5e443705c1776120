// LFM2 (Liquid AI): layers with head_count_kv 0 are gated short convolutions (MixerKind::kShortConv,
// kernel shortconv.l_cache), the others GQA attention with per-head QK-norm and rope on halves;
// every layer has a gated SiLU FFN. The output norm is stored as token_embd_norm.weight.
// LFM2-MoE (lfm2moe): the same mixers; after leading_dense_block_count dense layers, MoE FFNs of
// expert_feed_forward_length with the router of expert_gating_func (sigmoid in the released
// models), top-k chosen on the scores plus exp_probs_b.bias, weights renormalized.
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

Status BuildLfm2Moe(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(BuildLfm2(h, d));
  int32_t n_dense = 0, gating = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("leading_dense_block_count", &n_dense));
  ZF_RETURN_IF_ERROR(h.OptI32("expert_gating_func", &gating));
  std::vector<int32_t> n_ff_exp;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("expert_feed_forward_length", d->n_layer, &n_ff_exp));
  if (n_ff_exp.empty()) return FormatError("missing required metadata key '" + h.Key("expert_feed_forward_length") + "'");
  // The reference's gating ids: 1 softmax, 2 sigmoid (0 = unset: softmax, its default for MoE).
  if (gating != 0 && gating != 1 && gating != 2) {
    return Unsupported(h.Key("expert_gating_func") + " " + std::to_string(gating) + " is not supported (1 softmax, 2 sigmoid)");
  }
  for (int32_t il = 0; il < d->n_layer; ++il) {
    FfnDesc& f = d->layers[size_t(il)].ffn;
    if (f.kind != FfnKind::kMoe) return FormatError("lfm2moe needs expert_count > 0");
    if (il < n_dense) {
      const int32_t n_ff = f.n_ff;
      f = FfnDesc{};  // gated SiLU of feed_forward_length
      f.n_ff = n_ff;
      continue;
    }
    f.n_ff = n_ff_exp[size_t(il)];
    f.gating = gating == 2 ? Gating::kSigmoid : Gating::kSoftmax;
    f.norm_topk = true;
    f.selection_bias = true;
  }
  return Status::Ok();
}

}  // namespace zf::model

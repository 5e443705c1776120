// gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE, `general.architecture` "gpt-oss"): every layer is
// attention with a learned sink logit per head and q/k/v/o biases, sliding (window
// attention.sliding_window) on even layers and full on odd ones, YaRN on all of them; then a MoE
// FFN behind a pre-norm the file calls post_attention_norm: a router with a bias, top-k of the raw
// logits softmaxed over the k selected, experts with biases and the clamped SwiGLU (alpha 1.702,
// limit 7, the reference's constants). Queries are scaled by 1/sqrt(n_rot).
#include <cmath>

#include "model/registry.h"

namespace zf::model {

Status BuildGptOss(const Hparams& h, ModelDesc* d) {
  int32_t window = 0;
  ZF_RETURN_IF_ERROR(h.I32("attention.sliding_window", &window));
  if (window <= 0) return FormatError("'" + h.Key("attention.sliding_window") + "' must be > 0");
  std::vector<int32_t> n_ff_exp;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("expert_feed_forward_length", d->n_layer, &n_ff_exp));
  if (n_ff_exp.empty()) return FormatError("missing required metadata key '" + h.Key("expert_feed_forward_length") + "'");
  float base_swa = d->layers.empty() ? 10000.0f : d->layers[0].attn.rope.base;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_swa));
  std::vector<bool> local;
  ZF_RETURN_IF_ERROR(h.SlidingPattern(d->n_layer, 2, &local));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    if (l.ffn.kind != FfnKind::kMoe) return FormatError("gpt-oss needs expert_count > 0");
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.scale = 1.0f / std::sqrt(float(l.attn.rope.n_rot));
    l.attn.sinks = true;
    if (local[size_t(il)]) {
      l.attn.window = window;
      l.attn.rope.base = base_swa;
    }
    l.ffn.n_ff = n_ff_exp[size_t(il)];
    l.ffn.act = Activation::kSwigluOai;
    l.ffn.gating = Gating::kSoftmaxWeight;
    l.ffn.router_bias = true;
    l.ffn.expert_bias = true;
    l.norm.ffn_norm_named_post_attention = true;
  }
  return Status::Ok();
}

}  // namespace zf::model

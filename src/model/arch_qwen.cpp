// Qwen 2 / 2.5 (Q/K/V biases, optional output bias), Qwen 3 (per-head QK-norm; as a reranker its
// classifier scores go through a softmax) and Qwen 3 MoE (QK-norm, softmax
// router over expert_count experts of expert_feed_forward_length, top-k renormalized): llama
// blocks with rope on halves.
#include "model/registry.h"

namespace zf::model {

Status BuildQwen2(const Hparams&, ModelDesc* d) {
  d->output_bias = true;
  for (LayerDesc& l : d->layers) l.attn.rope.style = RopeStyle::kNeox;
  return Status::Ok();
}

Status BuildQwen3(const Hparams&, ModelDesc* d) {
  // Qwen3-Reranker (pooling rank, cls.output = the "yes" / "no" rows of the vocabulary head):
  // the reference turns the two logits into probabilities.
  d->cls_softmax = true;
  for (LayerDesc& l : d->layers) {
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.qk_norm = QkNorm::kPerHead;
  }
  return Status::Ok();
}

Status BuildQwen3Moe(const Hparams& h, ModelDesc* d) {
  std::vector<int32_t> n_ff_exp;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("expert_feed_forward_length", d->n_layer, &n_ff_exp));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.qk_norm = QkNorm::kPerHead;
    if (l.ffn.kind != FfnKind::kMoe) return FormatError("qwen3moe needs expert_count > 0");
    l.ffn.norm_topk = true;
    if (!n_ff_exp.empty() && n_ff_exp[size_t(il)] > 0) {
      l.ffn.n_ff = n_ff_exp[size_t(il)];
    } else if (l.ffn.n_expert_used > 0) {
      l.ffn.n_ff /= l.ffn.n_expert_used;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

// Granite 4.0 hybrid (granitehybrid): layers with head_count_kv 0 are Mamba-2 mixers
// (MixerKind::kMamba2, sized by the ssm.* keys), the others GQA attention, rope only when
// rope.scaling.finetuned says so (false in the released hybrids: NoPE). Granite's multipliers,
// each optional here: embedding_scale, attention.scale, residual_scale (both the mixer's and the
// FFN's outputs), logits divided by logit_scale. FFN: gated SiLU, or (expert_count > 0) softmax
// top-k experts with renormalized weights plus the shared experts of
// expert_shared_feed_forward_length.
#include "model/registry.h"

namespace zf::model {

Status BuildGraniteHybrid(const Hparams& h, ModelDesc* d) {
  float logit_scale = 0.0f, residual = 0.0f, embedding = 0.0f, attention = 0.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("logit_scale", &logit_scale));
  ZF_RETURN_IF_ERROR(h.OptF32("residual_scale", &residual));
  ZF_RETURN_IF_ERROR(h.OptF32("embedding_scale", &embedding));
  ZF_RETURN_IF_ERROR(h.OptF32("attention.scale", &attention));
  bool finetuned = true;  // the reference's rope switch for Granite
  ZF_RETURN_IF_ERROR(h.OptBool("rope.scaling.finetuned", &finetuned));
  if (logit_scale != 0.0f) d->logit_scale = 1.0f / logit_scale;
  if (residual != 0.0f) d->residual_scale = residual;
  if (embedding != 0.0f) d->embed_scale = embedding;

  Mamba2Desc ssm;
  for (const char* key : {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"}) {
    if (!h.Has(key)) return FormatError("missing required metadata key '" + h.Key(key) + "'");
  }
  ZF_RETURN_IF_ERROR(h.OptI32("ssm.conv_kernel", &ssm.d_conv));
  ZF_RETURN_IF_ERROR(h.OptI32("ssm.inner_size", &ssm.d_inner));
  ZF_RETURN_IF_ERROR(h.OptI32("ssm.state_size", &ssm.d_state));
  ZF_RETURN_IF_ERROR(h.OptI32("ssm.time_step_rank", &ssm.n_head));
  ZF_RETURN_IF_ERROR(h.OptI32("ssm.group_count", &ssm.n_group));
  int32_t n_ff_shared = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("expert_shared_feed_forward_length", &n_ff_shared));
  if (n_ff_shared < 0) return FormatError(h.Key("expert_shared_feed_forward_length") + " must be >= 0");

  for (LayerDesc& l : d->layers) {
    if (l.attn.n_head_kv == 0) {
      l.mixer = MixerKind::kMamba2;
      l.ssm = ssm;
    } else {
      if (attention != 0.0f) l.attn.scale = attention;
      l.attn.rope.enabled = finetuned;
    }
    if (l.ffn.kind == FfnKind::kMoe) {
      l.ffn.gating = Gating::kSoftmax;
      l.ffn.norm_topk = true;
      l.ffn.n_ff_shared = n_ff_shared;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

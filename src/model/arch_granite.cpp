// Granite (3.x dense): llama blocks with four multipliers: embeddings times
// embedding_scale, attention scores times attention.scale, each block's output times
// residual_scale before the residual add, and logits divided by logit_scale (required).
#include "model/registry.h"

namespace zf::model {

Status BuildGranite(const Hparams& h, ModelDesc* d) {
  float logit_scale = 0.0f, residual = 0.0f, embedding = 0.0f, attention = 0.0f;
  if (!h.Has("logit_scale")) return FormatError("missing required metadata key '" + h.Key("logit_scale") + "'");
  ZF_RETURN_IF_ERROR(h.OptF32("logit_scale", &logit_scale));
  ZF_RETURN_IF_ERROR(h.OptF32("residual_scale", &residual));
  ZF_RETURN_IF_ERROR(h.OptF32("embedding_scale", &embedding));
  ZF_RETURN_IF_ERROR(h.OptF32("attention.scale", &attention));
  bool finetuned = true;  // as the reference reads it: false turns rope off on every layer
  ZF_RETURN_IF_ERROR(h.OptBool("rope.scaling.finetuned", &finetuned));
  if (!(logit_scale != 0.0f)) return FormatError(h.Key("logit_scale") + " must be nonzero");
  d->logit_scale = 1.0f / logit_scale;
  if (residual != 0.0f) d->residual_scale = residual;
  if (embedding != 0.0f) d->embed_scale = embedding;
  for (LayerDesc& l : d->layers) {
    if (attention != 0.0f) l.attn.scale = attention;
    l.attn.rope.enabled = finetuned;
  }
  return Status::Ok();
}

}  // namespace zf::model

// Phi-3 / Phi-3.5 / Phi-4: fused attn_qkv, fused gate+up in ffn_up (rows [gate | up]), rope on
// halves with LongRoPE factors (rope_factors_long/short picked by the session's context against
// rope.scaling.original_context_length, magnitude rope.scaling.attn_factor). As in the
// reference, the sliding-window key is ignored.
#include "model/registry.h"

namespace zf::model {

Status BuildPhi3(const Hparams&, ModelDesc* d) {
  for (LayerDesc& l : d->layers) {
    l.attn.rope.style = RopeStyle::kNeox;
    l.ffn.fused_gate_up = true;
  }
  return Status::Ok();
}

}  // namespace zf::model

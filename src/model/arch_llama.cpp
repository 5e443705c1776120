// llama family (Llama 2/3, SmolLM2, Mistral): ReadCommon's defaults are this family — pre-norm
// RMS, SwiGLU, rope on adjacent pairs, llama3 scaling through rope_freqs, and Mixtral-style
// experts when expert_count is set (softmax router, the top-k weights renormalized). Like the
// reference, a sliding-window key is not read for this architecture.
#include "model/registry.h"

namespace zf::model {

Status BuildLlama(const Hparams&, ModelDesc* d) {
  for (LayerDesc& l : d->layers) {
    if (l.ffn.kind == FfnKind::kMoe) l.ffn.norm_topk = true;
  }
  return Status::Ok();
}

}  // namespace zf::model

// mistral3: the language model of Mistral Small 3.1 / 3.2 (Mistral3ForConditionalGeneration) as
// llama.cpp's converter writes it since it names the architecture: llama blocks and tensors
// (pre-norm RMS, SwiGLU, rope on adjacent pairs, optional Mixtral-style experts), so the llama
// builder, with the YaRN betas read from the file. Ministral 3's additions under the same name — the llama-4 attention temperature
// (attention.temperature_scale) and the YaRN magnitude from rope.scaling.yarn_log_multiplier —
// are refused by name rather than run without them.
#include "model/registry.h"

namespace zf::model {

Status BuildMistral3(const Hparams& h, ModelDesc* d) {
  for (const char* key : {"attention.temperature_scale", "rope.scaling.yarn_log_multiplier"}) {
    float v = 0.0f;
    ZF_RETURN_IF_ERROR(h.OptF32(key, &v));
    if (v != 0.0f) {
      return Unsupported("'" + h.Key(key) + "' = " + std::to_string(v) +
                         " (Ministral 3's attention temperature / YaRN scaling) is not supported");
    }
  }
  // Unlike llama, the reference reads YaRN's betas for mistral3 (defaults 32 and 1 as ReadCommon's).
  float beta_fast = 32.0f, beta_slow = 1.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.scaling.yarn_beta_fast", &beta_fast));
  ZF_RETURN_IF_ERROR(h.OptF32("rope.scaling.yarn_beta_slow", &beta_slow));
  for (LayerDesc& l : d->layers) {
    l.attn.rope.beta_fast = beta_fast;
    l.attn.rope.beta_slow = beta_slow;
  }
  return BuildLlama(h, d);
}

}  // namespace zf::model

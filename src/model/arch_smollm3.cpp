// SmolLM3: llama blocks, except that every 4th layer (il % 4 == 3) applies no rotary embedding;
// the reference hard-codes that step without reading a key.
#include "model/registry.h"

namespace zf::model {

Status BuildSmolLM3(const Hparams&, ModelDesc* d) {
  for (int32_t il = 0; il < d->n_layer; ++il) d->layers[size_t(il)].attn.rope.enabled = (il + 1) % 4 != 0;
  return Status::Ok();
}

}  // namespace zf::model

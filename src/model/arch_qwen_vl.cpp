// Qwen2-VL / Qwen2.5-VL (qwen2vl: Qwen 2's blocks) and Qwen3-VL (qwen3vl: Qwen 3's blocks) as
// language models: rope on halves with M-RoPE sections (rope.dimension_sections, required as
// the reference requires it) and, for Qwen3-VL, n_deepstack_layers. Text tokens carry equal
// t / h / w positions, so text runs as Qwen 2 / Qwen 3 does; the sections matter for image rows.
#include <string>

#include "model/registry.h"

namespace zf::model {

Status ReadMropeSections(const Hparams& h, ModelDesc* d) {
  const std::string key = h.Key("rope.dimension_sections");
  if (!h.Has("rope.dimension_sections")) return FormatError("missing required metadata key '" + key + "'");
  std::vector<int32_t> s;
  ZF_RETURN_IF_ERROR(h.file().GetI32Array(key, &s));
  if (s.empty() || s.size() > 4) return FormatError("metadata '" + key + "' must have 1 to 4 entries");
  int64_t sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] < 0) return FormatError("metadata '" + key + "' has a negative entry");
    d->mrope_sections[i] = s[i];
    sum += s[i];
  }
  if (sum == 0) return FormatError("metadata '" + key + "' is all zero");
  for (const LayerDesc& l : d->layers) {
    if (!l.attention()) continue;  // recurrent layers (qwen35's DeltaNet) rotate nothing
    const int32_t pairs = (l.attn.rope.n_rot > 0 ? l.attn.rope.n_rot : l.attn.head_dim_k) / 2;
    if (sum > pairs) {
      return FormatError("metadata '" + key + "' covers " + std::to_string(sum) + " pairs, more than the " +
                         std::to_string(pairs) + " rotated");
    }
  }
  return Status::Ok();
}

Status BuildQwen2VL(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(BuildQwen2(h, d));
  return ReadMropeSections(h, d);
}

Status BuildQwen3VL(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(BuildQwen3(h, d));
  d->mrope_interleaved = true;
  ZF_RETURN_IF_ERROR(h.OptI32("n_deepstack_layers", &d->n_deepstack));
  if (d->n_deepstack < 0 || d->n_deepstack > d->n_layer) {
    return FormatError("metadata '" + h.Key("n_deepstack_layers") + "' must be in [0, block_count]");
  }
  return ReadMropeSections(h, d);
}

}  // namespace zf::model

// Derived facts of a model description.
#include "model/description.h"

#include <algorithm>

namespace zf::model {

int32_t ModelDesc::MaxKWidth() const {
  int32_t w = 0;
  for (const LayerDesc& l : layers) {
    if (l.attention()) w = std::max(w, l.attn.n_head_kv * l.attn.head_dim_k);
  }
  return w;
}

int32_t ModelDesc::MaxVWidth() const {
  int32_t w = 0;
  for (const LayerDesc& l : layers) {
    if (l.attention()) w = std::max(w, l.attn.n_head_kv * l.attn.head_dim_v);
  }
  return w;
}

int32_t ModelDesc::NKvLayers() const {
  int32_t n = 0;
  for (const LayerDesc& l : layers) n += l.attention() && l.attn.kv_from < 0 ? 1 : 0;
  return n;
}

int32_t ModelDesc::KvSlot(int32_t il) const {
  const int32_t src = layers[size_t(il)].attn.kv_from < 0 ? il : layers[size_t(il)].attn.kv_from;
  int32_t slot = 0;
  for (int32_t j = 0; j < src; ++j) slot += layers[size_t(j)].attention() && layers[size_t(j)].attn.kv_from < 0 ? 1 : 0;
  return slot;
}

bool ModelDesc::HasRecurrentLayers() const {
  for (const LayerDesc& l : layers) {
    if (RecurrentStateFloats(*this, l) > 0) return true;
  }
  return false;
}

size_t RecurrentStateFloats(const ModelDesc& d, const LayerDesc& l) {
  switch (l.mixer) {
    case MixerKind::kAttention: return 0;
    case MixerKind::kShortConv: return size_t(l.conv.l_cache - 1) * size_t(d.n_embd);
    case MixerKind::kMamba2:
      return size_t(l.ssm.d_conv - 1) * size_t(l.ssm.Channels()) + size_t(l.ssm.d_inner) * size_t(l.ssm.d_state);
    case MixerKind::kGatedDeltaNet:
      return size_t(l.delta.d_conv - 1) * size_t(l.delta.channels()) +
             size_t(l.delta.n_v_heads) * size_t(l.delta.head_v_dim) * size_t(l.delta.head_k_dim);
  }
  return 0;
}

bool ModelDesc::MropeTextPlain() const {
  if (!mrope()) return true;
  engine::RopeParams rp;
  rp.sections = mrope_sections;
  rp.interleaved = mrope_interleaved;
  for (const LayerDesc& l : layers) {
    if (!l.attention() || !l.attn.rope.enabled) continue;
    const int32_t pairs = (l.attn.rope.n_rot > 0 ? l.attn.rope.n_rot : l.attn.head_dim_k) / 2;
    for (int32_t i = 0; i < pairs; ++i) {
      if (engine::MropeComponent(rp, i) == 3) return false;
    }
  }
  return true;
}

std::vector<engine::Op> RequiredOps(const ModelDesc& d) {
  std::vector<engine::Op> ops;
  const auto need = [&](engine::Op op) {
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  };
  if ((d.has_output_norm && d.output_norm_kind == NormKind::kLayer) || d.input_norm) need(engine::Op::kLayerNorm);
  if (d.residual_scale != 1.0f || d.logit_scale != 1.0f) need(engine::Op::kScale);
  if (d.n_embd_per_layer > 0) need(engine::Op::kStridedRows), need(engine::Op::kScale);
  const int32_t kw = d.MaxKWidth(), vw = d.MaxVWidth();
  for (const LayerDesc& l : d.layers) {
    if (l.attention() && (l.attn.n_head_kv * l.attn.head_dim_k != kw || l.attn.n_head_kv * l.attn.head_dim_v != vw)) {
      need(engine::Op::kStridedRows);  // rows narrower than the cache's are padded
    }
    if (l.attn.v_norm) need(engine::Op::kUnweightedNorm);
    if (l.out_scale || l.ffn.router_scaled_norm) need(engine::Op::kScale);
    if (l.mixer == MixerKind::kShortConv) need(engine::Op::kShortConv);
    if (l.mixer == MixerKind::kMamba2) need(engine::Op::kMamba2);
    if (l.mixer == MixerKind::kGatedDeltaNet) need(engine::Op::kGatedDeltaNet);
    if (l.norm.kind == NormKind::kLayer) need(engine::Op::kLayerNorm);
    if (l.ffn.kind == FfnKind::kPlain) need(engine::Op::kPlainFfn);
    if (l.ffn.kind == FfnKind::kMoe) need(engine::Op::kMoe);
    if (!l.attention()) continue;
    if (l.attn.rope.attn_factor != 1.0f) need(engine::Op::kRopeFactors);
    if (!l.attn.causal) need(engine::Op::kNonCausal);
    if (l.attn.rope.enabled && l.attn.rope.ext_factor != 0.0f) need(engine::Op::kRopeYarn);
    if (l.attn.sinks) need(engine::Op::kAttnSinks);
    if (!d.MropeTextPlain()) need(engine::Op::kRopeSections);  // text itself takes the sections
    if (l.attn.q_gate) need(engine::Op::kAttnOutputGate), need(engine::Op::kStridedRows);
    if (l.ffn.act == Activation::kSwigluOai) need(engine::Op::kSwigluOai);
  }
  return ops;
}

}  // namespace zf::model

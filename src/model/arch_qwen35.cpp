// Qwen 3.5 (qwen35) and Qwen 3.5 MoE (qwen35moe): gated DeltaNet layers (MixerKind::kGatedDeltaNet,
// sizes from ssm.*) interleaved with gated full attention (attn_q rows per head [q | gate],
// per-head QK-norm, partial rope on halves). Which layers are recurrent: the per-layer booleans
// attention.recurrent_layers, else every layer but each full_attention_interval-th (default 4).
// Every layer's pre-FFN norm is stored as post_attention_norm. Rope: the reference's interleaved
// M-RoPE (rope.dimension_sections, required as the reference requires it, Qwen3-VL's order):
// a text token has the same position in every section (plain rope on halves, unless a rotated
// pair falls outside the sections: ModelDesc::MropeTextPlain); image rows (a qwen3vl_merger
// projector) take 2D positions.
// MoE: a softmax router over expert_count experts of expert_feed_forward_length, top-k
// renormalized, plus a shared expert of expert_shared_feed_forward_length (default
// feed_forward_length) times sigmoid(ffn_gate_inp_shexp . x).
#include "model/registry.h"

namespace zf::model {
namespace {

Status RecurrentLayers(const Hparams& h, int32_t n_layer, std::vector<bool>* out) {
  out->assign(size_t(n_layer), false);
  const std::string key = h.Key("attention.recurrent_layers");
  if (const gguf::Value* v = h.file().Find(key)) {
    // The converter writes one boolean per block (MTP blocks, beyond block_count, included).
    if (v->type != gguf::ValueType::ARRAY || v->elem_type != gguf::ValueType::BOOL || v->count < uint64_t(n_layer)) {
      return FormatError("metadata '" + key + "' must be at least " + std::to_string(n_layer) + " booleans");
    }
    for (int32_t il = 0; il < n_layer; ++il) (*out)[size_t(il)] = v->raw[il] != 0;
    return Status::Ok();
  }
  int32_t interval = 4;
  ZF_RETURN_IF_ERROR(h.OptI32("full_attention_interval", &interval));
  if (interval <= 0) return FormatError("metadata '" + h.Key("full_attention_interval") + "' must be > 0");
  for (int32_t il = 0; il < n_layer; ++il) (*out)[size_t(il)] = (il + 1) % interval != 0;
  return Status::Ok();
}

}  // namespace

Status BuildQwen35(const Hparams& h, ModelDesc* d) {
  DeltaNetDesc dn;
  int32_t inner = 0;
  for (const char* key :
       {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"}) {
    if (!h.Has(key)) return FormatError("missing required metadata key '" + h.Key(key) + "'");
  }
  ZF_RETURN_IF_ERROR(h.I32("ssm.conv_kernel", &dn.d_conv));
  ZF_RETURN_IF_ERROR(h.I32("ssm.inner_size", &inner));
  ZF_RETURN_IF_ERROR(h.I32("ssm.state_size", &dn.head_k_dim));
  ZF_RETURN_IF_ERROR(h.I32("ssm.time_step_rank", &dn.n_v_heads));
  ZF_RETURN_IF_ERROR(h.I32("ssm.group_count", &dn.n_k_heads));
  if (dn.d_conv < 2 || dn.d_conv > 64 || dn.n_k_heads <= 0 || dn.n_v_heads <= 0 || dn.n_v_heads % dn.n_k_heads != 0 ||
      dn.head_k_dim <= 0 || dn.head_k_dim > 1024 || inner <= 0 || inner % dn.n_v_heads != 0) {
    return FormatError("inconsistent gated DeltaNet sizes for '" + d->arch + "': ssm.conv_kernel=" +
                       std::to_string(dn.d_conv) + " ssm.group_count=" + std::to_string(dn.n_k_heads) +
                       " ssm.time_step_rank=" + std::to_string(dn.n_v_heads) + " ssm.state_size=" +
                       std::to_string(dn.head_k_dim) + " ssm.inner_size=" + std::to_string(inner));
  }
  dn.head_v_dim = inner / dn.n_v_heads;
  if (dn.head_v_dim != dn.head_k_dim) {  // the reference's square [d][d] state per head
    return Unsupported("gated DeltaNet with value heads of " + std::to_string(dn.head_v_dim) + " and key heads of " +
                       std::to_string(dn.head_k_dim) + " (the reference needs them equal)");
  }
  std::vector<bool> recurrent;
  ZF_RETURN_IF_ERROR(RecurrentLayers(h, d->n_layer, &recurrent));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    l.norm.ffn_norm_named_post_attention = true;
    if (recurrent[size_t(il)]) {
      l.mixer = MixerKind::kGatedDeltaNet;
      l.delta = dn;
      l.attn.fused_qkv = false;  // attn_qkv is the linear attention's projection here
      continue;
    }
    l.attn.q_gate = true;
    l.attn.bias_qkv = false;
    l.attn.qk_norm = QkNorm::kPerHead;
    l.attn.rope.style = RopeStyle::kNeox;
  }
  d->mrope_interleaved = true;
  return ReadMropeSections(h, d);
}

Status BuildQwen35Moe(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(BuildQwen35(h, d));
  std::vector<int32_t> n_ff_exp;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("expert_feed_forward_length", d->n_layer, &n_ff_exp));
  int32_t n_ff_shared = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("expert_shared_feed_forward_length", &n_ff_shared));
  float w_scale = 0.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("expert_weights_scale", &w_scale));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    FfnDesc& f = d->layers[size_t(il)].ffn;
    if (f.kind != FfnKind::kMoe) return FormatError("qwen35moe needs expert_count > 0");
    const int32_t n_ff = f.n_ff;
    f.n_ff = !n_ff_exp.empty() && n_ff_exp[size_t(il)] > 0 ? n_ff_exp[size_t(il)] : n_ff / f.n_expert_used;
    f.n_ff_shared = n_ff_shared > 0 ? n_ff_shared : n_ff;
    f.shared_gate = true;
    f.norm_topk = true;
    if (w_scale != 0.0f) f.expert_weight_scale = w_scale;  // the reference scales only when set
  }
  return Status::Ok();
}

}  // namespace zf::model

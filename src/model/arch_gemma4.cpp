// Gemma 4 (dense: E2B / E4B / 31B): Gemma 3's block (scaled embeddings, per-head QK-norm,
// post-norms, GeGLU, sliding and full layers from attention.sliding_window_pattern) with
//   - per-layer head sizes and KV heads: key_length(_swa), head_count_kv per layer;
//   - queries and keys normalized, so no query scaling (scale 1), and value heads RMS-normed
//     without a weight; attn_v may be absent (the values are then the key projection);
//   - full layers: rope over the whole head with rope_freqs (1 for the rotated pairs, 1e30 for
//     the others: "proportional" rope), base rope.freq_base; sliding layers: rope.freq_base_swa
//     (default 10000) over rope.dimension_count_swa, no factors, no scaling;
//   - the last attention.shared_kv_layers layers have no KV of their own: they attend over the
//     cache of the last earlier layer of their kind (the reference's reuse rule);
//   - per-layer token embeddings (embedding_length_per_layer_input > 0) and an optional
//     layer_output_scale per layer.
// The MoE variant (26B-A4B): a dense MLP (feed_forward_length) beside the experts
// (expert_feed_forward_length, gate and up fused in ffn_gate_up_exps or not), softmax top-k
// renormalized, a per-expert output scale, extra norms and a router reading the scaled RMS of
// the residual stream.
#include <cmath>

#include "model/registry.h"

namespace zf::model {

Status BuildGemma4(const Hparams& h, ModelDesc* d) {
  const int32_t L = d->n_layer;
  std::vector<int32_t> n_ff_exp;
  if (d->layers[0].ffn.kind == FfnKind::kMoe) {
    if (!h.Has("expert_feed_forward_length")) {
      return FormatError("missing required metadata key '" + h.Key("expert_feed_forward_length") + "'");
    }
    ZF_RETURN_IF_ERROR(h.OptI32PerLayer("expert_feed_forward_length", L, &n_ff_exp));
  }
  d->embed_scale = std::sqrt(float(d->n_embd));
  ZF_RETURN_IF_ERROR(h.OptF32("final_logit_softcapping", &d->final_logit_softcap));
  if (!h.Has("attention.sliding_window_pattern")) {
    return FormatError("missing required metadata key '" + h.Key("attention.sliding_window_pattern") + "'");
  }
  std::vector<bool> swa;
  ZF_RETURN_IF_ERROR(h.SlidingPattern(L, 0, &swa));
  int32_t window = 0, n_shared = 0, hd_swa = 0, hv_swa = 0;
  ZF_RETURN_IF_ERROR(h.I32("attention.sliding_window", &window));
  ZF_RETURN_IF_ERROR(h.I32("embedding_length_per_layer_input", &d->n_embd_per_layer));
  ZF_RETURN_IF_ERROR(h.I32("attention.key_length_swa", &hd_swa));
  ZF_RETURN_IF_ERROR(h.I32("attention.value_length_swa", &hv_swa));
  ZF_RETURN_IF_ERROR(h.OptI32("attention.shared_kv_layers", &n_shared));
  if (window <= 0 || d->n_embd_per_layer < 0 || d->n_embd_per_layer > (1 << 16) || hd_swa != hv_swa ||
      d->layers[0].attn.head_dim_k != d->layers[0].attn.head_dim_v || n_shared < 0 || n_shared > L - 2 ||
      (n_shared > 0 && L - n_shared < 2)) {
    return FormatError("inconsistent Gemma 4 hyperparameters: sliding_window=" + std::to_string(window) +
                       " embedding_length_per_layer_input=" + std::to_string(d->n_embd_per_layer) +
                       " key/value_length_swa=" + std::to_string(hd_swa) + "/" + std::to_string(hv_swa) +
                       " shared_kv_layers=" + std::to_string(n_shared) + " of " + std::to_string(L) + " layers");
  }
  int32_t n_rot_swa = d->layers[0].attn.rope.n_rot;  // the reference's default: rope.dimension_count
  ZF_RETURN_IF_ERROR(h.OptI32("rope.dimension_count_swa", &n_rot_swa));
  float base_swa = 10000.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_swa));
  const int32_t kv_start = L - n_shared;  // layers from here on share an earlier layer's KV
  for (int32_t il = 0; il < L; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    AttentionDesc& a = l.attn;
    a.rope.style = RopeStyle::kNeox;
    a.qk_norm = QkNorm::kPerHead;
    a.v_norm = true;
    a.v_optional = true;
    a.scale = 1.0f;
    a.bias_qkv = a.bias_out = false;
    l.ffn.act = Activation::kGeluTanh;
    l.norm.post_attn = l.norm.post_ffn = true;
    l.per_layer_input = d->n_embd_per_layer > 0;
    l.out_scale = true;
    if (swa[size_t(il)]) {
      a.window = window;
      a.head_dim_k = a.head_dim_v = hd_swa;
      a.rope.n_rot = n_rot_swa;
      a.rope.base = base_swa;
      a.rope.freq_scale = 1.0f;
      a.rope.use_freq_factors = false;
      a.rope.ext_factor = 0.0f;
      a.rope.attn_factor = 1.0f;
    }
    if (il >= kv_start) a.kv_from = kv_start - (swa[size_t(il)] ? 2 : 1);
    if (l.ffn.kind == FfnKind::kMoe) {
      l.ffn.n_ff_dense = l.ffn.n_ff;
      l.ffn.n_ff = n_ff_exp[size_t(il)];
      l.ffn.norm_topk = true;
      l.ffn.gating = Gating::kSoftmax;
      l.ffn.router_scaled_norm = true;
      l.ffn.fused_gate_up =
          h.file().FindTensor("blk." + std::to_string(il) + ".ffn_gate_up_exps.weight") != nullptr;
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

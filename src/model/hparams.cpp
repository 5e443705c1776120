// The metadata keys every family shares, read into a per-layer description.
#include "model/hparams.h"

#include <algorithm>
#include <cmath>

namespace zf::model {
namespace {

Status Missing(const std::string& key) { return FormatError("missing required metadata key '" + key + "'"); }

template <typename T, typename Getter>
Status Optional(const gguf::GgufFile& f, const std::string& key, T* out, Getter get) {
  Status s = (f.*get)(key, out);
  return s.code() == Code::kNotFound ? Status::Ok() : s;
}

}  // namespace

Status Hparams::I32(const char* suffix, int32_t* out) const {
  Status s = f_.GetI32(Key(suffix), out);
  return s.code() == Code::kNotFound ? Missing(Key(suffix)) : s;
}
Status Hparams::OptI32(const char* suffix, int32_t* out) const { return Optional(f_, Key(suffix), out, &gguf::GgufFile::GetI32); }
Status Hparams::OptF32(const char* suffix, float* out) const { return Optional(f_, Key(suffix), out, &gguf::GgufFile::GetF32); }
Status Hparams::OptBool(const char* suffix, bool* out) const { return Optional(f_, Key(suffix), out, &gguf::GgufFile::GetBool); }
Status Hparams::OptString(const char* suffix, std::string* out) const {
  std::string_view sv;
  Status s = f_.GetString(Key(suffix), &sv);
  if (s.code() == Code::kNotFound) return Status::Ok();
  ZF_RETURN_IF_ERROR(s);
  *out = std::string(sv);
  return Status::Ok();
}

Status Hparams::OptI32PerLayer(const char* suffix, int32_t n_layer, std::vector<int32_t>* out) const {
  const gguf::Value* v = f_.Find(Key(suffix));
  if (v == nullptr) return Status::Ok();
  if (v->type == gguf::ValueType::ARRAY) {
    std::vector<int32_t> a;
    ZF_RETURN_IF_ERROR(f_.GetI32Array(Key(suffix), &a));
    // Arrays over every block of the file: the run layers, then any MTP blocks (ModelDesc::n_layer_mtp).
    int32_t blocks = n_layer;
    if (f_.GetI32(Key("block_count"), &blocks).ok() && a.size() == size_t(blocks) && blocks > n_layer) {
      a.resize(size_t(n_layer));
    }
    if (a.size() != size_t(n_layer)) {
      return FormatError("metadata '" + Key(suffix) + "' has " + std::to_string(a.size()) + " entries, expected one per layer (" +
                         std::to_string(n_layer) + ")");
    }
    *out = std::move(a);
    return Status::Ok();
  }
  int32_t x = 0;
  ZF_RETURN_IF_ERROR(f_.GetI32(Key(suffix), &x));
  out->assign(size_t(n_layer), x);
  return Status::Ok();
}

Status Hparams::SlidingPattern(int32_t n_layer, uint32_t pattern, std::vector<bool>* out, bool dense_first) const {
  out->assign(size_t(n_layer), false);
  const gguf::Value* v = f_.Find(Key("attention.sliding_window_pattern"));
  if (v != nullptr && v->type == gguf::ValueType::ARRAY) {
    if (v->elem_type != gguf::ValueType::BOOL || v->count != uint64_t(n_layer)) {
      return FormatError("metadata '" + Key("attention.sliding_window_pattern") + "' must be " + std::to_string(n_layer) +
                         " booleans");
    }
    for (int32_t il = 0; il < n_layer; ++il) (*out)[size_t(il)] = v->raw[il] != 0;
    return Status::Ok();
  }
  if (v != nullptr) {
    int32_t n = 0;
    ZF_RETURN_IF_ERROR(f_.GetI32(Key("attention.sliding_window_pattern"), &n));
    if (n < 0) return FormatError("negative attention.sliding_window_pattern");
    pattern = uint32_t(n);
  }
  for (int32_t il = 0; il < n_layer; ++il) {
    const uint32_t k = uint32_t(il) % (pattern == 0 ? 1 : pattern);
    (*out)[size_t(il)] = pattern == 0 || (dense_first ? k != 0 : k < pattern - 1);
  }
  return Status::Ok();
}

Status ReadCommon(const Hparams& h, ModelDesc* d) {
  d->arch = h.arch();
  ZF_RETURN_IF_ERROR(h.I32("embedding_length", &d->n_embd));
  ZF_RETURN_IF_ERROR(h.I32("block_count", &d->n_layer));
  // The last nextn_predict_layers blocks are multi-token-prediction heads (Qwen 3.5's converter
  // writes one): in the file, not part of the forward pass, as the reference's n_layer().
  ZF_RETURN_IF_ERROR(h.OptI32("nextn_predict_layers", &d->n_layer_mtp));
  if (d->n_layer_mtp < 0 || d->n_layer_mtp >= d->n_layer) {
    return FormatError("metadata '" + h.Key("nextn_predict_layers") + "' is " + std::to_string(d->n_layer_mtp) +
                       " of " + std::to_string(d->n_layer) + " blocks");
  }
  d->n_layer -= d->n_layer_mtp;
  d->n_ctx_train = 2048;
  ZF_RETURN_IF_ERROR(h.OptI32("context_length", &d->n_ctx_train));
  if (d->n_embd <= 0 || d->n_embd > (1 << 16) || d->n_layer <= 0 || d->n_layer > 4096 || d->n_ctx_train <= 0) {
    return FormatError("inconsistent hyperparameters for '" + d->arch + "': embedding_length=" + std::to_string(d->n_embd) +
                       " block_count=" + std::to_string(d->n_layer) + " context_length=" + std::to_string(d->n_ctx_train));
  }
  const int32_t L = d->n_layer;
  if (!h.Has("attention.head_count")) return Missing(h.Key("attention.head_count"));
  if (!h.Has("feed_forward_length")) return Missing(h.Key("feed_forward_length"));
  std::vector<int32_t> n_head, n_head_kv, n_ff;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("attention.head_count", L, &n_head));
  n_head_kv = n_head;
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("attention.head_count_kv", L, &n_head_kv));
  ZF_RETURN_IF_ERROR(h.OptI32PerLayer("feed_forward_length", L, &n_ff));

  float eps = 1e-5f;
  ZF_RETURN_IF_ERROR(h.OptF32("attention.layer_norm_rms_epsilon", &eps));
  NormKind norm_kind = NormKind::kRms;
  if (!h.Has("attention.layer_norm_rms_epsilon") && h.Has("attention.layer_norm_epsilon")) {
    norm_kind = NormKind::kLayer;
    ZF_RETURN_IF_ERROR(h.OptF32("attention.layer_norm_epsilon", &eps));
  }
  d->output_norm_kind = norm_kind;
  d->output_norm_eps = eps;

  // Rope: as the reference reads it, rope.scaling.factor divides positions whatever the type
  // (linear, longrope, yarn; type none means no scaling); llama3 scaling arrives as the
  // rope_freqs tensor and LongRoPE's as rope_factors_long/short. YaRN adds the blend of scaled
  // and unscaled angles (ext_factor 1) and its magnitude (below).
  float rope_base = 10000.0f, freq_scale = 1.0f, factor = 0.0f, attn_factor = 1.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base", &rope_base));
  std::string scaling;
  ZF_RETURN_IF_ERROR(h.OptString("rope.scaling.type", &scaling));
  ZF_RETURN_IF_ERROR(h.OptF32("rope.scaling.factor", &factor));
  ZF_RETURN_IF_ERROR(h.OptF32("rope.scaling.attn_factor", &attn_factor));
  if (factor < 0.0f || !std::isfinite(factor) || !(attn_factor > 0.0f) || !std::isfinite(attn_factor)) {
    return FormatError("invalid rope scaling: factor " + std::to_string(factor) + ", attn_factor " +
                       std::to_string(attn_factor));
  }
  if (factor != 0.0f) freq_scale = 1.0f / factor;
  if (!scaling.empty() && scaling != "none" && scaling != "linear" && scaling != "longrope" && scaling != "yarn") {
    return Unsupported("rope scaling type '" + scaling + "' is not supported");
  }
  if (scaling == "none") freq_scale = 1.0f;  // the reference never scales with type none
  float ext_factor = 0.0f;
  if (scaling == "yarn") {
    // The reference's YaRN magnitude: get_mscale(s) = 1 + 0.1 ln s (1 for s <= 1), divided by
    // the 1 + 0.1 ln s its rope op multiplies in again, times rope.scaling.attn_factor; in its
    // float operations (s = 1 / freq_scale).
    ext_factor = 1.0f;
    const float s = 1.0f / freq_scale;
    const float mscale = s <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(s) + 1.0f;
    attn_factor = mscale * (1.0f / (1.0f + 0.1f * std::log(s))) * attn_factor;
  }
  d->n_ctx_orig = d->n_ctx_train;
  ZF_RETURN_IF_ERROR(h.OptI32("rope.scaling.original_context_length", &d->n_ctx_orig));
  if (d->n_ctx_orig <= 0) d->n_ctx_orig = d->n_ctx_train;  // as the reference: 0 means unset
  if (ext_factor != 0.0f && d->n_ctx_orig <= 0) {
    return FormatError("YaRN rope scaling needs rope.scaling.original_context_length or context_length");
  }
  int32_t n_expert = 0, n_expert_used = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("expert_count", &n_expert));
  ZF_RETURN_IF_ERROR(h.OptI32("expert_used_count", &n_expert_used));
  const gguf::GgufFile& f = h.file();
  const bool has_rope_factors = f.FindTensor("rope_freqs.weight") != nullptr ||
                                f.FindTensor("rope_factors_long.weight") != nullptr ||
                                f.FindTensor("rope_factors_short.weight") != nullptr;

  // Embeddings: the pooling the file asks for, and whether attention is causal (`attention.causal`,
  // read by the reference for every family; default true).
  int32_t pooling = int32_t(Pooling::kUnspecified);
  ZF_RETURN_IF_ERROR(h.OptI32("pooling_type", &pooling));
  if (pooling < int32_t(Pooling::kUnspecified) || pooling > int32_t(Pooling::kRank)) {
    return FormatError("metadata '" + h.Key("pooling_type") + "' is " + std::to_string(pooling) +
                       " (known: -1 unspecified, 0 none, 1 mean, 2 cls, 3 last, 4 rank)");
  }
  d->pooling = Pooling(pooling);
  // The classifier's outputs: one per label (a BERT reranker has none: one score; a Qwen3
  // reranker has "yes" and "no"), read for every family as the reference does.
  if (const gguf::Value* labels = f.Find(h.Key("classifier.output_labels"))) {
    if (labels->type == gguf::ValueType::ARRAY && labels->count > 0 && labels->count < 65536) {
      d->n_cls_out = int32_t(labels->count);
    }
  }
  bool causal = true;
  ZF_RETURN_IF_ERROR(h.OptBool("attention.causal", &causal));
  d->layers.assign(size_t(L), LayerDesc{});
  for (int32_t il = 0; il < L; ++il) {
    LayerDesc& ld = d->layers[size_t(il)];
    AttentionDesc& a = ld.attn;
    a.n_head = n_head[size_t(il)];
    a.n_head_kv = n_head_kv[size_t(il)];
    // head_count_kv 0 marks a layer without attention (LFM2's convolutions): the family's builder
    // gives it a recurrent mixer, else ValidateDesc refuses it.
    if (a.n_head <= 0 || a.n_head > 4096 || a.n_head_kv < 0 || (a.n_head_kv > 0 && a.n_head % a.n_head_kv != 0)) {
      return FormatError("inconsistent attention heads for '" + d->arch + "' layer " + std::to_string(il) + ": head_count=" +
                         std::to_string(a.n_head) + " head_count_kv=" + std::to_string(a.n_head_kv));
    }
    a.head_dim_k = d->n_embd / a.n_head;
    ZF_RETURN_IF_ERROR(h.OptI32("attention.key_length", &a.head_dim_k));
    a.head_dim_v = a.head_dim_k;
    ZF_RETURN_IF_ERROR(h.OptI32("attention.value_length", &a.head_dim_v));
    a.rope.n_rot = a.head_dim_k;
    ZF_RETURN_IF_ERROR(h.OptI32("rope.dimension_count", &a.rope.n_rot));
    a.rope.base = rope_base;
    a.rope.freq_scale = freq_scale;
    a.rope.attn_factor = attn_factor;
    a.rope.ext_factor = ext_factor;
    a.rope.use_freq_factors = has_rope_factors;
    // Any family may store Q/K/V fused (the reference accepts attn_qkv everywhere); biases are
    // bound when the file has them (qwen2, ...).
    a.fused_qkv = f.FindTensor("blk." + std::to_string(il) + ".attn_qkv.weight") != nullptr;
    a.bias_qkv = true;
    a.bias_out = true;  // optional attn_output.bias
    ld.ffn.n_ff = n_ff[size_t(il)];
    if (n_expert > 0) {
      ld.ffn.kind = FfnKind::kMoe;
      ld.ffn.n_expert = n_expert;
      ld.ffn.n_expert_used = n_expert_used;
    }
    ld.norm.kind = norm_kind;
    ld.norm.eps = eps;
    a.causal = causal;
  }
  return Status::Ok();
}

Status ValidateDesc(const ModelDesc& d) {
  const LayerDesc* first_attn = nullptr;
  for (int32_t il = 0; il < d.n_layer; ++il) {
    const LayerDesc& l = d.layers[size_t(il)];
    const AttentionDesc& a = l.attn;
    const std::string where = "'" + d.arch + "' layer " + std::to_string(il);
    if (l.mixer == MixerKind::kShortConv && (l.conv.l_cache < 2 || l.conv.l_cache > 64)) {
      return FormatError("shortconv.l_cache of " + where + " must be 2..64, got " + std::to_string(l.conv.l_cache));
    }
    if (l.mixer == MixerKind::kMamba2) {
      const Mamba2Desc& m = l.ssm;
      if (m.d_conv < 2 || m.d_conv > 64 || m.d_inner <= 0 || m.d_state <= 0 || m.d_state > 4096 || m.n_head <= 0 ||
          m.n_group <= 0 || m.d_inner % m.n_head != 0 || m.n_head % m.n_group != 0 || m.d_inner % m.n_group != 0 ||
          m.d_inner > (1 << 20)) {
        return FormatError("inconsistent Mamba-2 sizes for " + where + ": ssm.conv_kernel=" + std::to_string(m.d_conv) +
                           " ssm.inner_size=" + std::to_string(m.d_inner) + " ssm.state_size=" + std::to_string(m.d_state) +
                           " ssm.time_step_rank=" + std::to_string(m.n_head) + " ssm.group_count=" + std::to_string(m.n_group));
      }
    }
    if (l.attention() && a.n_head_kv <= 0) {
      return FormatError(where + " has head_count_kv 0 (no attention) and its family declares no recurrent block");
    }
    if (l.attention() && first_attn == nullptr) first_attn = &l;
    if (l.attention() && (a.head_dim_k <= 0 || a.head_dim_v <= 0 || a.head_dim_k > 1024 || a.head_dim_v > 1024 || a.rope.n_rot <= 0 ||
        a.rope.n_rot > a.head_dim_k || a.rope.n_rot % 2 != 0)) {
      return FormatError("inconsistent head sizes for " + where + ": key_length=" + std::to_string(a.head_dim_k) +
                         " value_length=" + std::to_string(a.head_dim_v) + " rope.dimension_count=" + std::to_string(a.rope.n_rot));
    }
    if (l.ffn.n_ff <= 0 && l.ffn.kind != FfnKind::kMoe) {
      return FormatError("feed_forward_length of " + where + " must be > 0, got " + std::to_string(l.ffn.n_ff));
    }
    if (l.ffn.kind == FfnKind::kMoe &&
        (l.ffn.n_expert <= 0 || l.ffn.n_expert > 4096 || l.ffn.n_expert_used <= 0 ||
         l.ffn.n_expert_used > l.ffn.n_expert || l.ffn.n_ff <= 0)) {
      return FormatError("inconsistent experts for " + where + ": expert_count=" + std::to_string(l.ffn.n_expert) +
                         " expert_used_count=" + std::to_string(l.ffn.n_expert_used) + " expert feed_forward_length=" +
                         std::to_string(l.ffn.n_ff));
    }
    if (a.window < 0) return FormatError("negative sliding window for " + where);
    if (!l.attention()) continue;
    if (a.kv_from >= 0) {
      const AttentionDesc* src = a.kv_from < il ? &d.layers[size_t(a.kv_from)].attn : nullptr;
      if (src == nullptr || src->kv_from >= 0 || src->n_head_kv != a.n_head_kv || src->head_dim_k != a.head_dim_k ||
          src->head_dim_v != a.head_dim_v || src->window != a.window) {
        return FormatError(where + " shares the KV cache of layer " + std::to_string(a.kv_from) +
                           ", which is not an earlier layer with its own KV of the same shape and window");
      }
    }
  }
  return Status::Ok();
}

}  // namespace zf::model

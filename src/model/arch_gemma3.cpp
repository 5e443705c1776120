// Gemma 3: scaled embeddings, per-head QK-norm, post-norms, GeGLU, 5 sliding-window layers per
// global one (or attention.sliding_window_pattern); local layers use rope.freq_base_swa
// (default 10000) without scaling or frequency factors.
// EmbeddingGemma (gemma-embedding): the same layers with bidirectional attention (the local
// layers' window symmetric around each position), queries scaled by 1/sqrt(head_dim) at every
// size, and the sentence-transformers Dense projections after pooling when the file has them.
#include <cmath>

#include "model/registry.h"

namespace zf::model {

Status BuildGemma3(const Hparams& h, ModelDesc* d) {
  d->embed_scale = std::sqrt(float(d->n_embd));
  ZF_RETURN_IF_ERROR(h.OptF32("final_logit_softcapping", &d->final_logit_softcap));
  float attn_softcap = 0.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("attn_logit_softcapping", &attn_softcap));
  int32_t window = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  if (window <= 0) window = 512;
  float base_local = 10000.0f;
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_local));
  std::vector<bool> local;
  ZF_RETURN_IF_ERROR(h.SlidingPattern(d->n_layer, 6, &local));
  for (int32_t il = 0; il < d->n_layer; ++il) {
    LayerDesc& l = d->layers[size_t(il)];
    l.attn.rope.style = RopeStyle::kNeox;
    l.attn.qk_norm = QkNorm::kPerHead;
    l.attn.softcap = attn_softcap;
    l.ffn.act = Activation::kGeluTanh;
    l.norm.post_attn = l.norm.post_ffn = true;
    // Queries are scaled by query_pre_attn_scalar^-1/2; the GGUF has no key for it, and the
    // reference uses 1/sqrt(head_dim) for every size except 27B (1/sqrt(n_embd/n_head)).
    l.attn.scale = d->n_layer == 62 ? 1.0f / std::sqrt(float(d->n_embd / l.attn.n_head))
                                    : 1.0f / std::sqrt(float(l.attn.head_dim_k));
    if (local[size_t(il)]) {
      l.attn.window = window;
      l.attn.rope.base = base_local;
      l.attn.rope.freq_scale = 1.0f;
      l.attn.rope.use_freq_factors = false;
    }
  }
  return Status::Ok();
}

Status BuildGemmaEmbedding(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(BuildGemma3(h, d));
  int32_t dense_2_in = 0, dense_2_out = 0, dense_3_in = 0, dense_3_out = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("dense_2_feat_in", &dense_2_in));
  ZF_RETURN_IF_ERROR(h.OptI32("dense_2_feat_out", &dense_2_out));
  ZF_RETURN_IF_ERROR(h.OptI32("dense_3_feat_in", &dense_3_in));
  ZF_RETURN_IF_ERROR(h.OptI32("dense_3_feat_out", &dense_3_out));
  if ((dense_2_in != 0 && dense_2_in != d->n_embd) || (dense_3_out != 0 && dense_3_out != d->n_embd) ||
      dense_2_out != dense_3_in || dense_2_out < 0 || dense_2_out > (1 << 20)) {
    return FormatError("'" + d->arch + "': dense_2 must map " + std::to_string(d->n_embd) +
                       " values to dense_3_feat_in and dense_3 back to " + std::to_string(d->n_embd) + " (got " +
                       std::to_string(dense_2_in) + " -> " + std::to_string(dense_2_out) + ", " +
                       std::to_string(dense_3_in) + " -> " + std::to_string(dense_3_out) + ")");
  }
  d->n_dense = dense_2_out;
  for (LayerDesc& l : d->layers) {
    l.attn.causal = false;
    l.attn.scale = 1.0f / std::sqrt(float(l.attn.head_dim_k));
  }
  return Status::Ok();
}

}  // namespace zf::model

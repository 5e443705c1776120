// BERT-style encoders. BERT (BGE, all-MiniLM, E5): input = token + absolute position + token
// type 0 embeddings through a LayerNorm; every layer is post-LN (attention, add, LayerNorm; GELU
// FFN with biases, add, LayerNorm), attention is bidirectional and rope-free; there is no output
// norm and no vocabulary head (the last layer's states are pooled into embeddings).
// nomic-bert (nomic-embed-text): the same frame with rope on halves instead of position
// embeddings and a SwiGLU FFN without biases (llama.cpp's bert graph, its last FFN branch).
// ModernBERT (modern-bert): pre-LN layers whose LayerNorms have no biases (the first layer's
// attention reads the normed embeddings as they are), fused attn_qkv, neox rope, GeGLU from one
// ffn_up of rows [gate | up], every third layer global (the first of each three) and the others
// a symmetric sliding window with their own rope base; token_embd_norm in, output_norm out; no
// token types or position table.
#include <string>

#include "model/registry.h"

namespace zf::model {

namespace {

// What every BERT-style encoder shares: token types, the input LayerNorm, post-LN layers with
// bidirectional attention, no output norm or head, an optional classifier.
Status EncoderFrame(const Hparams& h, ModelDesc* d) {
  if (d->layers.empty() || d->layers[0].norm.kind != NormKind::kLayer) {
    return FormatError("'" + d->arch + "' needs " + h.Key("attention.layer_norm_epsilon"));
  }
  const float eps = d->layers[0].norm.eps;
  // The reference reads the token-type count from the tokenizer metadata and requires it.
  uint32_t n_types = 0;
  const gguf::GgufFile& f = h.file();
  if (f.Find("tokenizer.ggml.token_type_count") == nullptr ||
      !f.GetU32("tokenizer.ggml.token_type_count", &n_types).ok() || n_types == 0 || n_types > 1024) {
    return FormatError("'" + d->arch + "' needs tokenizer.ggml.token_type_count (1 to 1024)");
  }
  d->n_token_types = int32_t(n_types);
  d->input_norm = true;
  d->input_norm_eps = eps;
  d->has_output_norm = false;
  d->has_output_head = false;
  for (LayerDesc& l : d->layers) {
    l.attn.causal = false;
    l.norm.pre_attn = l.norm.pre_ffn = false;
    l.norm.after_residual_attn = l.norm.after_residual_ffn = true;
  }
  return Status::Ok();
}

}  // namespace

Status BuildBert(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(EncoderFrame(h, d));
  d->pos_embd = PositionEmbd::kAbsolute;
  for (LayerDesc& l : d->layers) {
    l.attn.rope.enabled = false;
    l.ffn.kind = FfnKind::kPlain;
    l.ffn.act = Activation::kGeluTanh;  // the reference's GELU: tanh form, through its F16 table
    l.ffn.bias = true;
  }
  return Status::Ok();
}

Status BuildNomicBert(const Hparams& h, ModelDesc* d) {
  ZF_RETURN_IF_ERROR(EncoderFrame(h, d));
  for (LayerDesc& l : d->layers) l.attn.rope.style = RopeStyle::kNeox;  // gated SiLU FFN: the default
  return Status::Ok();
}

Status BuildModernBert(const Hparams& h, ModelDesc* d) {
  if (d->layers.empty() || d->layers[0].norm.kind != NormKind::kLayer) {
    return FormatError("'" + d->arch + "' needs " + h.Key("attention.layer_norm_epsilon"));
  }
  int32_t window = 0;
  ZF_RETURN_IF_ERROR(h.OptI32("attention.sliding_window", &window));
  float base_local = d->layers[0].attn.rope.base;  // the reference's default: the global base
  ZF_RETURN_IF_ERROR(h.OptF32("rope.freq_base_swa", &base_local));
  std::vector<bool> local(d->layers.size(), false);
  if (window > 0) ZF_RETURN_IF_ERROR(h.SlidingPattern(d->n_layer, 3, &local, /*dense_first=*/true));
  // GeGLU unless the file names another gate (Granite Embedding R2: silu); the reference maps
  // unknown names to GeGLU too.
  std::string act_name;
  ZF_RETURN_IF_ERROR(h.OptString("hidden_activation", &act_name));
  Activation act = Activation::kGeluTanh;
  if (act_name == "silu" || act_name == "swish" || act_name == "swiglu") act = Activation::kSilu;
  if (act_name == "relu" || act_name == "reglu") {
    return Unsupported("'" + d->arch + "' with " + h.Key("hidden_activation") + " = " + act_name + " (ReGLU) is not supported");
  }
  d->input_norm = true;
  d->input_norm_bias = false;
  d->input_norm_eps = d->layers[0].norm.eps;
  d->has_output_head = false;  // has_output_norm (LayerNorm, no bias) as read
  for (size_t il = 0; il < d->layers.size(); ++il) {
    LayerDesc& l = d->layers[il];
    l.attn.causal = false;
    l.attn.rope.style = RopeStyle::kNeox;
    l.ffn.kind = FfnKind::kGated;
    l.ffn.fused_gate_up = true;
    l.ffn.act = act;  // GeGLU: the reference's tanh GELU
    if (local[il]) {
      l.attn.window = window;
      l.attn.rope.base = base_local;
    }
  }
  d->layers[0].norm.pre_attn = false;  // layer 0's attn_norm is the identity
  return Status::Ok();
}

}  // namespace zf::model

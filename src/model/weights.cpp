// Binds GGUF tensors to transformer roles and checks their shapes and types.
#include "model/weights.h"

#include <string>

#include "quant/quant.h"

namespace zf::model {
namespace {

std::string ShapeString(const Tensor& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

class Binder {
 public:
  Binder(const gguf::GgufFile& f) : f_(f) {}

  // Finds `name` and checks its 1-D or 2-D shape ({ne0} or {ne0, ne1}); ne1 < 0 means 1-D.
  Status Get(const std::string& name, int64_t ne0, int64_t ne1, bool required, const Tensor** out) {
    *out = nullptr;
    const Tensor* t = f_.FindTensor(name);
    if (t == nullptr) {
      return required ? FormatError("missing tensor '" + name + "'") : Status::Ok();
    }
    const bool shape_ok = ne1 < 0 ? (t->n_dims == 1 && t->ne[0] == ne0)
                                  : (t->n_dims == 2 && t->ne[0] == ne0 && t->ne[1] == ne1);
    if (!shape_ok) {
      return FormatError("tensor '" + name + "' has shape " + ShapeString(*t) + ", expected [" +
                         std::to_string(ne0) + (ne1 < 0 ? "" : ", " + std::to_string(ne1)) + "]");
    }
    if (ne1 < 0 && t->type != GgmlType::F32) {
      return Unsupported("tensor '" + name + "' is " + TypeName(t->type) + "; norms and biases must be F32");
    }
    if (ne1 >= 0 && !quant::IsSupported(t->type)) {
      return Unsupported("tensor '" + name + "' has type " + std::string(TypeName(t->type)) +
                         ", which this build cannot compute with");
    }
    *out = t;
    return Status::Ok();
  }

 private:
  const gguf::GgufFile& f_;
};

}  // namespace

Status BindWeights(const gguf::GgufFile& f, const ModelConfig& c, Weights* w) {
  Binder b(f);
  const int64_t q_rows = int64_t{c.n_head} * c.head_dim_k;
  const int64_t k_rows = int64_t{c.n_head_kv} * c.head_dim_k;
  const int64_t v_rows = int64_t{c.n_head_kv} * c.head_dim_v;
  const int64_t o_cols = int64_t{c.n_head} * c.head_dim_v;
  ZF_RETURN_IF_ERROR(b.Get("token_embd.weight", c.n_embd, c.n_vocab, true, &w->token_embd));
  ZF_RETURN_IF_ERROR(b.Get("output_norm.weight", c.n_embd, -1, true, &w->output_norm));
  ZF_RETURN_IF_ERROR(b.Get("output.weight", c.n_embd, c.n_vocab, false, &w->output));
  if (w->output == nullptr) w->output = w->token_embd;  // tied embeddings
  ZF_RETURN_IF_ERROR(b.Get("rope_freqs.weight", c.n_rot / 2, -1, false, &w->rope_freqs));

  w->layers.assign(static_cast<size_t>(c.n_layer), LayerWeights{});
  for (int32_t il = 0; il < c.n_layer; ++il) {
    LayerWeights& L = w->layers[static_cast<size_t>(il)];
    const std::string p = "blk." + std::to_string(il) + ".";
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_norm.weight", c.n_embd, -1, true, &L.attn_norm));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_q.weight", c.n_embd, q_rows, true, &L.wq));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_k.weight", c.n_embd, k_rows, true, &L.wk));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_v.weight", c.n_embd, v_rows, true, &L.wv));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_output.weight", o_cols, c.n_embd, true, &L.wo));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_q.bias", q_rows, -1, false, &L.bq));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_k.bias", k_rows, -1, false, &L.bk));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_v.bias", v_rows, -1, false, &L.bv));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_q_norm.weight", c.head_dim_k, -1, c.qk_norm, &L.q_norm));
    ZF_RETURN_IF_ERROR(b.Get(p + "attn_k_norm.weight", c.head_dim_k, -1, c.qk_norm, &L.k_norm));
    ZF_RETURN_IF_ERROR(b.Get(p + "post_attention_norm.weight", c.n_embd, -1, c.post_norms, &L.post_attn_norm));
    ZF_RETURN_IF_ERROR(b.Get(p + "ffn_norm.weight", c.n_embd, -1, true, &L.ffn_norm));
    ZF_RETURN_IF_ERROR(b.Get(p + "ffn_gate.weight", c.n_embd, c.n_ff, true, &L.ffn_gate));
    ZF_RETURN_IF_ERROR(b.Get(p + "ffn_up.weight", c.n_embd, c.n_ff, true, &L.ffn_up));
    ZF_RETURN_IF_ERROR(b.Get(p + "ffn_down.weight", c.n_ff, c.n_embd, true, &L.ffn_down));
    ZF_RETURN_IF_ERROR(b.Get(p + "post_ffw_norm.weight", c.n_embd, -1, c.post_norms, &L.post_ffn_norm));
  }
  return Status::Ok();
}

}  // namespace zf::model

// Forward pass of a pre-norm decoder-only transformer, options taken from ModelConfig.
#include "model/transformer.h"

#include <algorithm>
#include <cmath>

namespace zf::model {

Forward::Forward(const Model& model, engine::Backend& backend, int32_t max_batch)
    : model_(model), be_(backend), max_batch_(max_batch) {
  const ModelConfig& c = model.config();
  const size_t b = size_t(max_batch);
  // Scratch lives where the backend computes (host memory for the CPU engine).
  const auto alloc = [&](ActBuf& buf, size_t n) { return (buf.p = be_.AllocActivations(n)) != nullptr; };
  ok_ = alloc(x_, b * size_t(c.n_embd)) && alloc(h_, b * size_t(std::max(c.n_embd, c.n_head * c.head_dim_v))) &&
        alloc(q_, b * size_t(c.n_head) * size_t(c.head_dim_k)) &&
        alloc(k_, b * size_t(c.n_head_kv) * size_t(c.head_dim_k)) &&
        alloc(v_, b * size_t(c.n_head_kv) * size_t(c.head_dim_v)) &&
        alloc(attn_, b * size_t(c.n_head) * size_t(c.head_dim_v)) && alloc(gate_, b * size_t(c.n_ff)) &&
        alloc(up_, b * size_t(c.n_ff)) && alloc(logits_, size_t(c.n_vocab));
  pos_.resize(b);
}

void Forward::Run(const int32_t* tokens, int32_t n, int32_t pos0, float* logits, int32_t* argmax) {
  const int32_t n_vocab = model_.config().n_vocab;
  const bool want = logits != nullptr || argmax != nullptr;
  // On the CPU the logits are written straight into the caller's array, as before.
  float* out = !want ? nullptr : (be_.HostActivations() && logits != nullptr) ? logits : logits_.data();
  if (!be_.BeginStep(tokens, n, pos0, want)) {
    RunOps(tokens, n, pos0, out);
    if (be_.EndStep()) RunOps(tokens, n, pos0, out);  // only recorded (capture failed): run for real
  }
  if (!want) return;
  if (argmax != nullptr) *argmax = be_.Argmax(out, n_vocab);
  if (logits != nullptr && out != logits) be_.ReadActivations(out, size_t(n_vocab), logits);
}

void Forward::ReadLogits(float* host) {
  be_.ReadActivations(logits_.data(), size_t(model_.config().n_vocab), host);
}

void Forward::RunOps(const int32_t* tokens, int32_t n, int32_t pos0, float* logits) {
  const ModelConfig& c = model_.config();
  const Weights& w = model_.weights();
  const int32_t E = c.n_embd;
  const auto f32 = [](const Tensor* t) { return reinterpret_cast<const float*>(t->data); };

  for (int32_t t = 0; t < n; ++t) pos_[size_t(t)] = pos0 + t;
  be_.GetRows(*w.token_embd, tokens, n, c.embed_scale, x_.data());

  engine::AttentionParams ap;
  ap.n_head = c.n_head;
  ap.n_head_kv = c.n_head_kv;
  ap.head_dim_k = c.head_dim_k;
  ap.head_dim_v = c.head_dim_v;
  ap.scale = c.attn_scale > 0.0f ? c.attn_scale : 1.0f / std::sqrt(float(c.head_dim_k));
  ap.softcap = c.attn_logit_softcap;

  for (int32_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[size_t(il)];
    const bool local = c.layer_is_local[size_t(il)] != 0;

    // Attention block.
    be_.RmsNorm(x_.data(), f32(L.attn_norm), n, E, c.norm_eps, h_.data());
    {
      const Tensor* w3[3] = {L.wq, L.wk, L.wv};
      float* y3[3] = {q_.data(), k_.data(), v_.data()};
      be_.MatMulShared(w3, y3, 3, h_.data(), n);
    }
    if (L.bq) be_.AddBias(q_.data(), f32(L.bq), n, c.n_head * c.head_dim_k);
    if (L.bk) be_.AddBias(k_.data(), f32(L.bk), n, c.n_head_kv * c.head_dim_k);
    if (L.bv) be_.AddBias(v_.data(), f32(L.bv), n, c.n_head_kv * c.head_dim_v);
    if (c.qk_norm) {
      be_.RmsNorm(q_.data(), f32(L.q_norm), n * c.n_head, c.head_dim_k, c.norm_eps, q_.data());
      be_.RmsNorm(k_.data(), f32(L.k_norm), n * c.n_head_kv, c.head_dim_k, c.norm_eps, k_.data());
    }
    engine::RopeParams rp;
    rp.n_rot = c.n_rot;
    rp.style = c.rope_style;
    rp.base = local ? c.rope_base_local : c.rope_base;
    rp.freq_scale = local ? c.rope_freq_scale_local : c.rope_freq_scale;
    rp.freq_factors = (w.rope_freqs && !local) ? f32(w.rope_freqs) : nullptr;
    be_.Rope(q_.data(), n, c.n_head, c.head_dim_k, pos_.data(), rp);
    be_.Rope(k_.data(), n, c.n_head_kv, c.head_dim_k, pos_.data(), rp);
    be_.StoreKv(il, k_.data(), v_.data(), n, pos0);
    ap.window = local ? c.sliding_window : 0;
    be_.Attention(il, q_.data(), n, pos0, ap, attn_.data());
    be_.MatMul(*L.wo, attn_.data(), n, h_.data());
    if (c.post_norms) be_.RmsNorm(h_.data(), f32(L.post_attn_norm), n, E, c.norm_eps, h_.data());
    be_.Add(x_.data(), h_.data(), int64_t{n} * E);

    // Feed-forward block (gated).
    be_.RmsNorm(x_.data(), f32(L.ffn_norm), n, E, c.norm_eps, h_.data());
    be_.MatMulGated(c.activation, *L.ffn_gate, *L.ffn_up, h_.data(), n, gate_.data(), up_.data());
    be_.MatMul(*L.ffn_down, gate_.data(), n, h_.data());
    if (c.post_norms) be_.RmsNorm(h_.data(), f32(L.post_ffn_norm), n, E, c.norm_eps, h_.data());
    be_.Add(x_.data(), h_.data(), int64_t{n} * E);
  }

  if (logits == nullptr) return;
  // Only the last position's logits are needed (generation and zf_session_eval).
  const float* last = x_.data() + int64_t{n - 1} * E;
  be_.RmsNorm(last, f32(w.output_norm), 1, E, c.norm_eps, h_.data());
  be_.MatMul(*w.output, h_.data(), 1, logits);
  if (c.final_logit_softcap > 0.0f) be_.Softcap(logits, c.n_vocab, c.final_logit_softcap);
}

}  // namespace zf::model

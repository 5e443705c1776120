// The forward pass: embeddings -> per layer an attention block and an FFN block (dense or MoE)
// -> output head, each block reading the layer's description.
#include "model/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace zf::model {
namespace {

const float* F32(const Tensor* t) { return t == nullptr ? nullptr : reinterpret_cast<const float*>(t->data); }

// Whether some layer's K or V rows are narrower than the cache's (padded before StoreKv).
bool NeedsPadding(const ModelDesc& d) {
  for (const LayerDesc& l : d.layers) {
    if (l.attention() && (l.attn.n_head_kv * l.attn.head_dim_k != d.MaxKWidth() || l.attn.n_head_kv * l.attn.head_dim_v != d.MaxVWidth())) {
      return true;
    }
  }
  return false;
}

}  // namespace

const float* Forward::RopeFactors(const Model& model, int32_t n_ctx) {
  const Weights& w = model.weights();
  if (const float* f = F32(w[GlobalRole::kRopeFreqs])) return f;
  // The reference compares its context padded to a multiple of 256 with the original one.
  const int64_t padded = (int64_t{n_ctx} + 255) / 256 * 256;
  return F32(padded > model.desc().n_ctx_orig ? w[GlobalRole::kRopeFactorsLong] : w[GlobalRole::kRopeFactorsShort]);
}

Forward::Forward(const Model& model, engine::Backend& backend, int32_t max_batch, int32_t max_seqs)
    : model_(model), be_(backend), max_batch_(max_batch), max_seqs_(max_seqs) {
  const ModelDesc& d = model.desc();
  for (engine::Op op : RequiredOps(d)) {
    if (!be_.Supports(op)) {
      status_ = Unsupported(std::string("the ") + be_.name() + " engine cannot run '" + d.arch + "': it lacks " +
                            engine::OpName(op));
      return;
    }
  }
  size_t q = 0, k = 0, v = 0, o = 0, ff = 0, ne = 0, ssm = 0, qg = 0, dc = 0, dv = 0, dh = 0;
  bool conv = false;
  for (const LayerDesc& l : d.layers) {
    ff = std::max({ff, size_t(l.ffn.n_ff), size_t(l.ffn.n_ff_dense), size_t(l.ffn.n_ff_shared)});
    ne = std::max(ne, size_t(l.ffn.n_expert));
    if (l.mixer == MixerKind::kMamba2) {
      ssm = std::max(ssm, size_t(l.ssm.InProj()));
      o = std::max(o, size_t(l.ssm.d_inner));  // the scan's output goes to attn_
      continue;
    }
    if (l.mixer == MixerKind::kShortConv) {
      conv = true;
      o = std::max(o, size_t(d.n_embd));  // the convolution's output goes to attn_
      continue;
    }
    if (l.mixer == MixerKind::kGatedDeltaNet) {
      dc = std::max(dc, size_t(l.delta.channels()));
      dv = std::max(dv, size_t(l.delta.value_dim()));
      dh = std::max(dh, size_t(l.delta.n_v_heads));
      o = std::max(o, size_t(l.delta.value_dim()));  // the per-head outputs go to attn_
      continue;
    }
    if (l.attn.q_gate) qg = std::max(qg, size_t(l.attn.n_head) * size_t(l.attn.head_dim_k));
    q = std::max(q, size_t(l.attn.n_head) * size_t(l.attn.head_dim_k));
    k = std::max(k, size_t(l.attn.n_head_kv) * size_t(l.attn.head_dim_k));
    v = std::max(v, size_t(l.attn.n_head_kv) * size_t(l.attn.head_dim_v));
    o = std::max(o, size_t(l.attn.n_head) * size_t(l.attn.head_dim_v));
  }
  const size_t b = size_t(max_batch), E = size_t(d.n_embd);
  // Scratch lives where the backend computes (host memory for the CPU engine).
  const auto alloc = [&](ActBuf& buf, size_t n) { return (buf.p = be_.AllocActivations(n)) != nullptr; };
  bool ok = alloc(x_, b * E) && alloc(h_, b * std::max(E, o)) && alloc(q_, b * q) && alloc(k_, b * k) &&
            alloc(v_, b * v) && alloc(attn_, b * o) && alloc(gate_, b * ff) && alloc(up_, b * ff) &&
            alloc(logits_, size_t(max_seqs) * size_t(d.n_vocab));
  if (ok && conv) ok = alloc(conv_, b * 3 * E);
  if (ok && ssm > 0) ok = alloc(ssm_, b * ssm);
  if (ok && qg > 0) ok = alloc(q_full_, b * 2 * qg) && alloc(q_gate_, b * qg);
  if (ok && dc > 0) ok = alloc(delta_qkv_, b * dc) && alloc(delta_z_, b * dv) && alloc(delta_ab_, b * 2 * dh);
  if (ok && ne > 0) {
    ok = alloc(router_, b * ne) && alloc(moe_in_, b * E) && alloc(moe_out_, b * E) && alloc(moe_acc_, b * E) &&
         alloc(moe_x_, b * E);
    expert_rows_.resize(ne);
    probs_.resize(ne);
  }
  if (ok && d.n_embd_per_layer > 0) {
    const size_t pl = size_t(d.n_embd_per_layer) * size_t(d.n_layer);
    ok = alloc(pl_all_, b * pl) && alloc(pl_, b * pl) && alloc(pl_gate_, b * size_t(d.n_embd_per_layer));
  }
  if (ok && NeedsPadding(d)) {
    ok = alloc(k_pad_, b * size_t(d.MaxKWidth())) && alloc(v_pad_, b * size_t(d.MaxVWidth()));
    if (ok && be_.HostActivations()) {
      std::fill(k_pad_.p, k_pad_.p + b * size_t(d.MaxKWidth()), 0.0f);
      std::fill(v_pad_.p, v_pad_.p + b * size_t(d.MaxVWidth()), 0.0f);
    }
  }
  if (!ok) {
    status_ = Status(Code::kOutOfMemory, std::string("cannot allocate activations on the ") + be_.name() + " engine");
    return;
  }
  pos_.resize(b);
  if (model_.desc().mrope()) mpos_.resize(b * 4);
  mrope_text_ = !model_.desc().MropeTextPlain();
  zeros_.assign(b, 0);
}

void Forward::Run(const SeqState& s, const int32_t* tokens, int32_t n, int32_t pos0, float* logits, int32_t* argmax) {
  const int32_t n_vocab = model_.desc().n_vocab;
  const bool want = logits != nullptr || argmax != nullptr;
  // On the CPU the logits are written straight into the caller's array.
  float* out = !want ? nullptr : (be_.HostActivations() && logits != nullptr) ? logits : logits_.data();
  const Seq seq{s.kv, pos0, n, nullptr, nullptr, s.rope_factors, s.state, s.lora, s.rope_shift, nullptr, s.copies,
                s.n_copies};
  if (!be_.BeginStep(s.kv, tokens, n, pos0, want)) {
    RunOps(tokens, n, &seq, 1, out);
    if (be_.EndStep()) RunOps(tokens, n, &seq, 1, out);  // only recorded (capture failed): run for real
  }
  if (!want) return;
  if (argmax != nullptr) *argmax = be_.Argmax(out, n_vocab);
  if (logits != nullptr && out != logits) be_.ReadActivations(out, size_t(n_vocab), logits);
}

void Forward::RunEmbd(const SeqState& s, const float* embd, int32_t n, int32_t pos0, bool bidirectional, float* logits,
                      const int32_t* rope_pos) {
  const Seq seq{s.kv, pos0, n, nullptr, nullptr, s.rope_factors, s.state, s.lora, s.rope_shift, rope_pos, s.copies,
                s.n_copies};
  bidirectional_ = bidirectional;
  RunOps(zeros_.data(), n, &seq, 1, logits, embd);
  bidirectional_ = false;
}

void Forward::RunEveryLogit(const SeqState& s, const int32_t* tokens, int32_t n, int32_t pos0, float* logits) {
  // One-row sequences on the same rows: the attention block stores and attends row by row in
  // order (row i sees rows < i), and the output head takes every sequence's last row.
  every_.resize(size_t(n));
  for (int32_t i = 0; i < n; ++i) {
    every_[size_t(i)] = Seq{s.kv, pos0 + i, 1, nullptr, nullptr, s.rope_factors, s.state, s.lora, s.rope_shift,
                            nullptr, s.copies, s.n_copies};
  }
  RunOps(tokens, n, every_.data(), n, logits);
}

void Forward::ReadLogits(float* host) { be_.ReadActivations(logits_.data(), size_t(model_.desc().n_vocab), host); }

void Forward::RunBatch(const int32_t* tokens, const Seq* seqs, int32_t n_seq) {
  const size_t n_vocab = size_t(model_.desc().n_vocab);
  int32_t n = 0;
  for (int32_t i = 0; i < n_seq; ++i) n += seqs[i].n;
  RunOps(tokens, n, seqs, n_seq, logits_.data());
  for (int32_t i = 0; i < n_seq; ++i) {
    const float* l = logits_.data() + size_t(i) * n_vocab;
    if (seqs[i].argmax != nullptr) *seqs[i].argmax = be_.Argmax(l, int32_t(n_vocab));
    if (seqs[i].logits != nullptr) std::copy(l, l + n_vocab, seqs[i].logits);
  }
}

void Forward::RunOps(const int32_t* tokens, int32_t n, const Seq* seqs, int32_t n_seq, float* logits,
                     const float* embd) {
  const ModelDesc& d = model_.desc();
  mrope_step_ = mrope_text_;
  for (int32_t i = 0, row = 0; i < n_seq; ++i) {
    for (int32_t t = 0; t < seqs[i].n; ++t) pos_[size_t(row++)] = seqs[i].pos0 + seqs[i].rope_shift + t;
    mrope_step_ = mrope_step_ || seqs[i].rope_pos != nullptr;
  }
  if (mrope_step_) {  // text rows at (p, p, p, 0), as the reference gives text tokens
    for (int32_t i = 0, row = 0; i < n_seq; ++i) {
      for (int32_t t = 0; t < seqs[i].n; ++t, ++row) {
        int32_t* m = mpos_.data() + size_t(row) * 4;
        if (seqs[i].rope_pos != nullptr) {
          std::copy(seqs[i].rope_pos + t * 4, seqs[i].rope_pos + t * 4 + 4, m);
        } else {
          m[0] = m[1] = m[2] = pos_[size_t(row)];
          m[3] = 0;
        }
      }
    }
  }
  if (embd != nullptr) {  // host activations (RunEmbd's contract): each row's first n_embd floats
    const int64_t width = d.n_embd_inp();
    for (int64_t r = 0; r < n; ++r) std::copy(embd + r * width, embd + r * width + d.n_embd, x_.data() + r * d.n_embd);
  } else {
    be_.GetRows(*model_.weights()[GlobalRole::kTokenEmbd], tokens, n, d.embed_scale, x_.data());
  }
  // BERT-style inputs: (token + type 0) + position, then a LayerNorm (the reference's order).
  const Weights& w = model_.weights();
  if (const Tensor* types = w[GlobalRole::kTokenTypes]) {
    be_.GetRows(*types, zeros_.data(), n, 1.0f, h_.data());
    be_.Add(x_.data(), h_.data(), int64_t{n} * d.n_embd);
  }
  if (d.pos_embd == PositionEmbd::kAbsolute) {
    be_.GetRows(*w[GlobalRole::kPosEmbd], pos_.data(), n, 1.0f, h_.data());
    be_.Add(x_.data(), h_.data(), int64_t{n} * d.n_embd);
  }
  if (d.input_norm) {
    Norm(NormKind::kLayer, d.input_norm_eps, w[GlobalRole::kInputNorm], w[GlobalRole::kInputNormBias], x_.data(), n,
         x_.data());
  }
  if (d.n_embd_per_layer > 0) PerLayerInputs(tokens, n);
  for (int32_t il = 0; il < d.n_layer; ++il) {
    const LayerDesc& ld = d.layers[size_t(il)];
    if (ld.attention()) {
      AttentionBlock(il, n, seqs, n_seq);
    } else if (ld.mixer == MixerKind::kMamba2) {
      Mamba2Block(il, n, seqs, n_seq);
    } else if (ld.mixer == MixerKind::kShortConv) {
      ShortConvBlock(il, n, seqs, n_seq);
    } else {
      DeltaNetBlock(il, n, seqs, n_seq);
    }
    if (ld.ffn.kind == FfnKind::kMoe) {
      MoeFfn(il, n);
    } else {
      DenseFfn(il, n, seqs, n_seq);
    }
    if (ld.per_layer_input) PerLayerBlock(il, n);
    if (const Tensor* s = ld.out_scale ? w.layers[size_t(il)][LayerRole::kLayerOutScale] : nullptr) {
      be_.Scale(x_.data(), int64_t{n} * d.n_embd, F32(s)[0]);
    }
    if (embd != nullptr && il < d.n_deepstack) DeepstackAdd(embd, il, n);
  }
  if (logits != nullptr) OutputHead(seqs, n_seq, logits);
}

void Forward::DeepstackAdd(const float* embd, int32_t il, int32_t n) {
  // The reference adds slice il + 1 of each input row to layer il's output (token rows are
  // zero-padded there: they add nothing, so only embedding rows come here).
  const ModelDesc& d = model_.desc();
  const int64_t width = d.n_embd_inp(), E = d.n_embd;
  float* x = x_.data();
  for (int64_t r = 0; r < n; ++r) {
    const float* ds = embd + r * width + int64_t{il + 1} * E;
    for (int64_t i = 0; i < E; ++i) x[r * E + i] += ds[i];
  }
}

void Forward::RunHidden(const int32_t* tokens, const Seq* seqs, int32_t n_seq, float* hidden) {
  const ModelDesc& d = model_.desc();
  int32_t n = 0;
  for (int32_t i = 0; i < n_seq; ++i) n += seqs[i].n;
  RunOps(tokens, n, seqs, n_seq, nullptr);
  const Weights& w = model_.weights();
  if (d.has_output_norm) {
    Norm(d.output_norm_kind, d.output_norm_eps, w[GlobalRole::kOutputNorm], w[GlobalRole::kOutputNormBias], x_.data(), n,
         x_.data());
  }
  be_.ReadActivations(x_.data(), size_t(n) * size_t(d.n_embd), hidden);
}

void Forward::ClassifierHead(const float* x, int32_t n, float* scores) {
  const ModelDesc& d = model_.desc();
  const Weights& w = model_.weights();
  for (int32_t r0 = 0; r0 < n; r0 += max_batch_) {
    const int32_t rows = std::min(max_batch_, n - r0);
    const float* in = x + int64_t{r0} * d.n_embd;
    if (w[GlobalRole::kCls]) {
      be_.MatMul(*w[GlobalRole::kCls], in, rows, h_.data());
      if (w[GlobalRole::kClsBias]) be_.AddBias(h_.data(), F32(w[GlobalRole::kClsBias]), rows, d.n_embd);
      for (int64_t i = 0; i < int64_t{rows} * d.n_embd; ++i) h_.data()[i] = std::tanh(h_.data()[i]);
      in = h_.data();
    }
    float* out = scores + int64_t{r0} * d.n_cls_out;
    be_.MatMul(*w[GlobalRole::kClsOut], in, rows, out);
    if (w[GlobalRole::kClsOutBias]) be_.AddBias(out, F32(w[GlobalRole::kClsOutBias]), rows, d.n_cls_out);
    if (d.cls_softmax) {
      for (int32_t r = 0; r < rows; ++r) {
        float* s = out + int64_t{r} * d.n_cls_out;
        const float mx = *std::max_element(s, s + d.n_cls_out);
        float sum = 0.0f;
        for (int32_t j = 0; j < d.n_cls_out; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int32_t j = 0; j < d.n_cls_out; ++j) s[j] /= sum;
      }
    }
  }
}

void Forward::DenseOut(float* x, int32_t n) {
  const ModelDesc& d = model_.desc();
  const Weights& w = model_.weights();
  if (d.n_dense <= 0 || w[GlobalRole::kDense2] == nullptr || w[GlobalRole::kDense3] == nullptr) return;
  std::vector<float> inner(size_t(n) * size_t(d.n_dense));
  be_.MatMul(*w[GlobalRole::kDense2], x, n, inner.data());
  be_.MatMul(*w[GlobalRole::kDense3], inner.data(), n, x);
}

void Forward::Norm(NormKind kind, float eps, const Tensor* w, const Tensor* b, const float* x, int32_t rows, float* y) {
  const int32_t E = model_.desc().n_embd;
  if (kind == NormKind::kLayer) {
    be_.LayerNorm(x, F32(w), F32(b), rows, E, eps, y);
  } else {
    be_.RmsNorm(x, F32(w), rows, E, eps, y);
  }
}

void Forward::Residual(const float* out, int32_t n) {
  const ModelDesc& d = model_.desc();
  if (d.residual_scale != 1.0f) {
    be_.AddScaled(x_.data(), out, int64_t{n} * d.n_embd, d.residual_scale);
  } else {
    be_.Add(x_.data(), out, int64_t{n} * d.n_embd);
  }
}

void Forward::AttentionBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const AttentionDesc& a = ld.attn;
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t E = model_.desc().n_embd;
  const int32_t q_w = a.n_head * a.head_dim_k, k_w = a.n_head_kv * a.head_dim_k, v_w = a.n_head_kv * a.head_dim_v;

  const float* in = x_.data();
  if (ld.norm.pre_attn) {
    Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kAttnNorm], L[LayerRole::kAttnNormBias], x_.data(), n, h_.data());
    in = h_.data();
  }
  // A layer sharing another's KV (kv_from >= 0) projects only Q and attends over that layer's
  // cache rows; without attn_v (v_optional) the values are the key projection.
  const bool own_kv = a.kv_from < 0;
  const bool v_is_k = own_kv && L[LayerRole::kAttnV] == nullptr;
  {
    const Tensor* w3[3] = {L[LayerRole::kAttnQ], L[LayerRole::kAttnK], L[LayerRole::kAttnV]};
    float* y3[3] = {a.q_gate ? q_full_.data() : q_.data(), k_.data(), v_.data()};
    be_.MatMulShared(w3, y3, !own_kv ? 1 : v_is_k ? 2 : 3, in, n);
    Lora(il, LoraTarget::kQ, in, E, y3[0], a.q_gate ? 2 * q_w : q_w, seqs, n_seq);
    if (own_kv) Lora(il, LoraTarget::kK, in, E, k_.data(), k_w, seqs, n_seq);
    if (own_kv && !v_is_k) Lora(il, LoraTarget::kV, in, E, v_.data(), v_w, seqs, n_seq);
  }
  if (a.q_gate) {  // per head [q | gate]: the queries to q_, the gates to q_gate_
    const int32_t hd = a.head_dim_k;
    be_.CopyRows(q_full_.data(), 2 * hd, n * a.n_head, hd, q_.data(), hd);
    be_.CopyRows(q_full_.data() + hd, 2 * hd, n * a.n_head, hd, q_gate_.data(), hd);
  }
  if (v_is_k) be_.CopyRows(k_.data(), k_w, n, k_w, v_.data(), v_w);
  if (L[LayerRole::kAttnQBias]) be_.AddBias(q_.data(), F32(L[LayerRole::kAttnQBias]), n, q_w);
  if (own_kv && L[LayerRole::kAttnKBias]) be_.AddBias(k_.data(), F32(L[LayerRole::kAttnKBias]), n, k_w);
  if (own_kv && L[LayerRole::kAttnVBias]) be_.AddBias(v_.data(), F32(L[LayerRole::kAttnVBias]), n, v_w);
  if (a.qk_norm == QkNorm::kPerHead) {
    be_.RmsNorm(q_.data(), F32(L[LayerRole::kAttnQNorm]), n * a.n_head, a.head_dim_k, ld.norm.eps, q_.data());
    if (own_kv) be_.RmsNorm(k_.data(), F32(L[LayerRole::kAttnKNorm]), n * a.n_head_kv, a.head_dim_k, ld.norm.eps, k_.data());
  } else if (a.qk_norm == QkNorm::kFullWidth) {
    be_.RmsNorm(q_.data(), F32(L[LayerRole::kAttnQNorm]), n, q_w, ld.norm.eps, q_.data());
    if (own_kv) be_.RmsNorm(k_.data(), F32(L[LayerRole::kAttnKNorm]), n, k_w, ld.norm.eps, k_.data());
  }
  if (own_kv && a.v_norm) be_.RmsNorm(v_.data(), nullptr, n * a.n_head_kv, a.head_dim_v, ld.norm.eps, v_.data());
  if (a.rope.enabled) {
    engine::RopeParams rp;
    rp.n_rot = a.rope.n_rot;
    rp.style = a.rope.style;
    rp.base = a.rope.base;
    rp.freq_scale = a.rope.freq_scale;
    rp.attn_factor = a.rope.attn_factor;
    rp.ext_factor = a.rope.ext_factor;
    rp.n_ctx_orig = model_.desc().n_ctx_orig;
    rp.beta_fast = a.rope.beta_fast;
    rp.beta_slow = a.rope.beta_slow;
    if (mrope_step_) {
      rp.sections = model_.desc().mrope_sections;
      rp.interleaved = model_.desc().mrope_interleaved;
    }
    const int32_t* pos = mrope_step_ ? mpos_.data() : pos_.data();
    const int32_t per_row = mrope_step_ ? 4 : 1;
    // Over runs of sequences with the same factors (sessions of other contexts may differ).
    for (int32_t i = 0, row = 0; i < n_seq;) {
      int32_t j = i + 1, rows = seqs[i].n;
      while (j < n_seq && seqs[j].rope_factors == seqs[i].rope_factors) rows += seqs[j++].n;
      rp.freq_factors = a.rope.use_freq_factors ? seqs[i].rope_factors : nullptr;
      be_.Rope(q_.data() + int64_t{row} * q_w, rows, a.n_head, a.head_dim_k, pos + row * per_row, rp);
      if (own_kv) be_.Rope(k_.data() + int64_t{row} * k_w, rows, a.n_head_kv, a.head_dim_k, pos + row * per_row, rp);
      row += rows;
      i = j;
    }
  }
  engine::AttentionParams ap;
  ap.n_head = a.n_head;
  ap.n_head_kv = a.n_head_kv;
  ap.head_dim_k = a.head_dim_k;
  ap.head_dim_v = a.head_dim_v;
  ap.scale = a.scale > 0.0f ? a.scale : 1.0f / std::sqrt(float(a.head_dim_k));
  ap.softcap = a.softcap;
  ap.window = a.window;
  ap.causal = a.causal;
  ap.bidirectional_step = bidirectional_ && a.causal;
  ap.sinks = a.sinks ? F32(L[LayerRole::kAttnSinks]) : nullptr;
  // Each sequence's rows go to its own cache and attend over it. A batched decode step (one
  // row per sequence; several sessions' caches, a verification's rows sharing one) stores every
  // row, then runs every row's attention on this backend's threads at once (causal: a row reads
  // only the positions up to its own).
  const int32_t o_w = a.n_head * a.head_dim_v;
  // The cache holds rows of the widest layer's width: a narrower layer's rows are padded.
  const int32_t slot = model_.desc().KvSlot(il);
  const float* k_rows = k_.data();
  const float* v_rows = v_.data();
  int32_t k_stride = k_w, v_stride = v_w;
  if (own_kv && (k_w != model_.desc().MaxKWidth() || v_w != model_.desc().MaxVWidth())) {
    k_stride = model_.desc().MaxKWidth();
    v_stride = model_.desc().MaxVWidth();
    be_.CopyRows(k_.data(), k_w, n, k_w, k_pad_.data(), k_stride);
    be_.CopyRows(v_.data(), v_w, n, v_w, v_pad_.data(), v_stride);
    k_rows = k_pad_.data();
    v_rows = v_pad_.data();
  }
  bool several_caches = false;
  for (int32_t i = 1; i < n_seq && !several_caches; ++i) several_caches = seqs[i].kv != seqs[0].kv;
  if (n == n_seq && several_caches) {
    attn_rows_.resize(size_t(n_seq));
    for (int32_t i = 0; i < n_seq; ++i) {
      if (own_kv) be_.StoreKv(*seqs[i].kv, slot, k_rows + int64_t{i} * k_stride, v_rows + int64_t{i} * v_stride, 1, seqs[i].pos0);
      attn_rows_[size_t(i)] = {seqs[i].kv, q_.data() + int64_t{i} * q_w, seqs[i].pos0, attn_.data() + int64_t{i} * o_w};
    }
    be_.AttentionRows(slot, attn_rows_.data(), n_seq, ap);
  } else {
    auto attend = [&](engine::Backend& be, const Seq& s, int32_t row) {
      if (own_kv) be.StoreKv(*s.kv, slot, k_rows + int64_t{row} * k_stride, v_rows + int64_t{row} * v_stride, s.n, s.pos0);
      be.Attention(*s.kv, slot, q_.data() + int64_t{row} * q_w, s.n, s.pos0, ap, attn_.data() + int64_t{row} * o_w);
    };
    // In parallel only when no two sequences share a cache (their threads would write it at once).
    bool own_caches = seq_pool_ != nullptr && workers_ != nullptr && seq_pool_->size() > 1 && n_seq > 1;
    for (int32_t i = 1; i < n_seq && own_caches; ++i) {
      for (int32_t j = 0; j < i && own_caches; ++j) own_caches = seqs[i].kv != seqs[j].kv;
    }
    if (own_caches) {
      // Longest first, each taken by the next free thread, so that the threads finish together.
      seq_row_.resize(size_t(n_seq));
      seq_order_.resize(size_t(n_seq));
      for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) {
        seq_row_[size_t(i)] = row;
        seq_order_[size_t(i)] = i;
      }
      std::stable_sort(seq_order_.begin(), seq_order_.end(), [&](int32_t a, int32_t b) { return seqs[a].n > seqs[b].n; });
      using Attend = decltype(attend);
      struct Ctx {
        const Attend* attend;
        engine::Backend* const* workers;
        const Seq* seqs;
        const int32_t* order;
        const int32_t* row;
        int32_t n;
        std::atomic<int32_t> next;
      } c{&attend, workers_, seqs, seq_order_.data(), seq_row_.data(), n_seq, {0}};
      seq_pool_->Run(
          [](void* p, int32_t ith, int32_t) {
            Ctx& c = *static_cast<Ctx*>(p);
            for (int32_t k = c.next.fetch_add(1, std::memory_order_relaxed); k < c.n;
                 k = c.next.fetch_add(1, std::memory_order_relaxed)) {
              (*c.attend)(*c.workers[ith], c.seqs[c.order[k]], c.row[c.order[k]]);
            }
          },
          &c);
    } else {
      for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) attend(be_, seqs[i], row);
    }
  }
  if (a.q_gate) be_.SigmoidGate(attn_.data(), q_gate_.data(), int64_t{n} * o_w);
  be_.MatMul(*L[LayerRole::kAttnOut], attn_.data(), n, h_.data());
  Lora(il, LoraTarget::kOut, attn_.data(), o_w, h_.data(), E, seqs, n_seq);
  if (L[LayerRole::kAttnOutBias]) be_.AddBias(h_.data(), F32(L[LayerRole::kAttnOutBias]), n, E);
  if (ld.norm.post_attn) be_.RmsNorm(h_.data(), F32(L[LayerRole::kPostAttnNorm]), n, E, ld.norm.eps, h_.data());
  Residual(h_.data(), n);
  if (ld.norm.after_residual_attn) {
    Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kAttnOutNorm], L[LayerRole::kAttnOutNormBias], x_.data(), n, x_.data());
  }
}

engine::StateSnapshots Forward::Snapshots(const Seq& s, int32_t il) {
  snaps_.clear();
  for (int32_t k = 0; k < s.n_copies; ++k) {
    const int32_t rows = s.copies[k].pos - s.pos0;
    if (rows > 0 && rows <= s.n) snaps_.push_back({rows, s.copies[k].state + s.state->offset(il)});
  }
  return {snaps_.data(), int32_t(snaps_.size())};
}

void Forward::ShortConvBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t E = model_.desc().n_embd;
  Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kAttnNorm], L[LayerRole::kAttnNormBias], x_.data(), n, h_.data());
  be_.MatMul(*L[LayerRole::kShortConvInProj], h_.data(), n, conv_.data());
  for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) {
    be_.ShortConv(conv_.data() + int64_t{row} * 3 * E, seqs[i].n, E, F32(L[LayerRole::kShortConvConv]), ld.conv.l_cache,
                  seqs[i].state->layer(il), Snapshots(seqs[i], il), attn_.data() + int64_t{row} * E);
  }
  be_.MatMul(*L[LayerRole::kShortConvOutProj], attn_.data(), n, h_.data());
  Residual(h_.data(), n);
}

void Forward::Mamba2Block(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const Mamba2Desc& m = ld.ssm;
  engine::Mamba2Params p;
  p.d_conv = m.d_conv;
  p.d_inner = m.d_inner;
  p.d_state = m.d_state;
  p.n_head = m.n_head;
  p.n_group = m.n_group;
  p.eps = ld.norm.eps;
  p.conv_w = F32(L[LayerRole::kSsmConv1d]);
  p.conv_b = F32(L[LayerRole::kSsmConv1dBias]);
  p.dt_bias = F32(L[LayerRole::kSsmDtBias]);
  p.a = F32(L[LayerRole::kSsmA]);
  p.d = F32(L[LayerRole::kSsmD]);
  p.norm_w = F32(L[LayerRole::kSsmNorm]);
  Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kAttnNorm], L[LayerRole::kAttnNormBias], x_.data(), n, h_.data());
  be_.MatMul(*L[LayerRole::kSsmIn], h_.data(), n, ssm_.data());
  for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) {
    be_.Mamba2(ssm_.data() + int64_t{row} * m.InProj(), seqs[i].n, p, seqs[i].state->layer(il), Snapshots(seqs[i], il),
               attn_.data() + int64_t{row} * m.d_inner);
  }
  be_.MatMul(*L[LayerRole::kSsmOut], attn_.data(), n, h_.data());
  Residual(h_.data(), n);
}

// The projections of the step's rows together, then each sequence's rows through the recurrence
// with its own state, the per-head norm gated by silu(z), the output projection.
void Forward::DeltaNetBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const DeltaNetDesc& dn = ld.delta;
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t C = dn.channels(), Hv = dn.n_v_heads, VD = dn.value_dim();
  Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kAttnNorm], L[LayerRole::kAttnNormBias], x_.data(), n, h_.data());
  float* alpha = delta_ab_.data();
  float* beta = delta_ab_.data() + int64_t{n} * Hv;
  {
    const Tensor* w4[4] = {L[LayerRole::kDeltaQkv], L[LayerRole::kDeltaGate], L[LayerRole::kSsmAlpha],
                           L[LayerRole::kSsmBeta]};
    float* y4[4] = {delta_qkv_.data(), delta_z_.data(), alpha, beta};
    be_.MatMulShared(w4, y4, 4, h_.data(), n);
  }
  engine::DeltaNetParams p;
  p.d_conv = dn.d_conv;
  p.n_k_heads = dn.n_k_heads;
  p.n_v_heads = dn.n_v_heads;
  p.head_k_dim = dn.head_k_dim;
  p.head_v_dim = dn.head_v_dim;
  p.eps = ld.norm.eps;
  p.conv = F32(L[LayerRole::kSsmConv1d]);
  p.dt_bias = F32(L[LayerRole::kSsmDtBias]);
  p.a = F32(L[LayerRole::kSsmA]);
  for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) {
    be_.GatedDeltaNet(delta_qkv_.data() + int64_t{row} * C, alpha + int64_t{row} * Hv, beta + int64_t{row} * Hv,
                      seqs[i].n, p, seqs[i].state->layer(il), Snapshots(seqs[i], il), attn_.data() + int64_t{row} * VD);
  }
  be_.RmsNorm(attn_.data(), F32(L[LayerRole::kSsmNorm]), n * Hv, dn.head_v_dim, ld.norm.eps, attn_.data());
  be_.GatedActivation(Activation::kSilu, delta_z_.data(), attn_.data(), int64_t{n} * VD);
  be_.MatMul(*L[LayerRole::kSsmOut], delta_z_.data(), n, h_.data());
  Residual(h_.data(), n);
}

bool Forward::HasLora(int32_t il, LoraTarget t, const Seq* seqs, int32_t n_seq) {
  for (int32_t i = 0; i < n_seq; ++i) {
    if (seqs[i].lora != nullptr && seqs[i].lora->Terms(il, t) != nullptr) return true;
  }
  return false;
}

void Forward::Lora(int32_t il, LoraTarget t, const float* x, int32_t n_in, float* y, int32_t n_out, const Seq* seqs,
                   int32_t n_seq) {
  // Rows grouped by adapter set, so each adapter's matrices are read once per step (8 streams
  // on 4 adapters read 4 adapters' worth, not 8); the plan key identifies the adapters and scales.
  lora_keyed_.clear();
  for (int32_t i = 0, row = 0; i < n_seq; row += seqs[i].n, ++i) {
    if (seqs[i].lora == nullptr) continue;
    if (const std::vector<LoraPlan::Term>* terms = seqs[i].lora->Terms(il, t)) {
      if (lora_terms_.size() < size_t(row + seqs[i].n)) lora_terms_.resize(size_t(row + seqs[i].n));
      for (int32_t r = 0; r < seqs[i].n; ++r) {
        lora_keyed_.emplace_back(seqs[i].lora->key(), row + r);
        lora_terms_[size_t(row + r)] = terms;
      }
    }
  }
  if (lora_keyed_.empty()) return;
  std::sort(lora_keyed_.begin(), lora_keyed_.end());
  // A group: equal keys and equal terms (the key is a hash; rows whose terms differ from their
  // group's first row start a new group, so a collision costs reuse, never correctness).
  const auto same_group = [&](size_t k, size_t first) {
    const std::vector<LoraPlan::Term>& a = *lora_terms_[size_t(lora_keyed_[k].second)];
    const std::vector<LoraPlan::Term>& b = *lora_terms_[size_t(lora_keyed_[first].second)];
    if (lora_keyed_[k].first != lora_keyed_[first].first || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].w != b[i].w || a[i].scale != b[i].scale) return false;
    }
    return true;
  };
  lora_rows_.clear();
  lora_group_start_.clear();
  for (size_t k = 0; k < lora_keyed_.size(); ++k) {
    if (k == 0 || !same_group(k, size_t(lora_group_start_.back()))) lora_group_start_.push_back(int32_t(k));
    lora_rows_.push_back(lora_keyed_[k].second);
  }
  const int32_t n_groups = int32_t(lora_group_start_.size());
  lora_group_start_.push_back(int32_t(lora_keyed_.size()));
  // Tasks: each group whole when there are enough groups for the threads, else each group cut
  // into about threads / groups pieces (a piece still reads its adapter once for its rows).
  const int32_t nth = lora_pool_ != nullptr ? lora_pool_->size() : 1;
  const int32_t pieces = std::max(1, (nth + n_groups - 1) / n_groups);
  lora_tasks_.clear();
  for (int32_t g = 0; g < n_groups; ++g) {
    const int32_t b = lora_group_start_[size_t(g)], n = lora_group_start_[size_t(g) + 1] - b;
    const int32_t per = (n + pieces - 1) / pieces;
    for (int32_t at = 0; at < n; at += per) {
      lora_tasks_.push_back(LoraTask{lora_terms_[size_t(lora_rows_[size_t(b)])], b + at, std::min(per, n - at)});
    }
  }
  const auto run = [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const LoraTask& task = lora_tasks_[size_t(k)];
      ApplyLoraRows(*task.terms, x, n_in, y, n_out, lora_rows_.data() + task.first, task.n);
    }
  };
  if (nth > 1 && lora_tasks_.size() > 1) {
    lora_pool_->ParallelFor(int64_t(lora_tasks_.size()), [&run](int64_t b, int64_t e) { run(b, e); });
  } else {
    run(0, int64_t(lora_tasks_.size()));
  }
}

void Forward::DenseFfn(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t E = model_.desc().n_embd;
  const float* in = x_.data();
  if (ld.norm.pre_ffn) {
    Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kFfnNorm], L[LayerRole::kFfnNormBias], x_.data(), n, h_.data());
    in = h_.data();
  }
  const int32_t F = ld.ffn.n_ff;
  if (ld.ffn.kind == FfnKind::kGated) {
    if (HasLora(il, LoraTarget::kGate, seqs, n_seq) || HasLora(il, LoraTarget::kUp, seqs, n_seq)) {
      // The adapted products before the activation (the fused form applies it as rows appear).
      const Tensor* w2[2] = {L[LayerRole::kFfnGate], L[LayerRole::kFfnUp]};
      float* y2[2] = {gate_.data(), up_.data()};
      be_.MatMulShared(w2, y2, 2, in, n);
      Lora(il, LoraTarget::kGate, in, E, gate_.data(), F, seqs, n_seq);
      Lora(il, LoraTarget::kUp, in, E, up_.data(), F, seqs, n_seq);
      be_.GatedActivation(ld.ffn.act, gate_.data(), up_.data(), int64_t{n} * F);
    } else {
      be_.MatMulGated(ld.ffn.act, *L[LayerRole::kFfnGate], *L[LayerRole::kFfnUp], in, n, gate_.data(), up_.data());
    }
  } else {
    be_.MatMul(*L[LayerRole::kFfnUp], in, n, gate_.data());
    Lora(il, LoraTarget::kUp, in, E, gate_.data(), F, seqs, n_seq);
    if (L[LayerRole::kFfnUpBias]) be_.AddBias(gate_.data(), F32(L[LayerRole::kFfnUpBias]), n, ld.ffn.n_ff);
    be_.Activate(ld.ffn.act, gate_.data(), int64_t{n} * ld.ffn.n_ff);
  }
  be_.MatMul(*L[LayerRole::kFfnDown], gate_.data(), n, h_.data());
  Lora(il, LoraTarget::kDown, gate_.data(), F, h_.data(), E, seqs, n_seq);
  if (L[LayerRole::kFfnDownBias]) be_.AddBias(h_.data(), F32(L[LayerRole::kFfnDownBias]), n, E);
  if (ld.norm.post_ffn) be_.RmsNorm(h_.data(), F32(L[LayerRole::kPostFfnNorm]), n, E, ld.norm.eps, h_.data());
  Residual(h_.data(), n);
  if (ld.norm.after_residual_ffn) {
    Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kLayerOutNorm], L[LayerRole::kLayerOutNormBias], x_.data(), n, x_.data());
  }
}

// The reference's project_per_layer_inputs: per_layer_model_proj of the scaled input embeddings
// (x_) times 1/sqrt(n_embd), RMS-normed per layer slice, plus the per-layer token rows times
// sqrt(n_pl), the sum times 1/sqrt(2); then each layer's slice gathered into its own block.
void Forward::PerLayerInputs(const int32_t* tokens, int32_t n) {
  const ModelDesc& d = model_.desc();
  const Weights& w = model_.weights();
  const int32_t P = d.n_embd_per_layer, width = P * d.n_layer;
  const int64_t all = int64_t{n} * width;
  be_.MatMul(*w[GlobalRole::kPerLayerModelProj], x_.data(), n, pl_all_.data());
  be_.Scale(pl_all_.data(), all, 1.0f / std::sqrt(float(d.n_embd)));
  be_.RmsNorm(pl_all_.data(), F32(w[GlobalRole::kPerLayerProjNorm]), n * d.n_layer, P, d.layers[0].norm.eps,
              pl_all_.data());
  be_.GetRows(*w[GlobalRole::kPerLayerTokenEmbd], tokens, n, std::sqrt(float(P)), pl_.data());
  be_.Add(pl_all_.data(), pl_.data(), all);
  be_.Scale(pl_all_.data(), all, 1.0f / std::sqrt(2.0f));
  for (int32_t il = 0; il < d.n_layer; ++il) {
    be_.CopyRows(pl_all_.data() + int64_t{il} * P, width, n, P, pl_.data() + int64_t{il} * n * P, P);
  }
}

// x += post_norm(proj(gelu(inp_gate x) * per_layer_input)).
void Forward::PerLayerBlock(int32_t il, int32_t n) {
  const ModelDesc& d = model_.desc();
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t P = d.n_embd_per_layer;
  be_.MatMul(*L[LayerRole::kPerLayerInpGate], x_.data(), n, pl_gate_.data());
  be_.GatedActivation(Activation::kGeluTanh, pl_gate_.data(), pl_.data() + int64_t{il} * n * P, int64_t{n} * P);
  be_.MatMul(*L[LayerRole::kPerLayerProj], pl_gate_.data(), n, h_.data());
  be_.RmsNorm(h_.data(), F32(L[LayerRole::kPerLayerPostNorm]), n, d.n_embd, d.layers[size_t(il)].norm.eps, h_.data());
  be_.Add(x_.data(), h_.data(), int64_t{n} * d.n_embd);
}

// Routing runs on the host (the engine said Supports(kMoe)): per token the top-k experts by
// router score, then per selected expert one gated FFN over the rows routed to it, so decode
// reads only the selected experts' weights and prefill multiplies each expert's rows together.
void Forward::MoeFfn(int32_t il, int32_t n) {
  const LayerDesc& ld = model_.desc().layers[size_t(il)];
  const FfnDesc& f = ld.ffn;
  const LayerTensors& L = model_.weights().layers[size_t(il)];
  const int32_t E = model_.desc().n_embd, K = f.n_expert_used;
  const float* in = x_.data();
  if (ld.norm.pre_ffn) {
    Norm(ld.norm.kind, ld.norm.eps, L[LayerRole::kFfnNorm], L[LayerRole::kFfnNormBias], x_.data(), n, h_.data());
    in = h_.data();
  }
  const bool dense_beside = f.n_ff_dense > 0;
  if (dense_beside) {  // Gemma 4: the dense MLP of the ffn_norm'ed input, into h_
    be_.MatMulGated(f.act, *L[LayerRole::kFfnGate], *L[LayerRole::kFfnUp], in, n, gate_.data(), up_.data());
    be_.MatMul(*L[LayerRole::kFfnDown], gate_.data(), n, h_.data());
    be_.RmsNorm(h_.data(), F32(L[LayerRole::kFfnPostNorm1]), n, E, ld.norm.eps, h_.data());
  }
  if (f.router_scaled_norm) {  // rms_norm(x) * scale / sqrt(n_embd)
    be_.RmsNorm(x_.data(), F32(L[LayerRole::kFfnGateInpScale]), n, E, ld.norm.eps, moe_x_.data());
    be_.Scale(moe_x_.data(), int64_t{n} * E, 1.0f / std::sqrt(float(E)));
    be_.MatMul(*L[LayerRole::kFfnGateInp], moe_x_.data(), n, router_.data());
  } else {
    be_.MatMul(*L[LayerRole::kFfnGateInp], in, n, router_.data());
  }
  if (L[LayerRole::kFfnGateInpBias]) be_.AddBias(router_.data(), F32(L[LayerRole::kFfnGateInpBias]), n, f.n_expert);
  if (dense_beside) {  // the experts read their own norm of x
    be_.RmsNorm(x_.data(), F32(L[LayerRole::kFfnPreNorm2]), n, E, ld.norm.eps, moe_x_.data());
    in = moe_x_.data();
  }
  const float* down_scale = F32(L[LayerRole::kFfnDownExpsScale]);  // per expert, optional
  sel_.resize(size_t(n) * size_t(K));
  sel_w_.resize(size_t(n) * size_t(K));
  for (auto& rows : expert_rows_) rows.clear();
  for (int32_t t = 0; t < n; ++t) {
    const float* r = router_.data() + int64_t{t} * f.n_expert;
    if (f.gating == Gating::kSoftmax) {
      const float mx = *std::max_element(r, r + f.n_expert);
      double sum = 0.0;
      for (int32_t e = 0; e < f.n_expert; ++e) sum += (probs_[size_t(e)] = std::exp(r[e] - mx));
      for (int32_t e = 0; e < f.n_expert; ++e) probs_[size_t(e)] = float(probs_[size_t(e)] / sum);
    } else if (f.gating == Gating::kSigmoid) {
      for (int32_t e = 0; e < f.n_expert; ++e) probs_[size_t(e)] = 1.0f / (1.0f + std::exp(-r[e]));
    } else {  // kSoftmaxWeight: selected by the raw logits, softmaxed below
      std::copy(r, r + f.n_expert, probs_.begin());
    }
    int32_t* s = sel_.data() + size_t(t) * size_t(K);
    float* sw = sel_w_.data() + size_t(t) * size_t(K);
    // Top-k by score (plus the selection bias), the lower index first among equal scores.
    const float* bias = F32(L[LayerRole::kFfnExpProbsBias]);
    const auto score = [&](int32_t e) { return bias != nullptr ? probs_[size_t(e)] + bias[e] : probs_[size_t(e)]; };
    for (int32_t j = 0; j < K; ++j) {
      int32_t best = -1;
      for (int32_t e = 0; e < f.n_expert; ++e) {
        if (std::find(s, s + j, e) != s + j) continue;
        if (best < 0 || score(e) > score(best)) best = e;
      }
      s[j] = best;
      sw[j] = probs_[size_t(best)];
    }
    if (f.gating == Gating::kSoftmaxWeight) {  // sw[0] is the largest selected logit
      const float mx = sw[0];
      double sum = 0.0;
      for (int32_t j = 0; j < K; ++j) sum += (sw[j] = std::exp(sw[j] - mx));
      for (int32_t j = 0; j < K; ++j) sw[j] = float(sw[j] / sum);
    }
    float norm = 1.0f;
    if (f.norm_topk) {
      double sum = 0.0;
      for (int32_t j = 0; j < K; ++j) sum += sw[j];
      norm = float(1.0 / std::max(sum, 6.103515625e-5));  // the reference clamps the sum (F16's smallest normal)
    }
    for (int32_t j = 0; j < K; ++j) {
      sw[j] *= norm * f.expert_weight_scale * (down_scale != nullptr ? down_scale[s[j]] : 1.0f);
      expert_rows_[size_t(s[j])].push_back(t * K + j);  // (token, slot) of this expert
    }
  }
  float* acc = moe_acc_.data();
  std::fill(acc, acc + int64_t{n} * E, 0.0f);
  for (int32_t e = 0; e < f.n_expert; ++e) {
    const std::vector<int32_t>& rows = expert_rows_[size_t(e)];
    if (rows.empty()) continue;
    const int32_t m = int32_t(rows.size());
    const float* xe = in;
    if (!(m == n && n == 1)) {  // gather the routed tokens' rows
      for (int32_t i = 0; i < m; ++i) {
        const float* src = in + int64_t{rows[size_t(i)] / K} * E;
        std::copy(src, src + E, moe_in_.data() + int64_t{i} * E);
      }
      xe = moe_in_.data();
    }
    if (f.expert_bias) {  // each product's bias row of this expert before the activation
      const Tensor* w2[2] = {L.expert_gate[size_t(e)], L.expert_up[size_t(e)]};
      float* y2[2] = {gate_.data(), up_.data()};
      be_.MatMulShared(w2, y2, 2, xe, m);
      be_.AddBias(gate_.data(), F32(L[LayerRole::kFfnGateExpsBias]) + int64_t{e} * f.n_ff, m, f.n_ff);
      be_.AddBias(up_.data(), F32(L[LayerRole::kFfnUpExpsBias]) + int64_t{e} * f.n_ff, m, f.n_ff);
      be_.GatedActivation(f.act, gate_.data(), up_.data(), int64_t{m} * f.n_ff);
    } else {
      be_.MatMulGated(f.act, *L.expert_gate[size_t(e)], *L.expert_up[size_t(e)], xe, m, gate_.data(), up_.data());
    }
    be_.MatMul(*L.expert_down[size_t(e)], gate_.data(), m, moe_out_.data());
    if (f.expert_bias) be_.AddBias(moe_out_.data(), F32(L[LayerRole::kFfnDownExpsBias]) + int64_t{e} * E, m, E);
    for (int32_t i = 0; i < m; ++i) {
      const int32_t slot = rows[size_t(i)];
      be_.AddScaled(acc + int64_t{slot / K} * E, moe_out_.data() + int64_t{i} * E, E, sel_w_[size_t(slot)]);
    }
  }
  // Shared experts (Granite 4.0, Qwen3.5): a gated FFN over every row, times its sigmoid gate
  // when it has one (Qwen3.5).
  if (f.n_ff_shared > 0) {
    be_.MatMulGated(f.act, *L[LayerRole::kFfnGateShexp], *L[LayerRole::kFfnUpShexp], in, n, gate_.data(), up_.data());
    be_.MatMul(*L[LayerRole::kFfnDownShexp], gate_.data(), n, moe_out_.data());
    const float* gw = f.shared_gate ? F32(L[LayerRole::kFfnGateInpShexp]) : nullptr;
    for (int32_t t = 0; t < n; ++t) {
      float s = 1.0f;
      if (gw != nullptr) {  // host memory (kMoe): one dot product per row
        const float* xt = in + int64_t{t} * E;
        float dot = 0.0f;
        for (int32_t i = 0; i < E; ++i) dot += gw[i] * xt[i];
        s = 1.0f / (1.0f + std::exp(-dot));
      }
      be_.AddScaled(acc + int64_t{t} * E, moe_out_.data() + int64_t{t} * E, E, s);
    }
  }
  if (dense_beside) {
    be_.RmsNorm(acc, F32(L[LayerRole::kFfnPostNorm2]), n, E, ld.norm.eps, acc);
    be_.Add(acc, h_.data(), int64_t{n} * E);
  }
  if (ld.norm.post_ffn) be_.RmsNorm(acc, F32(L[LayerRole::kPostFfnNorm]), n, E, ld.norm.eps, acc);
  Residual(acc, n);
}

void Forward::OutputHead(const Seq* seqs, int32_t n_seq, float* logits) {
  const ModelDesc& d = model_.desc();
  const Weights& w = model_.weights();
  // Only each sequence's last position's logits are needed (generation and zf_session_eval).
  for (int32_t i = 0, row = 0; i < n_seq; ++i) {
    row += seqs[i].n;
    const float* last = x_.data() + int64_t{row - 1} * d.n_embd;
    Norm(d.output_norm_kind, d.output_norm_eps, w[GlobalRole::kOutputNorm], w[GlobalRole::kOutputNormBias], last, 1,
         h_.data() + int64_t{i} * d.n_embd);
  }
  const int64_t n_out = int64_t{n_seq} * d.n_vocab;
  be_.MatMul(*w[GlobalRole::kOutput], h_.data(), n_seq, logits);
  if (w[GlobalRole::kOutputBias]) be_.AddBias(logits, F32(w[GlobalRole::kOutputBias]), n_seq, d.n_vocab);
  if (d.logit_scale != 1.0f) be_.Scale(logits, n_out, d.logit_scale);
  if (d.final_logit_softcap > 0.0f) be_.Softcap(logits, n_out, d.final_logit_softcap);
}

}  // namespace zf::model

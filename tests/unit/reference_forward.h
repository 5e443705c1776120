// A plain-loop F32 forward pass driven by a model description (model/description.h): the
// independent check of the engine's blocks and kernels for every family. It reads the bound F32
// tensors of a loaded model and computes the logits of every position with doubles-free,
// unvectorized loops written from the math (doc/families.md), not from the engine's code.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "model/model.h"

namespace zf::model::testref {

using Vec = std::vector<float>;

inline const float* F32(const Tensor* t) { return t == nullptr ? nullptr : reinterpret_cast<const float*>(t->data); }

// y = W x for a [in, out] matrix (rows of `in` floats).
inline Vec MatVec(const Tensor* w, const Vec& x) {
  const int64_t in = w->ne[0], out = w->ne[1];
  const float* W = F32(w);
  Vec y(size_t(out), 0.0f);
  for (int64_t r = 0; r < out; ++r) {
    float s = 0.0f;
    for (int64_t i = 0; i < in; ++i) s += W[r * in + i] * x[size_t(i)];
    y[size_t(r)] = s;
  }
  return y;
}

inline void AddVec(Vec* x, const float* b) {
  if (b == nullptr) return;
  for (size_t i = 0; i < x->size(); ++i) (*x)[i] += b[i];
}

// RMS or layer norm of x[off, off + n) with weight w (and bias b).
inline void NormInPlace(NormKind kind, float eps, const float* w, const float* b, float* x, int64_t n) {
  if (kind == NormKind::kLayer) {
    float mean = 0.0f;
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= float(n);
    float var = 0.0f;
    for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
    const float inv = 1.0f / std::sqrt(var / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - mean) * inv * w[i] + (b ? b[i] : 0.0f);
    return;
  }
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss / float(n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * (w != nullptr ? w[i] : 1.0f);
}

// Gemma 4's per-layer inputs of one token: [n_layer][n_embd_per_layer], from its id and its
// scaled input embedding x: (rms_norm(proj(x) / sqrt(n_embd)) + row * sqrt(P)) / sqrt(2).
inline std::vector<Vec> PerLayerInputs(const Model& m, int32_t token, const Vec& x) {
  const ModelDesc& d = m.desc();
  const Weights& w = m.weights();
  const int64_t P = d.n_embd_per_layer;
  const Vec proj = MatVec(w[GlobalRole::kPerLayerModelProj], x);
  const float* row = F32(w[GlobalRole::kPerLayerTokenEmbd]) + int64_t{token} * P * d.n_layer;
  std::vector<Vec> out(size_t(d.n_layer));
  for (int32_t il = 0; il < d.n_layer; ++il) {
    Vec v(proj.begin() + il * P, proj.begin() + (il + 1) * P);
    for (float& e : v) e /= std::sqrt(float(d.n_embd));
    NormInPlace(NormKind::kRms, d.layers[0].norm.eps, F32(w[GlobalRole::kPerLayerProjNorm]), nullptr, v.data(), P);
    for (int64_t i = 0; i < P; ++i) v[size_t(i)] = (v[size_t(i)] + row[il * P + i] * std::sqrt(float(P))) / std::sqrt(2.0f);
    out[size_t(il)] = std::move(v);
  }
  return out;
}

inline float Act(Activation a, float x) {
  if (a == Activation::kSilu) return x / (1.0f + std::exp(-x));
  if (a == Activation::kSwigluOai) return x / (1.0f + std::exp(-1.702f * x));  // its gate half (see Gated)
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// act(gate) * up; gpt-oss's clamped SwiGLU (alpha 1.702, limit 7, from llama.cpp's swiglu_oai):
// gate clamped above at 7, up to [-7, 7], and up + 1 as the multiplier.
inline float Gated(Activation a, float gate, float up) {
  if (a == Activation::kSwigluOai) {
    const float g = std::min(gate, 7.0f), u = std::min(std::max(up, -7.0f), 7.0f);
    return Act(a, g) * (u + 1.0f);
  }
  return Act(a, gate) * up;
}

// Rotates each head of x (n_heads x hd) at position p. YaRN (ext_factor != 0): pair i blends
// the scaled and unscaled angle by a ramp that falls from 1 to 0 between the dims where
// n_ctx_orig positions make beta_fast and beta_slow turns, magnitude x (1 + 0.1 ln factor).
inline void Rope(const RopeDesc& r, const float* factors, int32_t p, float* x, int32_t n_heads, int32_t hd,
                 int32_t n_ctx_orig) {
  const int32_t half = r.n_rot / 2;
  const auto turns_dim = [&](double turns) {
    return r.n_rot * std::log(n_ctx_orig / (2.0 * 3.14159265358979323846 * turns)) / (2.0 * std::log(double(r.base)));
  };
  const double low = std::max(0.0, std::floor(turns_dim(r.beta_fast)));
  const double high = std::min(double(r.n_rot - 1), std::ceil(turns_dim(r.beta_slow)));
  for (int32_t h = 0; h < n_heads; ++h) {
    float* v = x + int64_t{h} * hd;
    for (int32_t i = 0; i < half; ++i) {
      float theta = float(p) * r.freq_scale * std::pow(r.base, -2.0f * float(i) / float(r.n_rot));
      if (factors != nullptr) theta /= factors[i];
      float mag = r.attn_factor;
      if (r.ext_factor != 0.0f) {
        const double extrap = theta / r.freq_scale;
        const double y = (i - low) / std::max(0.001, high - low);
        const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * r.ext_factor;
        theta = float(theta * (1.0 - ramp) + extrap * ramp);
        mag = float(r.attn_factor * (1.0 + 0.1 * std::log(1.0 / r.freq_scale)));
      }
      const float c = std::cos(theta) * mag, s = std::sin(theta) * mag;
      const int32_t i0 = r.style == RopeStyle::kNorm ? 2 * i : i;
      const int32_t i1 = r.style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
      const float a = v[i0], b = v[i1];
      v[i0] = a * c - b * s;
      v[i1] = a * s + b * c;
    }
  }
}

// The FFN of one token (dense or MoE); the router reads router_in when given, else `in`.
inline Vec Ffn(const LayerDesc& ld, const LayerTensors& L, const Vec& in, const Vec* router_in = nullptr) {
  const FfnDesc& f = ld.ffn;
  // One gated FFN; the biases (expert e's rows of the [n, n_expert] bias matrices) when given.
  const auto expert = [&](const Tensor* g, const Tensor* u, const Tensor* d, const float* bg, const float* bu,
                          const float* bd) {
    Vec a = MatVec(u, in);
    AddVec(&a, bu);
    if (g != nullptr) {
      Vec gv = MatVec(g, in);
      AddVec(&gv, bg);
      for (size_t i = 0; i < a.size(); ++i) a[i] = Gated(f.act, gv[i], a[i]);
    } else {
      for (float& v : a) v = Act(f.act, v);
    }
    Vec y = MatVec(d, a);
    AddVec(&y, bd);
    return y;
  };
  if (f.kind != FfnKind::kMoe) {
    return expert(f.kind == FfnKind::kGated ? L[LayerRole::kFfnGate] : nullptr, L[LayerRole::kFfnUp],
                  L[LayerRole::kFfnDown], nullptr, nullptr, nullptr);
  }
  Vec logits = MatVec(L[LayerRole::kFfnGateInp], router_in != nullptr ? *router_in : in);
  AddVec(&logits, F32(L[LayerRole::kFfnGateInpBias]));
  Vec p(logits.size());
  if (f.gating == Gating::kSoftmaxWeight) {
    p = logits;  // chosen by the raw logits; the weights are a softmax over the chosen ones
  } else if (f.gating == Gating::kSoftmax) {
    const float mx = *std::max_element(logits.begin(), logits.end());
    float sum = 0.0f;
    for (size_t e = 0; e < p.size(); ++e) sum += (p[e] = std::exp(logits[e] - mx));
    for (float& v : p) v /= sum;
  } else {
    for (size_t e = 0; e < p.size(); ++e) p[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }
  std::vector<int32_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  const float* bias = F32(L[LayerRole::kFfnExpProbsBias]);  // selection only
  const auto score = [&](int32_t e) { return p[size_t(e)] + (bias != nullptr ? bias[e] : 0.0f); };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return score(a) > score(b); });
  if (f.gating == Gating::kSoftmaxWeight) {
    const float mx = p[size_t(order[0])];
    float sum = 0.0f;
    for (int32_t j = 0; j < f.n_expert_used; ++j) sum += std::exp(p[size_t(order[size_t(j)])] - mx);
    for (int32_t j = 0; j < f.n_expert_used; ++j) {
      p[size_t(order[size_t(j)])] = std::exp(p[size_t(order[size_t(j)])] - mx) / sum;
    }
  }
  float wsum = 0.0f;
  for (int32_t j = 0; j < f.n_expert_used; ++j) wsum += p[size_t(order[size_t(j)])];
  const auto row = [&](LayerRole r, int32_t e, int64_t n) { return L[r] ? F32(L[r]) + int64_t{e} * n : nullptr; };
  Vec out(in.size(), 0.0f);
  for (int32_t j = 0; j < f.n_expert_used; ++j) {
    const int32_t e = order[size_t(j)];
    const float* down_scale = F32(L[LayerRole::kFfnDownExpsScale]);
    const float w = p[size_t(e)] * (f.norm_topk ? 1.0f / wsum : 1.0f) * f.expert_weight_scale *
                    (down_scale != nullptr ? down_scale[e] : 1.0f);
    const Vec y = expert(L.expert_gate[size_t(e)], L.expert_up[size_t(e)], L.expert_down[size_t(e)],
                         row(LayerRole::kFfnGateExpsBias, e, f.n_ff), row(LayerRole::kFfnUpExpsBias, e, f.n_ff),
                         row(LayerRole::kFfnDownExpsBias, e, int64_t(in.size())));
    for (size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
  }
  if (f.n_ff_shared > 0) {  // the shared expert, times sigmoid(ffn_gate_inp_shexp . in) when gated
    const Vec y = expert(L[LayerRole::kFfnGateShexp], L[LayerRole::kFfnUpShexp], L[LayerRole::kFfnDownShexp], nullptr,
                         nullptr, nullptr);
    float g = 1.0f;
    if (f.shared_gate) {
      const float* gw = F32(L[LayerRole::kFfnGateInpShexp]);
      float dot = 0.0f;
      for (size_t i = 0; i < in.size(); ++i) dot += gw[i] * in[i];
      g = 1.0f / (1.0f + std::exp(-dot));
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] += g * y[i];
  }
  return out;
}

// MixerKind::kShortConv from its definition, position by position: [b | c | x] = in_proj(norm(x_t)),
// u_t = b * x, y_t = c * sum_j kernel[j] * u_{t - (l_cache - 1) + j} (u before position 0 is 0),
// x_t += out_proj(y_t).
inline void ShortConvMixer(const ModelDesc& d, const LayerDesc& ld, const LayerTensors& L, std::vector<Vec>* x) {
  const int64_t T = int64_t(x->size()), E = d.n_embd, K = ld.conv.l_cache;
  const float* kernel = F32(L[LayerRole::kShortConvConv]);
  std::vector<Vec> bcx(static_cast<size_t>(T)), u(static_cast<size_t>(T), Vec(size_t(E)));
  for (int64_t t = 0; t < T; ++t) {
    Vec in = (*x)[size_t(t)];
    NormInPlace(ld.norm.kind, ld.norm.eps, F32(L[LayerRole::kAttnNorm]), nullptr, in.data(), E);
    bcx[size_t(t)] = MatVec(L[LayerRole::kShortConvInProj], in);
    for (int64_t c = 0; c < E; ++c) u[size_t(t)][size_t(c)] = bcx[size_t(t)][size_t(c)] * bcx[size_t(t)][size_t(2 * E + c)];
  }
  for (int64_t t = 0; t < T; ++t) {
    Vec y(static_cast<size_t>(E));
    for (int64_t c = 0; c < E; ++c) {
      float s = 0.0f;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t p = t - (K - 1) + j;
        if (p >= 0) s += kernel[c * K + j] * u[size_t(p)][size_t(c)];
      }
      y[size_t(c)] = bcx[size_t(t)][size_t(E + c)] * s;
    }
    const Vec o = MatVec(L[LayerRole::kShortConvOutProj], y);
    for (int64_t i = 0; i < E; ++i) (*x)[size_t(t)][size_t(i)] += d.residual_scale * o[size_t(i)];
  }
}

// MixerKind::kMamba2 from its definition, position by position: [z | xBC | dt] = ssm_in(norm(x_t));
// xBC'_t = silu(bias + sum_j conv[c][j] * xBC_{t - (d_conv - 1) + j}) (0 before position 0) split
// into x (heads of P), B and C (groups of N); per head h (group g = h / (H / G)):
// dt = softplus(dt_t[h] + dt_b[h]), S_h = exp(dt A[h]) S_h + dt x_h B_g^T, y_h = S_h C_g + D[h] x_h;
// y *= silu(z), RMS-normed per group of d_inner / G with ssm_norm; x_t += ssm_out(y).
inline void Mamba2Mixer(const ModelDesc& d, const LayerDesc& ld, const LayerTensors& L, std::vector<Vec>* x) {
  const Mamba2Desc& m = ld.ssm;
  const int64_t T = int64_t(x->size()), E = d.n_embd, K = m.d_conv, N = m.d_state, H = m.n_head, G = m.n_group;
  const int64_t DI = m.d_inner, P = DI / H, CH = DI + 2 * G * N;
  const float* conv = F32(L[LayerRole::kSsmConv1d]);
  const float* conv_b = F32(L[LayerRole::kSsmConv1dBias]);
  std::vector<Vec> proj(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Vec in = (*x)[size_t(t)];
    NormInPlace(ld.norm.kind, ld.norm.eps, F32(L[LayerRole::kAttnNorm]), nullptr, in.data(), E);
    proj[size_t(t)] = MatVec(L[LayerRole::kSsmIn], in);
  }
  std::vector<float> S(size_t(H * P * N), 0.0f);  // [h][p][n]
  for (int64_t t = 0; t < T; ++t) {
    const Vec& zt = proj[size_t(t)];
    Vec xbc(static_cast<size_t>(CH));
    for (int64_t c = 0; c < CH; ++c) {
      float s = conv_b != nullptr ? conv_b[c] : 0.0f;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t p = t - (K - 1) + j;
        if (p >= 0) s += conv[c * K + j] * proj[size_t(p)][size_t(DI + c)];
      }
      xbc[size_t(c)] = Act(Activation::kSilu, s);
    }
    Vec y(static_cast<size_t>(DI));
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / G);
      const float raw = zt[size_t(DI + CH + h)] + F32(L[LayerRole::kSsmDtBias])[h];
      const float dt = std::log(1.0f + std::exp(raw));
      const float decay = std::exp(dt * F32(L[LayerRole::kSsmA])[h]);
      for (int64_t p = 0; p < P; ++p) {
        const float xv = xbc[size_t(h * P + p)];
        float acc = 0.0f;
        for (int64_t n = 0; n < N; ++n) {
          float& s = S[size_t((h * P + p) * N + n)];
          s = decay * s + dt * xv * xbc[size_t(DI + g * N + n)];
          acc += s * xbc[size_t(DI + G * N + g * N + n)];
        }
        y[size_t(h * P + p)] = acc + F32(L[LayerRole::kSsmD])[h] * xv;
      }
    }
    for (int64_t i = 0; i < DI; ++i) y[size_t(i)] *= Act(Activation::kSilu, zt[size_t(i)]);
    for (int64_t g = 0; g < G; ++g) {
      NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kSsmNorm]) + g * (DI / G), nullptr, y.data() + g * (DI / G),
                  DI / G);
    }
    const Vec o = MatVec(L[LayerRole::kSsmOut], y);
    for (int64_t i = 0; i < E; ++i) (*x)[size_t(t)][size_t(i)] += d.residual_scale * o[size_t(i)];
  }
}

// MixerKind::kGatedDeltaNet from its definition (the gated delta rule as HF's recurrent form
// writes it, state indexed [key][value]), position by position: [q | k | v] =
// silu(causal conv over d_conv positions of attn_qkv(norm(x_t))) (zeros before position 0);
// q, k per key head divided by sqrt(sum^2 + eps); value head h reads key head h % n_k_heads;
// g = exp(ssm_a * softplus(alpha + ssm_dt)), beta = sigmoid(beta_in); per head
// S = g S; S += k (beta (v - S^T k))^T; o = S^T q / sqrt(d_k); then o = rms_norm(o) * silu(z)
// per head, x_t += ssm_out(o).
inline void DeltaNetMixer(const ModelDesc& d, const LayerDesc& ld, const LayerTensors& L, std::vector<Vec>* x) {
  const DeltaNetDesc& dn = ld.delta;
  const int64_t T = int64_t(x->size()), E = d.n_embd, K = dn.d_conv, C = dn.channels();
  const int64_t dk = dn.head_k_dim, dv = dn.head_v_dim, Hk = dn.n_k_heads, Hv = dn.n_v_heads;
  const float* kernel = F32(L[LayerRole::kSsmConv1d]);
  std::vector<Vec> pre(static_cast<size_t>(T)), z(static_cast<size_t>(T)), al(static_cast<size_t>(T)),
      be(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Vec in = (*x)[size_t(t)];
    NormInPlace(ld.norm.kind, ld.norm.eps, F32(L[LayerRole::kAttnNorm]), nullptr, in.data(), E);
    pre[size_t(t)] = MatVec(L[LayerRole::kDeltaQkv], in);
    z[size_t(t)] = MatVec(L[LayerRole::kDeltaGate], in);
    al[size_t(t)] = MatVec(L[LayerRole::kSsmAlpha], in);
    be[size_t(t)] = MatVec(L[LayerRole::kSsmBeta], in);
  }
  // S[h][i][j]: key dim i, value dim j.
  std::vector<Vec> S(static_cast<size_t>(Hv), Vec(size_t(dk * dv), 0.0f));
  for (int64_t t = 0; t < T; ++t) {
    Vec c(static_cast<size_t>(C));
    for (int64_t ch = 0; ch < C; ++ch) {
      float s = 0.0f;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t p = t - (K - 1) + j;
        if (p >= 0) s += kernel[ch * K + j] * pre[size_t(p)][size_t(ch)];
      }
      c[size_t(ch)] = s / (1.0f + std::exp(-s));
    }
    for (int64_t h = 0; h < 2 * Hk; ++h) {  // the q heads, then the k heads
      float ss = 0.0f;
      for (int64_t i = 0; i < dk; ++i) ss += c[size_t(h * dk + i)] * c[size_t(h * dk + i)];
      for (int64_t i = 0; i < dk; ++i) c[size_t(h * dk + i)] /= std::sqrt(ss + ld.norm.eps);
    }
    Vec o(static_cast<size_t>(Hv * dv));
    for (int64_t h = 0; h < Hv; ++h) {
      const float* q = c.data() + (h % Hk) * dk;
      const float* k = c.data() + Hk * dk + (h % Hk) * dk;
      const float* v = c.data() + 2 * Hk * dk + h * dv;
      const float sp_in = al[size_t(t)][size_t(h)] + F32(L[LayerRole::kSsmDtBias])[h];
      const float sp = sp_in > 20.0f ? sp_in : std::log(1.0f + std::exp(sp_in));
      const float g = std::exp(F32(L[LayerRole::kSsmA])[h] * sp);
      const float beta = 1.0f / (1.0f + std::exp(-be[size_t(t)][size_t(h)]));
      Vec& st = S[size_t(h)];
      for (float& e : st) e *= g;
      for (int64_t j = 0; j < dv; ++j) {
        float mem = 0.0f;
        for (int64_t i = 0; i < dk; ++i) mem += st[size_t(i * dv + j)] * k[i];
        const float delta = (v[j] - mem) * beta;
        for (int64_t i = 0; i < dk; ++i) st[size_t(i * dv + j)] += k[i] * delta;
      }
      for (int64_t j = 0; j < dv; ++j) {
        float acc = 0.0f;
        for (int64_t i = 0; i < dk; ++i) acc += st[size_t(i * dv + j)] * q[i];
        o[size_t(h * dv + j)] = acc / std::sqrt(float(dk));
      }
      NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kSsmNorm]), nullptr, o.data() + h * dv, dv);
      for (int64_t j = 0; j < dv; ++j) {
        const float zz = z[size_t(t)][size_t(h * dv + j)];
        o[size_t(h * dv + j)] *= zz / (1.0f + std::exp(-zz));
      }
    }
    const Vec out = MatVec(L[LayerRole::kSsmOut], o);
    for (int64_t i = 0; i < E; ++i) (*x)[size_t(t)][size_t(i)] += d.residual_scale * out[size_t(i)];
  }
}

// Logits [n_tok][n_vocab] of every position of `tokens` (positions 0..), session context n_ctx.
// rows (optional): input rows of n_embd_inp() floats in place of the tokens' embeddings (not
// scaled), whose slice il + 1 is added to layer il's output for il < n_deepstack (Qwen3-VL).
inline std::vector<Vec> Forward(const Model& m, const std::vector<int32_t>& tokens, int32_t n_ctx,
                                const std::vector<Vec>* rows = nullptr) {
  const ModelDesc& d = m.desc();
  const Weights& w = m.weights();
  const int64_t E = d.n_embd, T = int64_t(tokens.size());
  const float* factors = F32(w[GlobalRole::kRopeFreqs]);
  if (factors == nullptr) {
    factors = F32((int64_t{n_ctx} + 255) / 256 * 256 > d.n_ctx_orig ? w[GlobalRole::kRopeFactorsLong]
                                                                     : w[GlobalRole::kRopeFactorsShort]);
  }
  std::vector<Vec> x(static_cast<size_t>(T));
  std::vector<std::vector<Vec>> per_layer(static_cast<size_t>(T));  // [token][layer] (Gemma 4)
  for (int64_t t = 0; t < T; ++t) {
    const float* row = F32(w[GlobalRole::kTokenEmbd]) + int64_t{tokens[size_t(t)]} * E;
    x[size_t(t)].assign(row, row + E);
    for (float& v : x[size_t(t)]) v *= d.embed_scale;
    if (rows != nullptr) x[size_t(t)].assign((*rows)[size_t(t)].begin(), (*rows)[size_t(t)].begin() + E);
    if (d.n_embd_per_layer > 0) per_layer[size_t(t)] = PerLayerInputs(m, tokens[size_t(t)], x[size_t(t)]);
  }
  // Every layer's K/V rows: a layer sharing another's KV (kv_from) attends over that layer's.
  std::vector<std::vector<Vec>> k_of(size_t(d.n_layer)), v_of(size_t(d.n_layer));
  for (int32_t il = 0; il < d.n_layer; ++il) {
    const LayerDesc& ld = d.layers[size_t(il)];
    const AttentionDesc& a = ld.attn;
    const LayerTensors& L = w.layers[size_t(il)];
    const int32_t hd = a.head_dim_k, hv = a.head_dim_v;
    const bool own = a.kv_from < 0;
    if (ld.mixer == MixerKind::kShortConv) ShortConvMixer(d, ld, L, &x);
    if (ld.mixer == MixerKind::kMamba2) Mamba2Mixer(d, ld, L, &x);
    if (ld.mixer == MixerKind::kGatedDeltaNet) DeltaNetMixer(d, ld, L, &x);
    const int64_t T_attn = ld.attention() ? T : 0;  // the attention mixer's positions
    std::vector<Vec> q(static_cast<size_t>(T)), k(static_cast<size_t>(T)), v(static_cast<size_t>(T));
    std::vector<Vec> q_gate(static_cast<size_t>(T));  // gated attention: each head's gate
    for (int64_t t = 0; t < T_attn; ++t) {
      Vec in = x[size_t(t)];
      if (ld.norm.pre_attn) {
        NormInPlace(ld.norm.kind, ld.norm.eps, F32(L[LayerRole::kAttnNorm]), F32(L[LayerRole::kAttnNormBias]), in.data(), E);
      }
      q[size_t(t)] = MatVec(L[LayerRole::kAttnQ], in);
      if (a.q_gate) {  // rows per head [q | gate]
        const Vec full = q[size_t(t)];
        q[size_t(t)].assign(size_t(a.n_head * hd), 0.0f);
        q_gate[size_t(t)].assign(size_t(a.n_head * hd), 0.0f);
        for (int32_t h = 0; h < a.n_head; ++h) {
          for (int32_t i = 0; i < hd; ++i) {
            q[size_t(t)][size_t(h * hd + i)] = full[size_t(2 * h * hd + i)];
            q_gate[size_t(t)][size_t(h * hd + i)] = full[size_t(2 * h * hd + hd + i)];
          }
        }
      }
      if (!own) {  // Q only: norm and rope below; K/V are the source layer's
        if (a.qk_norm == QkNorm::kPerHead) {
          for (int32_t h = 0; h < a.n_head; ++h) {
            NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kAttnQNorm]), nullptr, q[size_t(t)].data() + h * hd, hd);
          }
        }
        if (a.rope.enabled) {
          Rope(a.rope, a.rope.use_freq_factors ? factors : nullptr, int32_t(t), q[size_t(t)].data(), a.n_head, hd, d.n_ctx_orig);
        }
        continue;
      }
      k[size_t(t)] = MatVec(L[LayerRole::kAttnK], in);
      v[size_t(t)] = L[LayerRole::kAttnV] != nullptr ? MatVec(L[LayerRole::kAttnV], in) : k[size_t(t)];
      if (a.v_norm) {
        for (int32_t h = 0; h < a.n_head_kv; ++h) {
          NormInPlace(NormKind::kRms, ld.norm.eps, nullptr, nullptr, v[size_t(t)].data() + h * hv, hv);
        }
      }
      AddVec(&q[size_t(t)], F32(L[LayerRole::kAttnQBias]));
      AddVec(&k[size_t(t)], F32(L[LayerRole::kAttnKBias]));
      AddVec(&v[size_t(t)], F32(L[LayerRole::kAttnVBias]));
      if (a.qk_norm == QkNorm::kPerHead) {
        for (int32_t h = 0; h < a.n_head; ++h) {
          NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kAttnQNorm]), nullptr, q[size_t(t)].data() + h * hd, hd);
        }
        for (int32_t h = 0; h < a.n_head_kv; ++h) {
          NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kAttnKNorm]), nullptr, k[size_t(t)].data() + h * hd, hd);
        }
      } else if (a.qk_norm == QkNorm::kFullWidth) {
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kAttnQNorm]), nullptr, q[size_t(t)].data(),
                    int64_t(q[size_t(t)].size()));
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kAttnKNorm]), nullptr, k[size_t(t)].data(),
                    int64_t(k[size_t(t)].size()));
      }
      if (a.rope.enabled) {
        const float* ff = a.rope.use_freq_factors ? factors : nullptr;
        Rope(a.rope, ff, int32_t(t), q[size_t(t)].data(), a.n_head, hd, d.n_ctx_orig);
        Rope(a.rope, ff, int32_t(t), k[size_t(t)].data(), a.n_head_kv, hd, d.n_ctx_orig);
      }
    }
    if (own) {
      k_of[size_t(il)] = k;
      v_of[size_t(il)] = v;
    } else {
      k = k_of[size_t(a.kv_from)];
      v = v_of[size_t(a.kv_from)];
    }
    const float scale = a.scale > 0.0f ? a.scale : 1.0f / std::sqrt(float(hd));
    const int32_t group = a.n_head / std::max(1, a.n_head_kv);
    for (int64_t t = 0; t < T_attn; ++t) {
      Vec attn(size_t(a.n_head) * size_t(hv), 0.0f);
      for (int32_t h = 0; h < a.n_head; ++h) {
        const int32_t kh = h / group;
        std::vector<float> s;
        std::vector<int64_t> pos;
        for (int64_t p = 0; p <= t; ++p) {
          if (a.window > 0 && t - p >= a.window) continue;
          float dot = 0.0f;
          for (int32_t i = 0; i < hd; ++i) dot += q[size_t(t)][size_t(h * hd + i)] * k[size_t(p)][size_t(kh * hd + i)];
          dot *= scale;
          if (a.softcap > 0.0f) dot = a.softcap * std::tanh(dot / a.softcap);
          s.push_back(dot);
          pos.push_back(p);
        }
        // A sink (gpt-oss) is one more logit in the softmax, with no value row.
        const float* sinks = F32(L[LayerRole::kAttnSinks]);
        float mx = *std::max_element(s.begin(), s.end());
        if (sinks != nullptr) mx = std::max(mx, sinks[h]);
        float sum = sinks != nullptr ? std::exp(sinks[h] - mx) : 0.0f;
        for (float& e : s) sum += (e = std::exp(e - mx));
        for (size_t j = 0; j < s.size(); ++j) {
          for (int32_t i = 0; i < hv; ++i) attn[size_t(h * hv + i)] += s[j] / sum * v[size_t(pos[j])][size_t(kh * hv + i)];
        }
      }
      if (a.q_gate) {
        for (size_t i = 0; i < attn.size(); ++i) attn[i] /= 1.0f + std::exp(-q_gate[size_t(t)][i]);
      }
      Vec o = MatVec(L[LayerRole::kAttnOut], attn);
      AddVec(&o, F32(L[LayerRole::kAttnOutBias]));
      if (ld.norm.post_attn) NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kPostAttnNorm]), nullptr, o.data(), E);
      for (int64_t i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += d.residual_scale * o[size_t(i)];
    }
    for (int64_t t = 0; t < T; ++t) {
      Vec in = x[size_t(t)];
      if (ld.norm.pre_ffn) {
        NormInPlace(ld.norm.kind, ld.norm.eps, F32(L[LayerRole::kFfnNorm]), F32(L[LayerRole::kFfnNormBias]), in.data(), E);
      }
      Vec f;
      if (ld.ffn.n_ff_dense > 0) {  // Gemma 4 MoE: dense MLP beside the experts, each with its norms
        LayerDesc dense = ld;
        dense.ffn.kind = FfnKind::kGated;
        Vec mlp = Ffn(dense, L, in);
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kFfnPostNorm1]), nullptr, mlp.data(), E);
        Vec router = x[size_t(t)];
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kFfnGateInpScale]), nullptr, router.data(), E);
        for (float& e : router) e /= std::sqrt(float(E));
        Vec exp_in = x[size_t(t)];
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kFfnPreNorm2]), nullptr, exp_in.data(), E);
        f = Ffn(ld, L, exp_in, &router);
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kFfnPostNorm2]), nullptr, f.data(), E);
        for (int64_t i = 0; i < E; ++i) f[size_t(i)] += mlp[size_t(i)];
      } else {
        f = Ffn(ld, L, in);
      }
      if (ld.norm.post_ffn) NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kPostFfnNorm]), nullptr, f.data(), E);
      for (int64_t i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += d.residual_scale * f[size_t(i)];
      if (ld.per_layer_input) {  // x += post_norm(proj(gelu(inp_gate x) * per-layer input))
        Vec g = MatVec(L[LayerRole::kPerLayerInpGate], x[size_t(t)]);
        for (size_t i = 0; i < g.size(); ++i) g[i] = Act(Activation::kGeluTanh, g[i]) * per_layer[size_t(t)][size_t(il)][i];
        Vec o = MatVec(L[LayerRole::kPerLayerProj], g);
        NormInPlace(NormKind::kRms, ld.norm.eps, F32(L[LayerRole::kPerLayerPostNorm]), nullptr, o.data(), E);
        for (int64_t i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += o[size_t(i)];
      }
      if (ld.out_scale && L[LayerRole::kLayerOutScale] != nullptr) {
        for (float& e : x[size_t(t)]) e *= F32(L[LayerRole::kLayerOutScale])[0];
      }
      if (rows != nullptr && il < d.n_deepstack) {
        for (int64_t i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += (*rows)[size_t(t)][size_t((il + 1) * E + i)];
      }
    }
  }
  std::vector<Vec> logits(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    Vec h = x[size_t(t)];
    NormInPlace(d.output_norm_kind, d.output_norm_eps, F32(w[GlobalRole::kOutputNorm]), F32(w[GlobalRole::kOutputNormBias]),
                h.data(), E);
    Vec l = MatVec(w[GlobalRole::kOutput], h);
    AddVec(&l, F32(w[GlobalRole::kOutputBias]));
    for (float& e : l) {
      e *= d.logit_scale;
      if (d.final_logit_softcap > 0.0f) e = d.final_logit_softcap * std::tanh(e / d.final_logit_softcap);
    }
    logits[size_t(t)] = std::move(l);
  }
  return logits;
}

}  // namespace zf::model::testref

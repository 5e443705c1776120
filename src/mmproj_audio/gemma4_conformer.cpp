#include "mmproj_audio/gemma4_conformer.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "mmproj_audio/tensor_reader.h"
#include "quant/quant.h"

namespace zf::mmproj_audio {
namespace {

constexpr float kEps = 1e-6f;       // clip.cpp: every gemma4a norm
constexpr int64_t kPast = 12;       // max_past_horizon: keys reach 11 positions back
constexpr int64_t kRel = kPast + 1; // relative positions 12, 11, ..., 0
constexpr float kSoftcap = 50.0f;
constexpr int64_t kTaps = 5;        // the depthwise convolution (clip.cpp pads 4 on the left)

// fn(begin, end) over [0, n) split into n_threads parts.
template <typename Fn>
void ParallelFor(int64_t n, int32_t n_threads, Fn fn) {
  const int64_t nth = std::max<int64_t>(1, std::min<int64_t>(n_threads, n));
  if (nth <= 1) {
    fn(int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < nth; ++t) pool.emplace_back([&, t] { fn(n * t / nth, n * (t + 1) / nth); });
  fn(int64_t(0), n / nth);
  for (auto& th : pool) th.join();
}

// y = x W^T (+ bias) over n rows, activations converted to the weight's dot type as ggml does.
void Product(const speech::Linear& l, const float* x, int64_t n, float* y, int32_t n_threads) {
  const GgmlType at = quant::VecDotType(l.type);
  const size_t astride = RowSize(at, l.in);
  std::vector<uint8_t> act(astride * size_t(n));
  ParallelFor(n, n_threads, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) quant::QuantizeActivations(at, x + t * l.in, act.data() + size_t(t) * astride, l.in);
  });
  constexpr int64_t kRows = 16;
  const int64_t n_chunks = (l.out + kRows - 1) / kRows;
  ParallelFor(n_chunks, n_threads, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = c * kRows, nr = std::min(kRows, l.out - r0);
      for (int64_t t = 0; t < n; ++t) {
        float* yt = y + t * l.out + r0;
        quant::Gemv(l.type, l.in, l.w.data() + size_t(r0) * l.stride, l.stride, nr, act.data() + size_t(t) * astride, yt);
        if (!l.b.empty())
          for (int64_t i = 0; i < nr; ++i) yt[i] += l.b[size_t(r0 + i)];
      }
    }
  });
}

// clip.cpp's build_mm for gemma4a: the clamps around the product (ggml_clamp: min(max) order).
void Clamped(const ClampedProduct& p, const float* x, int64_t n, float* y, int32_t n_threads) {
  const bool clamp_in = p.in_min != -FLT_MAX || p.in_max != FLT_MAX;
  std::vector<float> xc;
  if (clamp_in) {
    xc.assign(x, x + n * p.l.in);
    for (float& v : xc) v = std::max(std::min(v, p.in_max), p.in_min);
    x = xc.data();
  }
  Product(p.l, x, n, y, n_threads);
  if (p.out_min != -FLT_MAX || p.out_max != FLT_MAX)
    for (int64_t i = 0; i < n * p.l.out; ++i) y[i] = std::max(std::min(y[i], p.out_max), p.out_min);
}

float Silu(float x) { return x / (1.0f + std::exp(-x)); }

// A one-element tensor's value, or `def` when the file has none.
Status Scalar(Reader& r, const std::string& name, float def, float* out) {
  *out = def;
  if (r.f.FindTensor(name) == nullptr) return Status::Ok();
  std::vector<float> v;
  ZF_RETURN_IF_ERROR(r.Floats(name, {1}, &v));
  *out = v[0];
  return Status::Ok();
}

Status ClampedMatrix(Reader& r, const std::string& name, int64_t in, int64_t out, ClampedProduct* p, bool bias = false) {
  if (bias && r.f.FindTensor(name + ".bias") != nullptr) {
    ZF_RETURN_IF_ERROR(r.Matrix(name, in, out, &p->l, {out}));
  } else {
    ZF_RETURN_IF_ERROR(r.Matrix(name, in, out, &p->l, {}));
  }
  ZF_RETURN_IF_ERROR(Scalar(r, name + ".input_min", -FLT_MAX, &p->in_min));
  ZF_RETURN_IF_ERROR(Scalar(r, name + ".input_max", FLT_MAX, &p->in_max));
  ZF_RETURN_IF_ERROR(Scalar(r, name + ".output_min", -FLT_MAX, &p->out_min));
  return Scalar(r, name + ".output_max", FLT_MAX, &p->out_max);
}

Status Optional(Reader& r, const std::string& name, int64_t n, std::vector<float>* out) {
  if (r.f.FindTensor(name) == nullptr) return Status::Ok();
  return r.Floats(name, {n}, out);
}

int64_t Half(int64_t n) { return (n - 1) / 2 + 1; }  // a 3-wide stride-2 convolution, padding 1

}  // namespace

int64_t Gemma4AudioTower::Rows(int64_t n_frames) { return Half(Half(n_frames)); }

Status Gemma4AudioTower::Load(Reader& r, int32_t n_mel, int32_t n_embd, int32_t n_ff, int32_t n_layer, int32_t n_head,
                              std::unique_ptr<Gemma4AudioTower>* out) {
  auto t = std::make_unique<Gemma4AudioTower>();
  t->n_mel = n_mel;
  t->n_embd = n_embd;
  t->n_head = n_head;
  t->n_ff = n_ff;
  const int64_t E = n_embd;
  int64_t in_ch = 1, freq = n_mel;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "a.conv1d." + std::to_string(i) + ".weight";
    const gguf::TensorInfo* w = r.f.FindTensor(name);
    if (w == nullptr) return FormatError("mmproj: tensor '" + name + "' is missing");
    if (w->n_dims != 4 || w->ne[0] != 3 || w->ne[1] != 3 || w->ne[2] != in_ch || w->ne[3] < 1 || w->ne[3] > 4096)
      return FormatError("mmproj: tensor '" + name + "' has shape " + gguf::ShapeString(w->ne, w->n_dims) + ", [3, 3, " +
                         std::to_string(in_ch) + ", channels] expected");
    if (w->type != GgmlType::F32 && w->type != GgmlType::F16)
      return FormatError("mmproj: tensor '" + name + "' is " + TypeName(w->type) + ", F32 or F16 expected (an im2col convolution)");
    t->ch[i] = int32_t(w->ne[3]);
    t->conv_f16[i] = w->type == GgmlType::F16;
    ZF_RETURN_IF_ERROR(r.Floats(name, {3, 3, in_ch, w->ne[3]}, &t->conv_w[i]));
    ZF_RETURN_IF_ERROR(Optional(r, "a.conv1d." + std::to_string(i) + ".norm.weight", w->ne[3], &t->conv_norm[i]));
    in_ch = w->ne[3];
    freq = Half(freq);
  }
  ZF_RETURN_IF_ERROR(ClampedMatrix(r, "a.input_projection", in_ch * freq, E, &t->inp_proj, true));
  t->blocks.resize(size_t(n_layer));
  const int64_t D = E / n_head;
  for (int32_t il = 0; il < n_layer; ++il) {
    ConformerBlock& b = t->blocks[size_t(il)];
    const std::string p = "a.blk." + std::to_string(il) + ".";
    ZF_RETURN_IF_ERROR(r.Floats(p + "ffn_norm.weight", {E}, &b.ffn_norm));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "ffn_up", E, n_ff, &b.ffn_up));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "ffn_down", n_ff, E, &b.ffn_down));
    ZF_RETURN_IF_ERROR(Optional(r, p + "ffn_post_norm.weight", E, &b.ffn_post_norm));
    // clip.cpp: attn_pre_norm, or ln1 when the file has none.
    ZF_RETURN_IF_ERROR(Optional(r, p + "attn_pre_norm.weight", E, &b.attn_norm));
    if (b.attn_norm.empty()) ZF_RETURN_IF_ERROR(Optional(r, p + "ln1.weight", E, &b.attn_norm));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "attn_q", E, E, &b.q));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "attn_k", E, E, &b.k));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "attn_v", E, E, &b.v));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "attn_out", E, E, &b.o, true));
    ZF_RETURN_IF_ERROR(Optional(r, p + "attn_post_norm.weight", E, &b.attn_post_norm));
    ZF_RETURN_IF_ERROR(Optional(r, p + "per_dim_scale.weight", D, &b.q_scale_dims));
    ZF_RETURN_IF_ERROR(Optional(r, p + "per_dim_k_scale.weight", D, &b.k_scale_dims));
    if (r.f.FindTensor(p + "attn_k_rel.weight") != nullptr) ZF_RETURN_IF_ERROR(r.Matrix(p + "attn_k_rel", E, E, &b.k_rel, {}));
    ZF_RETURN_IF_ERROR(r.Floats(p + "conv_norm.weight", {E}, &b.conv_pre_norm));
    int64_t two_i = 0;
    ZF_RETURN_IF_ERROR(r.RowsOf(p + "conv_pw1.weight", E, &two_i));
    if (two_i % 2 != 0) return FormatError("mmproj: tensor '" + p + "conv_pw1.weight' has an odd row count (the GLU halves it)");
    const int64_t I = two_i / 2;
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "conv_pw1", E, two_i, &b.pw1));
    ZF_RETURN_IF_ERROR(r.Floats(p + "conv_dw.weight", {kTaps, I}, &b.dw));
    ZF_RETURN_IF_ERROR(Optional(r, p + "conv_dw.bias", I, &b.dw_b));
    ZF_RETURN_IF_ERROR(Optional(r, p + "norm_conv.weight", I, &b.conv_post_norm));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "conv_pw2", I, E, &b.pw2));
    ZF_RETURN_IF_ERROR(r.Floats(p + "ffn_norm_1.weight", {E}, &b.ffn1_norm));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "ffn_up_1", E, n_ff, &b.ffn1_up));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, p + "ffn_down_1", n_ff, E, &b.ffn1_down));
    ZF_RETURN_IF_ERROR(Optional(r, p + "ffn_post_norm_1.weight", E, &b.ffn1_post_norm));
    ZF_RETURN_IF_ERROR(Optional(r, p + "ln2.weight", E, &b.out_norm));
  }
  int64_t width = E;
  if (r.f.FindTensor("a.pre_encode.out.weight") != nullptr) {
    ZF_RETURN_IF_ERROR(r.RowsOf("a.pre_encode.out.weight", E, &width));
    ZF_RETURN_IF_ERROR(ClampedMatrix(r, "a.pre_encode.out", E, width, &t->out_proj, true));
  }
  ZF_RETURN_IF_ERROR(Optional(r, "mm.a.soft_emb_norm.weight", width, &t->soft_emb_norm));
  int64_t P = 0;
  ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.input_projection.weight", width, &P));
  ZF_RETURN_IF_ERROR(ClampedMatrix(r, "mm.a.input_projection", width, P, &t->mm_proj));
  *out = std::move(t);
  return Status::Ok();
}

namespace {

// ggml_conv_2d (3x3, stride 2, padding 1) of in [c_in][T][F] into out [c_out][T'][F'], then the
// channels' LayerNorm (weight only) and ReLU. F16 kernels: the input rounded to F16 as ggml's
// im2col of that type does.
void ConvBlock(const std::vector<float>& w, bool f16, const std::vector<float>& norm, int64_t c_in, int64_t c_out,
               const float* in, int64_t T, int64_t F, std::vector<float>* out, int64_t* T2, int64_t* F2, int32_t n_threads) {
  const int64_t To = Half(T), Fo = Half(F);
  std::vector<float> src(in, in + c_in * T * F);
  if (f16)
    for (float& v : src) v = quant::Fp16ToFp32(quant::Fp32ToFp16(v));
  out->assign(size_t(c_out * To * Fo), 0.0f);
  ParallelFor(c_out, n_threads, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o)
      for (int64_t t = 0; t < To; ++t)
        for (int64_t f = 0; f < Fo; ++f) {
          double s = 0;
          for (int64_t c = 0; c < c_in; ++c)
            for (int64_t kt = 0; kt < 3; ++kt) {
              const int64_t ti = t * 2 - 1 + kt;
              if (ti < 0 || ti >= T) continue;
              for (int64_t kf = 0; kf < 3; ++kf) {
                const int64_t fi = f * 2 - 1 + kf;
                if (fi < 0 || fi >= F) continue;
                s += double(w[size_t(((o * c_in + c) * 3 + kt) * 3 + kf)]) * src[size_t((c * T + ti) * F + fi)];
              }
            }
          (*out)[size_t((o * To + t) * Fo + f)] = float(s);
        }
  });
  // LayerNorm over the channels of each (t, f) (ggml_norm: mean and variance in double).
  for (int64_t p = 0; p < To * Fo; ++p) {
    float* base = out->data() + p;
    const int64_t stride = To * Fo;
    if (!norm.empty()) {
      double mean = 0;
      for (int64_t o = 0; o < c_out; ++o) mean += base[o * stride];
      mean /= double(c_out);
      double var = 0;
      for (int64_t o = 0; o < c_out; ++o) {
        const float d = base[o * stride] - float(mean);
        base[o * stride] = d;
        var += double(d * d);
      }
      const float scale = 1.0f / std::sqrt(float(var / double(c_out)) + kEps);
      for (int64_t o = 0; o < c_out; ++o) base[o * stride] = base[o * stride] * scale * norm[size_t(o)];
    }
    for (int64_t o = 0; o < c_out; ++o) base[o * stride] = std::max(base[o * stride], 0.0f);
  }
  *T2 = To;
  *F2 = Fo;
}

// x += scale * FFN(x): RMS norm, up, SiLU, down, (RMS norm).
void FfnHalf(const std::vector<float>& norm, const ClampedProduct& up, const ClampedProduct& down,
             const std::vector<float>& post, float* x, int64_t n, int64_t E, int32_t n_threads) {
  std::vector<float> h(x, x + n * E), u(size_t(n * up.l.out)), y(size_t(n * E));
  RmsNorm(h.data(), n, E, norm, kEps);
  Clamped(up, h.data(), n, u.data(), n_threads);
  for (float& v : u) v = Silu(v);
  Clamped(down, u.data(), n, y.data(), n_threads);
  if (!post.empty()) RmsNorm(y.data(), n, E, post, kEps);
  for (int64_t i = 0; i < n * E; ++i) x[i] = x[i] + y[size_t(i)] * 0.5f;
}

// The sinusoidal relative positions clip.cpp feeds the graph: row p is position 12 - p, sines
// then cosines over n_embd / 2 timescales.
std::vector<float> RelativePositions(int64_t E) {
  const int64_t half = E / 2;
  const float inc = std::log(10000.0f) / float(std::max<int64_t>(half - 1, 1));
  std::vector<float> pe(size_t(E * kRel), 0.0f);
  for (int64_t p = 0; p < kRel; ++p) {
    const float pos = float(kPast - p);
    for (int64_t i = 0; i < half; ++i) {
      const float s = pos * std::exp(-float(i) * inc);
      pe[size_t(p * E + i)] = std::sin(s);
      pe[size_t(p * E + i + half)] = std::cos(s);
    }
  }
  return pe;
}

void Attention(const ConformerBlock& b, int64_t H, const std::vector<float>& rel_pos, float* x, int64_t n, int64_t E,
               int32_t n_threads) {
  const int64_t D = E / H;
  std::vector<float> h(x, x + n * E);
  if (!b.attn_norm.empty()) RmsNorm(h.data(), n, E, b.attn_norm, kEps);
  std::vector<float> q(size_t(n * E)), k(size_t(n * E)), v(size_t(n * E));
  Clamped(b.q, h.data(), n, q.data(), n_threads);
  Clamped(b.k, h.data(), n, k.data(), n_threads);
  Clamped(b.v, h.data(), n, v.data(), n_threads);
  const float q_scale = (1.0f / std::sqrt(float(D))) / std::log(2.0f);
  const float k_scale = std::log(1.0f + std::exp(1.0f)) / std::log(2.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < E; ++i) {
      const int64_t d = i % D;
      float& qv = q[size_t(t * E + i)];
      qv = qv * q_scale;
      if (!b.q_scale_dims.empty()) qv = qv * b.q_scale_dims[size_t(d)];
      float& kv = k[size_t(t * E + i)];
      kv = kv * k_scale;
      if (!b.k_scale_dims.empty()) kv = kv * b.k_scale_dims[size_t(d)];
    }
  // The relative keys: attn_k_rel times each of the 13 position rows.
  std::vector<float> rel;
  if (!b.k_rel.w.empty()) {
    rel.resize(size_t(kRel * E));
    Product(b.k_rel, rel_pos.data(), kRel, rel.data(), n_threads);
  }
  std::vector<float> att(size_t(n * E), 0.0f);
  ParallelFor(n * H, n_threads, [&](int64_t jb, int64_t je) {
    float s[kPast];
    for (int64_t j = jb; j < je; ++j) {
      const int64_t t = j / H, hd = j % H;
      const float* qt = q.data() + t * E + hd * D;
      // Keys t - 11 .. t (the mask leaves these; the others weigh exactly 0 after softmax).
      const int64_t first = std::max<int64_t>(0, t - (kPast - 1));
      float mx = -FLT_MAX;
      for (int64_t src = first; src <= t; ++src) {
        const float* kt = k.data() + src * E + hd * D;
        float ac = 0.0f, bd = 0.0f;
        for (int64_t d = 0; d < D; ++d) ac += qt[d] * kt[d];
        if (!rel.empty()) {
          const float* pr = rel.data() + (kPast - (t - src)) * E + hd * D;
          for (int64_t d = 0; d < D; ++d) bd += qt[d] * pr[d];
        }
        const float sc = std::tanh((ac + bd) * (1.0f / kSoftcap)) * kSoftcap;
        s[src - first] = sc;
        mx = std::max(mx, sc);
      }
      double sum = 0;
      for (int64_t i = 0; i <= t - first; ++i) {
        s[i] = std::exp(s[i] - mx);
        sum += s[i];
      }
      const float inv = float(1.0 / sum);
      float* out = att.data() + t * E + hd * D;
      for (int64_t src = first; src <= t; ++src) {
        const float p = s[src - first] * inv;
        const float* vt = v.data() + src * E + hd * D;
        for (int64_t d = 0; d < D; ++d) out[d] += p * vt[d];
      }
    }
  });
  std::vector<float> y(size_t(n * E));
  Clamped(b.o, att.data(), n, y.data(), n_threads);
  if (!b.attn_post_norm.empty()) RmsNorm(y.data(), n, E, b.attn_post_norm, kEps);
  for (int64_t i = 0; i < n * E; ++i) x[i] += y[size_t(i)];
}

void ConvModule(const ConformerBlock& b, float* x, int64_t n, int64_t E, int32_t n_threads) {
  const int64_t I = b.pw1.l.out / 2;
  std::vector<float> h(x, x + n * E), g(size_t(n * 2 * I));
  RmsNorm(h.data(), n, E, b.conv_pre_norm, kEps);
  Clamped(b.pw1, h.data(), n, g.data(), n_threads);
  std::vector<float> glu(size_t(n * I));  // the first half times sigmoid of the second
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < I; ++c)
      glu[size_t(t * I + c)] = g[size_t(t * 2 * I + c)] * (1.0f / (1.0f + std::exp(-g[size_t(t * 2 * I + I + c)])));
  // ggml_ssm_conv over 4 zeros then the rows: out[t] = sum_k w[k] in[t - 4 + k], in float.
  std::vector<float> dw(size_t(n * I));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < I; ++c) {
      float s = 0.0f;
      for (int64_t k = 0; k < kTaps; ++k) {
        const int64_t src = t - (kTaps - 1) + k;
        const float in = src >= 0 ? glu[size_t(src * I + c)] : 0.0f;
        s += in * b.dw[size_t(c * kTaps + k)];
      }
      if (!b.dw_b.empty()) s += b.dw_b[size_t(c)];
      dw[size_t(t * I + c)] = s;
    }
  if (!b.conv_post_norm.empty()) RmsNorm(dw.data(), n, I, b.conv_post_norm, kEps);
  for (float& vv : dw) vv = Silu(vv);
  std::vector<float> y(size_t(n * E));
  Clamped(b.pw2, dw.data(), n, y.data(), n_threads);
  for (int64_t i = 0; i < n * E; ++i) x[i] += y[size_t(i)];
}

}  // namespace

void EncodeGemma4Audio(const Gemma4AudioTower& tw, const float* mel, int64_t n_frames, int32_t n_threads,
                       std::vector<float>* out) {
  // The mel as one input channel [1][T][n_mel].
  std::vector<float> a, b;
  int64_t T = n_frames, F = tw.n_mel, T1 = 0, F1 = 0, T2 = 0, F2 = 0;
  ConvBlock(tw.conv_w[0], tw.conv_f16[0], tw.conv_norm[0], 1, tw.ch[0], mel, T, F, &a, &T1, &F1, n_threads);
  ConvBlock(tw.conv_w[1], tw.conv_f16[1], tw.conv_norm[1], tw.ch[0], tw.ch[1], a.data(), T1, F1, &b, &T2, &F2, n_threads);
  // [c][t][f] -> rows t of (f, c) with the channel fastest (clip.cpp's permute before the reshape).
  const int64_t C = tw.ch[1], n = T2, E = tw.n_embd;
  std::vector<float> flat(size_t(n * F2 * C));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t f = 0; f < F2; ++f)
      for (int64_t c = 0; c < C; ++c) flat[size_t((t * F2 + f) * C + c)] = b[size_t((c * T2 + t) * F2 + f)];
  std::vector<float> x(size_t(n * E));
  Clamped(tw.inp_proj, flat.data(), n, x.data(), n_threads);

  const std::vector<float> rel_pos = RelativePositions(E);
  for (const ConformerBlock& blk : tw.blocks) {
    FfnHalf(blk.ffn_norm, blk.ffn_up, blk.ffn_down, blk.ffn_post_norm, x.data(), n, E, n_threads);
    Attention(blk, tw.n_head, rel_pos, x.data(), n, E, n_threads);
    ConvModule(blk, x.data(), n, E, n_threads);
    FfnHalf(blk.ffn1_norm, blk.ffn1_up, blk.ffn1_down, blk.ffn1_post_norm, x.data(), n, E, n_threads);
    if (!blk.out_norm.empty()) RmsNorm(x.data(), n, E, blk.out_norm, kEps);
  }
  int64_t width = E;
  if (!tw.out_proj.l.w.empty()) {
    width = tw.out_proj.l.out;
    std::vector<float> y(size_t(n * width));
    Clamped(tw.out_proj, x.data(), n, y.data(), n_threads);
    x = std::move(y);
  }
  RmsNorm(x.data(), n, width, tw.soft_emb_norm, kEps);
  out->assign(size_t(n * tw.proj_width()), 0.0f);
  Clamped(tw.mm_proj, x.data(), n, out->data(), n_threads);
}

}  // namespace zf::mmproj_audio

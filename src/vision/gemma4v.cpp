#include "vision/gemma4v.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/thread_pool.h"
#include "gguf/gguf.h"
#include "vision/encoder.h"
#include "vision/mmproj_tensors.h"
#include "vision/rope2d.h"

namespace zf::vision {
namespace {

// A one-element tensor's value, or `def` when the file has none.
Status Scalar(const gguf::GgufFile& f, const std::string& name, float def, std::set<std::string>* used, float* out,
              bool* found) {
  *out = def;
  if (f.FindTensor(name) == nullptr) return Status::Ok();
  std::vector<float> v;
  ZF_RETURN_IF_ERROR(Floats(f, name, {1}, used, &v));
  *out = v[0];
  *found = true;
  return Status::Ok();
}

// NAME.weight as `out` rows of `in` and its clamps (clip.cpp reads them for every weight).
Status Clamped(const gguf::GgufFile& f, const std::string& name, int64_t in, int64_t out, std::set<std::string>* used,
               ClampedLinear* c) {
  ZF_RETURN_IF_ERROR(Matrix(f, name, in, out, used, &c->l, false));
  ZF_RETURN_IF_ERROR(Scalar(f, name + ".input_min", -FLT_MAX, used, &c->in_min, &c->clamped));
  ZF_RETURN_IF_ERROR(Scalar(f, name + ".input_max", FLT_MAX, used, &c->in_max, &c->clamped));
  ZF_RETURN_IF_ERROR(Scalar(f, name + ".output_min", -FLT_MAX, used, &c->out_min, &c->clamped));
  return Scalar(f, name + ".output_max", FLT_MAX, used, &c->out_max, &c->clamped);
}

Status OptionalFloats(const gguf::GgufFile& f, const std::string& name, int64_t n, std::set<std::string>* used,
                      std::vector<float>* out) {
  if (f.FindTensor(name) == nullptr) return Status::Ok();
  return Floats(f, name, {n}, used, out);
}

// rows x dim floats RMS-normed in place (the mean of squares in double, as ggml), times w when
// given.
void RmsRows(float* x, int64_t rows, int64_t dim, const float* w, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(v[i] * v[i]);
    const float scale = 1.0f / std::sqrt(float(ss / double(dim)) + eps);
    for (int64_t i = 0; i < dim; ++i) v[i] *= scale;
    if (w != nullptr)
      for (int64_t i = 0; i < dim; ++i) v[i] *= w[i];
  }
}

}  // namespace

Status Gemma4vHparams(const gguf::GgufFile& f, VisionHparams* hp) {
  if (f.Find("clip.vision.projector.scale_factor") == nullptr) hp->n_merge = 3;  // clip.cpp's default
  if (hp->n_embd % hp->n_head != 0 || (hp->n_embd / hp->n_head) % 4 != 0)
    return FormatError("mmproj: clip.vision.embedding_length / attention.head_count must be a multiple of 4 (" +
                       hp->projector + "'s 2D rotary halves)");
  // libmtmd's set_limit_image_tokens(70, 1120) in pixels.
  const int32_t area = hp->patch_size * hp->patch_size * hp->n_merge * hp->n_merge;
  hp->min_pixels = 70 * area;
  hp->max_pixels = 1120 * area;
  return Status::Ok();
}

Status LoadGemma4v(const gguf::GgufFile& f, VisionHparams* hp, std::set<std::string>* used, Gemma4vWeights* w) {
  // Gemma 4's files hold the audio tower too (a.*, mm.a.*): not read here.
  bool audio = false;
  if (f.GetBool("clip.has_audio_encoder", &audio).ok() && audio)
    for (const gguf::TensorInfo& t : f.tensors()) {
      const std::string name(t.name);
      if (name.rfind("a.", 0) == 0 || name.rfind("mm.a.", 0) == 0) used->insert(name);
    }
  const int64_t E = hp->n_embd, P = hp->patch_size, F = hp->n_ff, d = E / hp->n_head;
  ZF_RETURN_IF_ERROR(Matrix(f, "v.patch_embd", 3 * P * P, E, used, &w->patch, false, {P, P, 3, E}));
  const gguf::TensorInfo* pe = f.FindTensor("v.position_embd.weight");
  if (pe == nullptr) return FormatError("mmproj: tensor 'v.position_embd.weight' is missing");
  w->pos_size = pe->ne[1];
  ZF_RETURN_IF_ERROR(Floats(f, "v.position_embd.weight", {E, w->pos_size, 2}, used, &w->pos));
  ZF_RETURN_IF_ERROR(OptionalFloats(f, "v.pre_ln.weight", E, used, &w->pre_ln));
  ZF_RETURN_IF_ERROR(OptionalFloats(f, "v.post_ln.weight", E, used, &w->post_ln));
  w->blocks.resize(size_t(hp->n_layer));
  for (int32_t i = 0; i < hp->n_layer; ++i) {
    Gemma4vBlock& b = w->blocks[size_t(i)];
    const std::string p = "v.blk." + std::to_string(i) + ".";
    ZF_RETURN_IF_ERROR(Floats(f, p + "ln1.weight", {E}, used, &b.ln1));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "attn_q", E, E, used, &b.q));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "attn_k", E, E, used, &b.k));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "attn_v", E, E, used, &b.v));
    ZF_RETURN_IF_ERROR(Floats(f, p + "attn_q_norm.weight", {d}, used, &b.q_norm));
    ZF_RETURN_IF_ERROR(Floats(f, p + "attn_k_norm.weight", {d}, used, &b.k_norm));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "attn_out", E, E, used, &b.o));
    ZF_RETURN_IF_ERROR(Floats(f, p + "attn_post_norm.weight", {E}, used, &b.attn_post));
    ZF_RETURN_IF_ERROR(Floats(f, p + "ln2.weight", {E}, used, &b.ln2));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "ffn_gate", E, F, used, &b.gate));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "ffn_up", E, F, used, &b.up));
    ZF_RETURN_IF_ERROR(Clamped(f, p + "ffn_down", F, E, used, &b.down));
    ZF_RETURN_IF_ERROR(Floats(f, p + "ffn_post_norm.weight", {E}, used, &b.ffn_post));
    bool found = false;
    ZF_RETURN_IF_ERROR(Scalar(f, p + "out_scale.weight", 1.0f, used, &b.out_scale, &found));
  }
  ZF_RETURN_IF_ERROR(OptionalFloats(f, "v.std_bias", E, used, &w->std_bias));
  ZF_RETURN_IF_ERROR(OptionalFloats(f, "v.std_scale", E, used, &w->std_scale));
  if (w->std_bias.empty() != w->std_scale.empty())
    return FormatError("mmproj: v.std_bias and v.std_scale come together (one is missing)");
  const gguf::TensorInfo* pw = f.FindTensor("mm.input_projection.weight");
  if (pw == nullptr) return FormatError("mmproj: tensor 'mm.input_projection.weight' is missing");
  if (pw->n_dims != 2 || pw->ne[0] != E)
    return FormatError("mmproj: tensor 'mm.input_projection.weight' has shape " + gguf::ShapeString(pw->ne, pw->n_dims) + ", [" +
                       std::to_string(E) + ", width] expected");
  hp->proj_width = int32_t(pw->ne[1]);
  return Clamped(f, "mm.input_projection", E, hp->proj_width, used, &w->proj);
}

void VisionEncoder::ClampedMatMul(const ClampedLinear& c, const float* x, int64_t n_tok, float* y) {
  if (c.clamped && (c.in_min > -FLT_MAX || c.in_max < FLT_MAX)) {
    // A clamped copy: the same input may feed other products with other ranges (q, k, v).
    std::vector<float> xc(x, x + n_tok * c.l.in);
    for (float& v : xc) v = std::min(std::max(v, c.in_min), c.in_max);
    MatMul(c.l, xc.data(), n_tok, y);
  } else {
    MatMul(c.l, x, n_tok, y);
  }
  if (c.clamped)
    for (int64_t i = 0; i < n_tok * c.l.out; ++i) y[i] = std::min(std::max(y[i], c.out_min), c.out_max);
}

Status VisionEncoder::EncodeGemma4v(const std::vector<float>& px, int32_t width, int32_t height, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const Gemma4vWeights& g = *m_.gemma4v;
  const int64_t P = hp.patch_size, nx = width / P, ny = height / P, T = nx * ny, n = hp.n_embd, K = 3 * P * P;
  const int64_t H = hp.n_head, d = n / H, M = hp.n_merge;
  if (px.size() != size_t(width) * size_t(height) * 3 || nx % M != 0 || ny % M != 0 || nx > g.pos_size || ny > g.pos_size)
    return InvalidArgument("gemma4v: a " + std::to_string(width) + " x " + std::to_string(height) +
                           " input is no whole grid of pooled patches within the position tables");
  // im2col of the pixels scaled to [-1, 1] (x * 2 - 1, as the graph's scale_bias).
  std::vector<float> cols(size_t(T * K));
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t py = p / nx, px0 = p % nx;
      float* c = cols.data() + p * K;
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t ky = 0; ky < P; ++ky)
          for (int64_t kx = 0; kx < P; ++kx)
            c[(ch * P + ky) * P + kx] = px[size_t(((py * P + ky) * width + px0 * P + kx) * 3 + ch)] * 2.0f - 1.0f;
    }
  });
  std::vector<float> x(size_t(T * n));
  MatMul(g.patch, cols.data(), T, x.data());
  cols = {};
  // Positions by axis (rope2d.h: 0 the row, 1 the column).
  std::vector<int32_t> pos[2] = {std::vector<int32_t>(size_t(T)), std::vector<int32_t>(size_t(T))};
  std::vector<int32_t>&pos_y = pos[0], &pos_x = pos[1];
  for (int64_t p = 0; p < T; ++p) {
    pos_x[size_t(p)] = int32_t(p % nx);
    pos_y[size_t(p)] = int32_t(p / nx);
    float* xp = x.data() + p * n;
    const float* ex = g.pos.data() + pos_x[size_t(p)] * n;
    const float* ey = g.pos.data() + (g.pos_size + pos_y[size_t(p)]) * n;
    for (int64_t i = 0; i < n; ++i) xp[i] += ex[i];
    for (int64_t i = 0; i < n; ++i) xp[i] += ey[i];
  }
  const float eps = hp.eps;
  auto rms = [&](float* v, int64_t rows, int64_t dim, const std::vector<float>& w) {
    const int64_t per = rows / T;  // rows per token (heads or 1)
    pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
      RmsRows(v + b * per * dim, (e - b) * per, dim, w.empty() ? nullptr : w.data(), eps);
    });
  };
  if (!g.pre_ln.empty()) rms(x.data(), T, n, g.pre_ln);

  // NEOX halves: the column on the first half of each head, the row on the second.
  const int32_t hd = int32_t(d / 2);
  const std::vector<RopeSegment> rope = {RopeSegment{0, hd, 1, 1.0f, true}, RopeSegment{hd, hd, 0, 1.0f, true}};
  std::vector<float> h(x.size()), q(x.size()), k(x.size()), v(x.size()), att(x.size());
  std::vector<float> gate(size_t(T * hp.n_ff)), up(gate.size());
  for (const Gemma4vBlock& b : g.blocks) {
    h = x;
    rms(h.data(), T, n, b.ln1);
    ClampedMatMul(b.q, h.data(), T, q.data());
    ClampedMatMul(b.k, h.data(), T, k.data());
    ClampedMatMul(b.v, h.data(), T, v.data());
    rms(q.data(), T * H, d, b.q_norm);
    rms(k.data(), T * H, d, b.k_norm);
    ApplyRope2D(rope, g.rope_theta, pos, T, H, d, q.data());
    ApplyRope2D(rope, g.rope_theta, pos, T, H, d, k.data());
    rms(v.data(), T * H, d, {});
    Attention(q.data(), k.data(), v.data(), T, att.data(), 1.0f);
    ClampedMatMul(b.o, att.data(), T, h.data());
    rms(h.data(), T, n, b.attn_post);
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    h = x;
    rms(h.data(), T, n, b.ln2);
    ClampedMatMul(b.gate, h.data(), T, gate.data());
    ClampedMatMul(b.up, h.data(), T, up.data());
    Gelu(gate.data(), int64_t(gate.size()));  // ggml's geglu: gelu(gate) * up through the F16 table
    for (size_t i = 0; i < gate.size(); ++i) gate[i] *= up[i];
    ClampedMatMul(b.down, gate.data(), T, h.data());
    rms(h.data(), T, n, b.ffn_post);
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    if (b.out_scale != 1.0f)
      for (float& e : x) e *= b.out_scale;
  }
  if (!g.post_ln.empty()) rms(x.data(), T, n, g.post_ln);

  // M x M average pooling (the sum in row order, then / M^2), times sqrt(width), the
  // standardization, an RMS norm without weight, then the projection.
  const int64_t ox = nx / M, oy = ny / M, NT = ox * oy;
  std::vector<float> pooled(size_t(NT * n), 0.0f);
  const float sq = std::sqrt(float(n));
  for (int64_t t = 0; t < NT; ++t) {
    const int64_t ty = t / ox, tx = t % ox;
    float* dst = pooled.data() + t * n;
    for (int64_t ky = 0; ky < M; ++ky)
      for (int64_t kx = 0; kx < M; ++kx) {
        const float* src = x.data() + ((ty * M + ky) * nx + tx * M + kx) * n;
        for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      }
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = dst[i] / float(M * M) * sq;
      if (!g.std_bias.empty()) dst[i] = (dst[i] - g.std_bias[size_t(i)]) * g.std_scale[size_t(i)];
    }
    RmsRows(dst, 1, n, nullptr, eps);
  }
  embd->assign(size_t(NT) * size_t(hp.proj_width), 0.0f);
  ClampedMatMul(g.proj, pooled.data(), NT, embd->data());
  return Status::Ok();
}

}  // namespace zf::vision

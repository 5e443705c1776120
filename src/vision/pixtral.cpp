// Pixtral's vision encoder (Pixtral 12B, Mistral Small 3.1) as libmtmd runs it (clip.cpp's
// PIXTRAL loading, models/pixtral.cpp): an image of its own size (whole 16 x 16 patches, per
// Tiling::kDynamic), the patch convolution without bias, RMS pre-norm, ViT blocks with RMS
// norms, 2D rotary positions on q and k (rope2d.h's Pixtral layout, base 10000), attention
// over all patches, a SiLU-gated MLP; then, when the file has mm.patch_merger (Mistral Small
// 3.1), an RMS norm times mm.input_norm and each n_merge x n_merge block unfolded channel-major
// (torch's unfold: element c * M^2 + ky * M + kx) through mm.patch_merger; mm.1, GELU, mm.2;
// and v.token_embd.img_break appended after each row of tokens but the last.
#include <algorithm>
#include <cmath>

#include "engine/thread_pool.h"
#include "gguf/gguf.h"
#include "vision/encoder.h"
#include "vision/mmproj_tensors.h"
#include "vision/preprocess.h"
#include "vision/rope2d.h"

namespace zf::vision {
namespace {

// NAME.weight as `out` rows of `in`, and NAME.bias when the file has it.
Status MatrixMaybeBias(const gguf::GgufFile& f, const std::string& name, int64_t in, int64_t out,
                       std::set<std::string>* used, Linear* l) {
  ZF_RETURN_IF_ERROR(Matrix(f, name, in, out, used, l, false));
  if (f.FindTensor(name + ".bias") != nullptr) ZF_RETURN_IF_ERROR(Floats(f, name + ".bias", {out}, used, &l->b));
  return Status::Ok();
}

// A 2D tensor's size along dimension `dim` (ggml order), or a message naming it.
Status Dim(const gguf::GgufFile& f, const std::string& name, int dim, int64_t* out) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return FormatError("mmproj: tensor '" + name + "' is missing");
  if (t->n_dims != 2) return FormatError("mmproj: tensor '" + name + "' has shape " + gguf::ShapeString(t->ne, t->n_dims) + ", 2 dimensions expected");
  *out = t->ne[dim];
  return Status::Ok();
}

}  // namespace

Status LoadPixtral(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, std::set<std::string>* used) {
  const int64_t E = hp->n_embd, P = hp->patch_size, M = hp->n_merge;
  ZF_RETURN_IF_ERROR(Matrix(f, "v.patch_embd", 3 * P * P, E, used, &m->patch, false, {P, P, 3, E}));
  if (f.FindTensor("v.pre_ln.weight") != nullptr) ZF_RETURN_IF_ERROR(Floats(f, "v.pre_ln.weight", {E}, used, &m->pre_ln.w));
  // RMS norms and a SiLU-gated MLP, no biases.
  VitBlockLayout layout;
  layout.norm_bias = false;
  layout.linear_bias = false;
  layout.gated = true;
  ZF_RETURN_IF_ERROR(LoadVitBlocks(f, *hp, layout, used, &m->blocks));
  if (M > 1) {
    ZF_RETURN_IF_ERROR(Floats(f, "mm.input_norm.weight", {E}, used, &m->input_norm));
    ZF_RETURN_IF_ERROR(Matrix(f, "mm.patch_merger", E * M * M, E, used, &m->merger, false));
  }
  int64_t hidden = 0, width = 0;
  ZF_RETURN_IF_ERROR(Dim(f, "mm.1.weight", 1, &hidden));
  ZF_RETURN_IF_ERROR(MatrixMaybeBias(f, "mm.1", E, hidden, used, &m->mm1));
  ZF_RETURN_IF_ERROR(Dim(f, "mm.2.weight", 1, &width));
  ZF_RETURN_IF_ERROR(MatrixMaybeBias(f, "mm.2", hidden, width, used, &m->proj));
  hp->proj_width = int32_t(width);
  // Required, as clip.cpp requires it for pixtral (preprocess.cpp's DynamicRows counts it).
  return Floats(f, "v.token_embd.img_break", {width}, used, &m->img_break);
}

void VisionEncoder::RmsNorm(const std::vector<float>& w, float* x, int64_t n_tok) {
  const int64_t n = m_.hparams().n_embd;
  const float eps = m_.hparams().eps;
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* xt = x + t * n;
      const double ss = SumInDouble(xt, n, true);  // ggml_rms_norm: the sum of squares in double, the scale in float
      const float scale = 1.0f / std::sqrt(float(ss / double(n)) + eps);
      for (int64_t i = 0; i < n; ++i) xt[i] = xt[i] * scale * w[size_t(i)];
    }
  });
}

Status VisionEncoder::EncodePixtral(const std::vector<float>& px, int32_t W, int32_t H, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const int64_t P = hp.patch_size, nx = W / P, ny = H / P, T = nx * ny, n = hp.n_embd, M = hp.n_merge;
  if (W <= 0 || H <= 0 || W % (P * M) != 0 || H % (P * M) != 0 || px.size() != size_t(W) * size_t(H) * 3)
    return InvalidArgument("pixels: " + std::to_string(W) + " x " + std::to_string(H) + " is no whole number of " +
                           std::to_string(P * M) + " px blocks, or " + std::to_string(px.size()) + " floats are not its RGB");
  std::vector<float> x = PatchEmbed(px, W, H);
  if (!m_.pre_ln.w.empty()) RmsNorm(m_.pre_ln.w, x.data(), T);
  // Each patch's row and column (clip.cpp's pos_h, pos_w).
  std::vector<int32_t> pos[2];
  for (int64_t t = 0; t < T; ++t) {
    pos[0].push_back(int32_t(t / nx));
    pos[1].push_back(int32_t(t % nx));
  }
  const int64_t d = n / hp.n_head;
  const std::vector<RopeSegment> rope = PixtralRope(int32_t(d), hp.rope_theta);

  std::vector<float> h(x.size()), q(x.size()), k(x.size()), v(x.size()), att(x.size());
  std::vector<float> gate(size_t(T * hp.n_ff)), up(gate.size());
  for (const VitBlock& b : m_.blocks) {
    h = x;
    RmsNorm(b.ln1.w, h.data(), T);
    MatMuls({{&b.q, q.data()}, {&b.k, k.data()}, {&b.v, v.data()}}, h.data(), T);
    ApplyRope2D(rope, hp.rope_theta, pos, T, hp.n_head, d, q.data());
    ApplyRope2D(rope, hp.rope_theta, pos, T, hp.n_head, d, k.data());
    Attention(q.data(), k.data(), v.data(), T, att.data());
    MatMul(b.o, att.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    h = x;
    RmsNorm(b.ln2.w, h.data(), T);
    MatMuls({{&b.gate, gate.data()}, {&b.up, up.data()}}, h.data(), T);
    pool_->ParallelFor(int64_t(gate.size()), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) gate[size_t(i)] = gate[size_t(i)] / (1.0f + std::exp(-gate[size_t(i)])) * up[size_t(i)];
    });
    MatMul(b.down, gate.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
  }

  // The patch merger: tokens of M x M patches, each block channel-major (torch's unfold).
  const int64_t tx = nx / M, ty = ny / M, NT = tx * ty;
  std::vector<float> tok;
  if (M > 1) {
    RmsNorm(m_.input_norm, x.data(), T);
    std::vector<float> unfolded(size_t(NT * n * M * M));
    for (int64_t t = 0; t < NT; ++t) {
      const int64_t oy = t / tx, ox = t % tx;
      float* dst = unfolded.data() + t * n * M * M;
      for (int64_t ky = 0; ky < M; ++ky)
        for (int64_t kx = 0; kx < M; ++kx) {
          const float* src = x.data() + ((oy * M + ky) * nx + ox * M + kx) * n;
          for (int64_t c = 0; c < n; ++c) dst[c * M * M + ky * M + kx] = src[c];
        }
    }
    tok.resize(size_t(NT * n));
    MatMul(m_.merger, unfolded.data(), NT, tok.data());
  } else {
    tok = std::move(x);
  }
  std::vector<float> mid(size_t(NT * m_.mm1.out));
  MatMul(m_.mm1, tok.data(), NT, mid.data());
  Gelu(mid.data(), int64_t(mid.size()));
  const int64_t Wd = hp.proj_width;
  std::vector<float> out(size_t(NT * Wd));
  MatMul(m_.proj, mid.data(), NT, out.data());
  // Each row of tokens, then [IMG_BREAK] after every row but the last.
  embd->clear();
  embd->reserve(size_t(DynamicRows(hp, W, H) * Wd));
  for (int64_t r = 0; r < ty; ++r) {
    embd->insert(embd->end(), out.begin() + r * tx * Wd, out.begin() + (r + 1) * tx * Wd);
    if (r + 1 < ty) embd->insert(embd->end(), m_.img_break.begin(), m_.img_break.end());
  }
  return Status::Ok();
}

}  // namespace zf::vision

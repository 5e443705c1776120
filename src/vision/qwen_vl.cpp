// Qwen2.5-VL's vision encoder: see qwen_vl.h.
#include "vision/qwen_vl.h"

#include <algorithm>
#include <cmath>

#include "engine/thread_pool.h"
#include "gguf/gguf.h"
#include "vision/encoder.h"
#include "vision/mmproj_tensors.h"

namespace zf::vision {

Status QwenVlHparams(const gguf::GgufFile& f, VisionHparams* hp, QwenVlWeights* w) {
  if (hp->n_merge != 2)
    return Unsupported("mmproj: clip.vision.spatial_merge_size " + std::to_string(hp->n_merge) + " (" + hp->projector +
                       "'s merger takes 2 x 2 blocks)");
  // Only Qwen2.5-VL's windows need the pattern (clip.cpp requires it for qwen25vl alone).
  int32_t wa = 0;
  const bool windows = hp->spec->vit == Vit::kQwen25vl;
  if (windows && (!f.GetI32("clip.vision.n_wa_pattern", &wa).ok() || wa < 0))
    return FormatError("mmproj: clip.vision.n_wa_pattern is missing or negative (" + hp->projector + " requires it)");
  w->n_wa_pattern = wa;
  w->layer_norm = hp->spec->vit == Vit::kQwen3vl;
  if ((hp->n_embd / hp->n_head) % 4 != 0)
    return FormatError("mmproj: the head width " + std::to_string(hp->n_embd / hp->n_head) +
                       " is no multiple of 4 (2D rotary sections)");
  // libmtmd's set_limit_image_tokens(8, 4096) for the Qwen-VL types.
  const int32_t area = hp->patch_size * hp->patch_size * hp->n_merge * hp->n_merge;
  hp->min_pixels = 8 * area;
  hp->max_pixels = 4096 * area;
  return Status::Ok();
}

Status LoadQwenVl(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, QwenVlWeights* w, std::set<std::string>* used) {
  const int64_t E = hp->n_embd, P = hp->patch_size;
  const bool ln = w->layer_norm;
  // Both frames' kernels [P][P][3][E]; Qwen3-VL's convolution has a bias (added once, to the sum).
  ZF_RETURN_IF_ERROR(Matrix(f, "v.patch_embd", 3 * P * P, E, used, &m->patch, ln, {P, P, 3, E}));
  const gguf::TensorInfo* t1 = nullptr;
  ZF_RETURN_IF_ERROR(Find(f, "v.patch_embd.weight.1", {P, P, 3, E}, used, &t1));
  // Matrix() appends ".weight": bind the second kernel through a copy of the first's binding.
  if (t1->type != m->patch.type) return FormatError("mmproj: v.patch_embd.weight.1's type differs from v.patch_embd.weight's");
  w->patch1 = m->patch;
  w->patch1.w = t1->data;
  w->patch1.b.clear();
  if (ln) {
    const gguf::TensorInfo* pe = f.FindTensor("v.position_embd.weight");
    const int64_t n_pos = pe != nullptr && pe->n_dims == 2 ? pe->ne[1] : 0;
    const int32_t side = int32_t(std::lround(std::sqrt(double(n_pos))));
    if (pe == nullptr || pe->ne[0] != E || n_pos == 0 || int64_t(side) * side != n_pos)
      return FormatError("mmproj: tensor 'v.position_embd.weight' is missing or not [" + std::to_string(E) +
                         ", a square number of positions]");
    ZF_RETURN_IF_ERROR(Floats(f, "v.position_embd.weight", {E, n_pos}, used, &m->pos));
    w->pos_side = side;
  }
  if (f.FindTensor("v.pre_ln.weight") != nullptr) ZF_RETURN_IF_ERROR(NormWeights(f, "v.pre_ln", E, ln, used, &m->pre_ln));
  // Qwen2.5-VL: RMS norms and a SiLU-gated MLP; Qwen3-VL: LayerNorms and up, GELU, down. Both
  // with biases; q, k, v fused in one attn_qkv when the file has it.
  VitBlockLayout layout;
  layout.norm_bias = ln;
  layout.gated = !ln;
  layout.fused_qkv = true;
  ZF_RETURN_IF_ERROR(LoadVitBlocks(f, *hp, layout, used, &m->blocks));
  ZF_RETURN_IF_ERROR(NormWeights(f, "v.post_ln", E, ln, used, &m->post_ln));
  const gguf::TensorInfo* m0 = f.FindTensor("mm.0.weight");
  const gguf::TensorInfo* m2 = f.FindTensor("mm.2.weight");
  if (m0 == nullptr || m0->n_dims != 2) return FormatError("mmproj: tensor 'mm.0.weight' is missing or not 2-dimensional");
  if (m2 == nullptr || m2->n_dims != 2) return FormatError("mmproj: tensor 'mm.2.weight' is missing or not 2-dimensional");
  const int64_t hidden = m0->ne[1], width = m2->ne[1];
  ZF_RETURN_IF_ERROR(Matrix(f, "mm.0", 4 * E, hidden, used, &w->mm0, true));
  ZF_RETURN_IF_ERROR(Matrix(f, "mm.2", hidden, width, used, &m->proj, true));
  hp->proj_width = int32_t(width);
  // Deepstack mergers: a block has one when its v.deepstack.N tensors are there (clip.cpp counts
  // them so); each gives the main merger's width.
  for (int32_t i = 0; i < hp->n_layer; ++i) {
    const std::string p = "v.deepstack." + std::to_string(i) + ".";
    if (f.FindTensor(p + "fc1.weight") == nullptr && f.FindTensor(p + "norm.weight") == nullptr) continue;
    DeepstackMerger d;
    d.layer = i;
    const gguf::TensorInfo* fc1 = f.FindTensor(p + "fc1.weight");
    const int64_t dh = fc1 != nullptr && fc1->n_dims == 2 ? fc1->ne[1] : 0;
    ZF_RETURN_IF_ERROR(Floats(f, p + "norm.weight", {4 * E}, used, &d.norm.w));
    ZF_RETURN_IF_ERROR(Floats(f, p + "norm.bias", {4 * E}, used, &d.norm.b));
    ZF_RETURN_IF_ERROR(Matrix(f, p + "fc1", 4 * E, dh, used, &d.fc1, true));
    ZF_RETURN_IF_ERROR(Matrix(f, p + "fc2", dh, width, used, &d.fc2, true));
    w->deepstack.push_back(std::move(d));
  }
  hp->n_deepstack = int32_t(w->deepstack.size());
  return Status::Ok();
}

void QwenVlWindows(int32_t pw, int32_t ph, int32_t grid, std::vector<int32_t>* idx, std::vector<int32_t>* inv,
                   std::vector<int32_t>* windows) {
  idx->assign(size_t(pw) * size_t(ph), 0);
  inv->assign(idx->size(), 0);
  windows->clear();
  int32_t dst = 0;
  for (int32_t y = 0; y < ph; y += grid)
    for (int32_t x = 0; x < pw; x += grid) {
      const int32_t wh = std::min(grid, ph - y), ww = std::min(grid, pw - x);
      for (int32_t dy = 0; dy < wh; ++dy)
        for (int32_t dx = 0; dx < ww; ++dx) {
          const int32_t src = (y + dy) * pw + x + dx;
          (*idx)[size_t(src)] = dst;
          (*inv)[size_t(dst)] = src;
          ++dst;
        }
      windows->push_back(wh * ww);
    }
}

std::vector<float> ResizePositionsAligned(const std::vector<float>& pos, int64_t n, int32_t side, int32_t nx, int32_t ny) {
  if (nx == side && ny == side) return pos;
  // ggml's bilinear upscale with ALIGN_CORNERS: the scale (out - 1) / (in - 1), no half-pixel
  // offset, the two taps clamped to the table, each output in float.
  const auto scale = [side](int32_t to) { return to > 1 && side > 1 ? float(to - 1) / float(side - 1) : float(to) / float(side); };
  const float sx = scale(nx), sy = scale(ny);
  std::vector<float> out(size_t(int64_t(nx) * ny * n));
  const auto taps = [side](float c, int64_t* i0, int64_t* i1, float* d) {
    *i0 = int64_t(std::floor(c));
    *i1 = std::clamp<int64_t>(*i0 + 1, 0, side - 1);
    *i0 = std::clamp<int64_t>(*i0, 0, side - 1);
    *d = std::clamp(c - float(*i0), 0.0f, 1.0f);
  };
  for (int32_t oy = 0; oy < ny; ++oy) {
    int64_t y0, y1;
    float dy;
    taps(float(oy) / sy, &y0, &y1, &dy);
    for (int32_t ox = 0; ox < nx; ++ox) {
      int64_t x0, x1;
      float dx;
      taps(float(ox) / sx, &x0, &x1, &dx);
      const float *a = pos.data() + (y0 * side + x0) * n, *b = pos.data() + (y0 * side + x1) * n;
      const float *c = pos.data() + (y1 * side + x0) * n, *d = pos.data() + (y1 * side + x1) * n;
      float* dst = out.data() + (int64_t(oy) * nx + ox) * n;
      for (int64_t i = 0; i < n; ++i)
        dst[i] = a[i] * (1 - dx) * (1 - dy) + b[i] * dx * (1 - dy) + c[i] * (1 - dx) * dy + d[i] * dx * dy;
    }
  }
  return out;
}

void QwenVlRope(const int32_t* py, const int32_t* px, int64_t T, int64_t n_head, int64_t d, float* x) {
  // ggml's mrope cache: each section's theta restarts at the position and is multiplied by
  // base^(-2 / n_dims) per pair in float (n_dims = d / 2).
  const int64_t half = d / 2, quarter = d / 4;
  const float theta_scale = std::pow(10000.0f, -2.0f / float(half));
  std::vector<float> cs(static_cast<size_t>(d));
  for (int64_t t = 0; t < T; ++t) {
    float th_y = float(py[t]), th_x = float(px[t]);
    for (int64_t j = 0; j < half; ++j) {
      if (j == quarter) th_x = float(px[t]);
      const float theta = j < quarter ? th_y : th_x;
      cs[size_t(2 * j)] = std::cos(theta);
      cs[size_t(2 * j + 1)] = std::sin(theta);
      th_y *= theta_scale;
      th_x *= theta_scale;
    }
    for (int64_t h = 0; h < n_head; ++h) {
      float* v = x + (t * n_head + h) * d;
      for (int64_t j = 0; j < half; ++j) {
        const float c = cs[size_t(2 * j)], s = cs[size_t(2 * j + 1)], x0 = v[j], x1 = v[j + half];
        v[j] = x0 * c - x1 * s;
        v[j + half] = x0 * s + x1 * c;
      }
    }
  }
}

Status VisionEncoder::EncodeQwenVl(const std::vector<float>& px, int32_t W, int32_t H, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const QwenVlWeights& qw = *m_.qwen_vl;
  const int64_t P = hp.patch_size, nx = W / P, ny = H / P, T = nx * ny, n = hp.n_embd, K = 3 * P * P;
  if (W <= 0 || H <= 0 || W % (2 * P) != 0 || H % (2 * P) != 0 || px.size() != size_t(W) * size_t(H) * 3)
    return InvalidArgument("pixels: " + std::to_string(W) + " x " + std::to_string(H) + " is no whole number of " +
                           std::to_string(2 * P) + " px blocks, or " + std::to_string(px.size()) + " floats are not its RGB");
  const int32_t pw = int32_t(nx / 2), ph = int32_t(ny / 2);
  const bool windowed = qw.n_wa_pattern > 0;
  std::vector<int32_t> idx, inv, windows;
  if (windowed) {
    QwenVlWindows(pw, ph, std::max(1, qw.window_px / int32_t(P) / 2), &idx, &inv, &windows);
  } else {
    idx.resize(size_t(pw) * size_t(ph));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
    inv = idx;
  }
  // Patches in the encoder's order: merged blocks in window order (raster without windows),
  // each block's four patches row by row; their rows and columns for the rotary positions.
  std::vector<int32_t> pos_y(static_cast<size_t>(T)), pos_x(static_cast<size_t>(T));
  for (int64_t g = 0; g < int64_t(pw) * ph; ++g) {
    const int32_t src = inv[size_t(g)], by = src / pw, bx = src % pw;
    for (int32_t k = 0; k < 4; ++k) {
      pos_y[size_t(g * 4 + k)] = 2 * by + k / 2;
      pos_x[size_t(g * 4 + k)] = 2 * bx + k % 2;
    }
  }
  // im2col: per patch [c][ky][kx], the convolution weight's layout.
  std::vector<float> cols(size_t(T * K));
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t y0 = pos_y[size_t(p)] * P, x0 = pos_x[size_t(p)] * P;
      float* c = cols.data() + p * K;
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t ky = 0; ky < P; ++ky)
          for (int64_t kx = 0; kx < P; ++kx) c[(ch * P + ky) * P + kx] = px[size_t(((y0 + ky) * W + x0 + kx) * 3 + ch)];
    }
  });
  std::vector<float> x(size_t(T * n)), h(x.size());
  MatMul(m_.patch, cols.data(), T, x.data());
  MatMul(qw.patch1, cols.data(), T, h.data());  // the same still frame through the second kernel
  for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
  cols = {};
  if (qw.pos_side > 0) {
    // The learned table resized to the patch grid, each patch's entry in the encoder's order.
    const std::vector<float> table = ResizePositionsAligned(m_.pos, n, qw.pos_side, int32_t(nx), int32_t(ny));
    for (int64_t p = 0; p < T; ++p) {
      const float* e = table.data() + (int64_t(pos_y[size_t(p)]) * nx + pos_x[size_t(p)]) * n;
      for (int64_t i = 0; i < n; ++i) x[size_t(p * n + i)] += e[i];
    }
  }
  const auto norm = [&](const LayerNormW& w, float* rows) {
    if (qw.layer_norm) {
      LayerNorm(w, rows, T);
    } else {
      RmsNorm(w.w, rows, T);
    }
  };
  if (!m_.pre_ln.w.empty()) norm(m_.pre_ln, x.data());

  const int64_t d = n / hp.n_head;
  std::vector<int32_t> window_tokens(windows.size());  // 4 patches per merged block
  for (size_t i = 0; i < windows.size(); ++i) window_tokens[i] = 4 * windows[i];
  std::vector<float> q(x.size()), k(x.size()), v(x.size()), att(x.size());
  std::vector<float> gate(size_t(T * hp.n_ff)), up(gate.size());
  // The deepstack mergers' rows (merged tokens x width each), in block order.
  const int64_t NT = T / 4, width = m_.proj.out;
  std::vector<std::vector<float>> stacked;
  for (size_t il = 0; il < m_.blocks.size(); ++il) {
    const VitBlock& b = m_.blocks[il];
    const bool full = !windowed || (int32_t(il) + 1) % qw.n_wa_pattern == 0;
    h = x;
    norm(b.ln1, h.data());
    MatMuls({{&b.q, q.data()}, {&b.k, k.data()}, {&b.v, v.data()}}, h.data(), T);
    pool_->ParallelFor(T, [&](int64_t lo, int64_t hi) {
      QwenVlRope(pos_y.data() + lo, pos_x.data() + lo, hi - lo, hp.n_head, d, q.data() + lo * n);
      QwenVlRope(pos_y.data() + lo, pos_x.data() + lo, hi - lo, hp.n_head, d, k.data() + lo * n);
    });
    // The window mask keeps each window's patches among themselves: attention per window
    // (ggml's kernel skips the masked keys, so the sums are the same).
    Attention(q.data(), k.data(), v.data(), T, att.data(), 0.0f, full ? nullptr : &window_tokens);
    MatMul(b.o, att.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    h = x;
    norm(b.ln2, h.data());
    if (b.gate.w != nullptr) {
      MatMuls({{&b.up, up.data()}, {&b.gate, gate.data()}}, h.data(), T);
      pool_->ParallelFor(int64_t(gate.size()), [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) gate[size_t(i)] = gate[size_t(i)] / (1.0f + std::exp(-gate[size_t(i)])) * up[size_t(i)];
      });
    } else {
      MatMul(b.up, h.data(), T, up.data());
      Gelu(up.data(), int64_t(up.size()));
      gate.swap(up);
    }
    MatMul(b.down, gate.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    for (const DeepstackMerger& ds : qw.deepstack) {
      if (ds.layer != int32_t(il)) continue;
      // The block's output as rows of 4 E (a 2 x 2 block each), LayerNorm, fc1, GELU, fc2.
      std::vector<float> in(x), mid(size_t(NT * ds.fc1.out));
      LayerNorm(ds.norm, in.data(), NT, 4 * n);
      MatMul(ds.fc1, in.data(), NT, mid.data());
      Gelu(mid.data(), int64_t(mid.size()));
      stacked.emplace_back(size_t(NT * width));
      MatMul(ds.fc2, mid.data(), NT, stacked.back().data());
    }
  }
  norm(m_.post_ln, x.data());

  // Each block's four rows are one row of 4 E: mm.0, GELU, mm.2; then back to raster order, each
  // row followed by its deepstack rows (the LM's input row: main, then each merger's).
  const int64_t hidden = qw.mm0.out, row = width * (1 + int64_t(stacked.size()));
  std::vector<float> mid(size_t(NT * hidden)), out(size_t(NT * width));
  MatMul(qw.mm0, x.data(), NT, mid.data());
  Gelu(mid.data(), int64_t(mid.size()));
  MatMul(m_.proj, mid.data(), NT, out.data());
  embd->resize(size_t(NT * row));
  for (int64_t r = 0; r < NT; ++r) {
    const int64_t src = idx[size_t(r)];
    float* dst = embd->data() + r * row;
    std::copy(out.begin() + src * width, out.begin() + (src + 1) * width, dst);
    for (size_t k = 0; k < stacked.size(); ++k)
      std::copy(stacked[k].begin() + src * width, stacked[k].begin() + (src + 1) * width, dst + (int64_t(k) + 1) * width);
  }
  return Status::Ok();
}

}  // namespace zf::vision

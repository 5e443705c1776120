#include "vision/lfm2_vl.h"

#include <algorithm>
#include <cmath>

#include "engine/thread_pool.h"
#include "gguf/gguf.h"
#include "vision/encoder.h"
#include "vision/mmproj_tensors.h"

namespace zf::vision {

Status LoadLfm2Projector(const gguf::GgufFile& f, VisionHparams* hp, Mmproj* m, std::set<std::string>* used) {
  const int64_t in = int64_t(hp->n_embd) * hp->n_merge * hp->n_merge;
  if (f.FindTensor("mm.input_norm.weight") != nullptr) ZF_RETURN_IF_ERROR(Floats(f, "mm.input_norm.weight", {in}, used, &m->input_norm));
  if (f.FindTensor("mm.input_norm.bias") != nullptr) ZF_RETURN_IF_ERROR(Floats(f, "mm.input_norm.bias", {in}, used, &m->input_norm_b));
  // The widths from the files' shapes: mm.1 [in, hidden], mm.2 [hidden, LM width].
  int64_t width[2] = {0, 0};
  const char* names[2] = {"mm.1.weight", "mm.2.weight"};
  for (int i = 0; i < 2; ++i) {
    const gguf::TensorInfo* t = f.FindTensor(names[i]);
    if (t == nullptr) return FormatError(std::string("mmproj: tensor '") + names[i] + "' is missing");
    if (t->n_dims != 2) return FormatError(std::string("mmproj: tensor '") + names[i] + "' has shape " + gguf::ShapeString(t->ne, t->n_dims));
    width[i] = t->ne[1];
  }
  ZF_RETURN_IF_ERROR(Matrix(f, "mm.1", in, width[0], used, &m->mm1, true));
  ZF_RETURN_IF_ERROR(Matrix(f, "mm.2", width[0], width[1], used, &m->proj, true));
  hp->proj_width = int32_t(width[1]);
  return Status::Ok();
}

std::vector<float> ResizePositions(const std::vector<float>& pos, int64_t n, int32_t side, int32_t nx, int32_t ny) {
  if (nx == side && ny == side) return pos;
  std::vector<float> out(size_t(int64_t(nx) * ny * n));
  // Per axis, in ggml's float arithmetic: the scale, the filter's support (at least one source
  // pixel) and each output's taps.
  struct Axis {
    float sf, support, inv;
  };
  const auto axis = [side](int32_t to) {
    const float sf = float(to) / float(side), support = std::max(1.0f, 1.0f / sf);
    return Axis{sf, support, 1.0f / support};
  };
  const Axis ax = axis(nx), ay = axis(ny);
  const auto tri = [](float v) { return std::max(1.0f - std::fabs(v), 0.0f); };
  std::vector<float> acc(static_cast<size_t>(n));
  for (int32_t oy = 0; oy < ny; ++oy) {
    const float cy = (float(oy) + 0.5f) / ay.sf;
    const int64_t y0 = std::max<int64_t>(int64_t(cy - ay.support + 0.5f), 0);
    const int64_t y1 = std::min<int64_t>(int64_t(cy + ay.support + 0.5f), side);
    for (int32_t ox = 0; ox < nx; ++ox) {
      const float cx = (float(ox) + 0.5f) / ax.sf;
      const int64_t x0 = std::max<int64_t>(int64_t(cx - ax.support + 0.5f), 0);
      const int64_t x1 = std::min<int64_t>(int64_t(cx + ax.support + 0.5f), side);
      std::fill(acc.begin(), acc.end(), 0.0f);
      float total = 0.0f;
      for (int64_t sy = y0; sy < y1; ++sy) {
        const float wy = tri((float(sy) - cy + 0.5f) * ay.inv);
        for (int64_t sx = x0; sx < x1; ++sx) {
          const float w = tri((float(sx) - cx + 0.5f) * ax.inv) * wy;
          if (w <= 0.0f) continue;
          const float* src = pos.data() + (sy * side + sx) * n;
          for (int64_t i = 0; i < n; ++i) acc[size_t(i)] += src[i] * w;
          total += w;
        }
      }
      float* dst = out.data() + (int64_t(oy) * nx + ox) * n;
      for (int64_t i = 0; i < n; ++i) dst[i] = total > 0.0f ? acc[size_t(i)] / total : acc[size_t(i)];
    }
  }
  return out;
}

std::vector<float> PixelUnshuffle(const float* x, int64_t nx, int64_t ny, int64_t m, int64_t n) {
  const int64_t tx = nx / m, NT = tx * (ny / m);
  std::vector<float> out(size_t(NT * m * m * n));
  for (int64_t t = 0; t < NT; ++t) {
    const int64_t oy = t / tx, ox = t % tx;
    float* dst = out.data() + t * m * m * n;
    for (int64_t ky = 0; ky < m; ++ky)
      for (int64_t kx = 0; kx < m; ++kx) std::copy_n(x + ((oy * m + ky) * nx + ox * m + kx) * n, n, dst + (ky * m + kx) * n);
  }
  return out;
}

Status VisionEncoder::EncodeLfm2(const std::vector<float>& px, int32_t W, int32_t H, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const int64_t P = hp.patch_size, M = hp.n_merge, n = hp.n_embd;
  if (W <= 0 || H <= 0 || W % (P * M) != 0 || H % (P * M) != 0 || px.size() != size_t(W) * size_t(H) * 3)
    return InvalidArgument("pixels: " + std::to_string(W) + "x" + std::to_string(H) + " is no whole number of " +
                           std::to_string(P * M) + " px blocks with 3 floats per pixel");
  const int64_t nx = W / P, ny = H / P, T = nx * ny;
  std::vector<float> x = PatchEmbed(px, W, H);
  const std::vector<float> pos = ResizePositions(m_.pos, n, hp.patches_per_side(), int32_t(nx), int32_t(ny));
  for (size_t i = 0; i < x.size(); ++i) x[i] += pos[i];
  if (!m_.pre_ln.w.empty()) LayerNorm(m_.pre_ln, x.data(), T);
  SiglipBlocks(&x, T);
  if (!m_.post_ln.w.empty()) LayerNorm(m_.post_ln, x.data(), T);

  const int64_t NT = (nx / M) * (ny / M), in = n * M * M;
  std::vector<float> merged = PixelUnshuffle(x.data(), nx, ny, M, n);
  // nn.LayerNorm's default eps (libmtmd's ggml_norm(1e-5)), then the optional weight and bias.
  pool_->ParallelFor(NT, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* r = merged.data() + t * in;
      NormalizeRow(r, in, 1e-5f);
      for (int64_t i = 0; i < in; ++i) {
        if (!m_.input_norm.empty()) r[i] *= m_.input_norm[size_t(i)];
        if (!m_.input_norm_b.empty()) r[i] += m_.input_norm_b[size_t(i)];
      }
    }
  });
  std::vector<float> hidden(size_t(NT * m_.mm1.out));
  MatMul(m_.mm1, merged.data(), NT, hidden.data());
  Gelu(hidden.data(), int64_t(hidden.size()));
  embd->assign(size_t(NT) * size_t(hp.proj_width), 0.0f);
  MatMul(m_.proj, hidden.data(), NT, embd->data());
  return Status::Ok();
}

}  // namespace zf::vision

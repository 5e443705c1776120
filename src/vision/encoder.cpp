#include "vision/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/thread_pool.h"
#include "quant/quant.h"
#include "vision/preprocess.h"

namespace zf::vision {
namespace {

// ggml's GELU (tanh form) on the CPU: a table indexed by the F16 input holding F16 outputs;
// identity above 10, zero below -10.
const uint16_t* GeluTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const float x = quant::Fp16ToFp32(uint16_t(i));
      t[i] = quant::Fp32ToFp16(0.5f * x * (1.0f + std::tanh(0.79788456080286535588f * x * (1.0f + 0.044715f * x * x))));
    }
    return t;
  }();
  return table.data();
}

}  // namespace

VisionEncoder::VisionEncoder(const Mmproj& mmproj, int32_t n_threads)
    : m_(mmproj), pool_(new engine::ThreadPool(std::max(1, n_threads))) {}

VisionEncoder::~VisionEncoder() = default;

void VisionEncoder::MatMul(const Linear& l, const float* x, int64_t n_tok, float* y) {
  const GgmlType at = quant::VecDotType(l.type);
  const size_t astride = RowSize(at, l.in);
  if (act_.size() < astride * size_t(n_tok)) act_.resize(astride * size_t(n_tok));
  uint8_t* act = act_.data();
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) quant::QuantizeActivations(at, x + t * l.in, act + size_t(t) * astride, l.in);
  });
  constexpr int64_t kRows = 16;  // weight rows kept in cache while every token passes
  const int64_t n_chunks = (l.out + kRows - 1) / kRows;
  pool_->ParallelFor(n_chunks, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = c * kRows, nr = std::min(kRows, l.out - r0);
      for (int64_t t = 0; t < n_tok; ++t) {
        float* yt = y + t * l.out + r0;
        quant::Gemv(l.type, l.in, l.w + size_t(r0) * l.stride, l.stride, nr, act + size_t(t) * astride, yt);
        if (!l.b.empty())
          for (int64_t i = 0; i < nr; ++i) yt[i] += l.b[size_t(r0 + i)];
      }
    }
  });
}

void VisionEncoder::LayerNorm(const LayerNormW& n, float* x, int64_t n_tok) {
  const int64_t dim = m_.hparams().n_embd;
  const float eps = m_.hparams().eps;
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* xt = x + t * dim;
      double s = 0;
      for (int64_t i = 0; i < dim; ++i) s += xt[i];
      const float mean = float(s / double(dim));
      double v = 0;
      for (int64_t i = 0; i < dim; ++i) {
        xt[i] -= mean;
        v += double(xt[i]) * double(xt[i]);
      }
      const float scale = 1.0f / std::sqrt(float(v / double(dim)) + eps);
      for (int64_t i = 0; i < dim; ++i) xt[i] = xt[i] * scale * n.w[size_t(i)] + n.b[size_t(i)];
    }
  });
}

void VisionEncoder::Gelu(float* x, int64_t n) {
  const uint16_t* table = GeluTable();
  pool_->ParallelFor((n + 1023) / 1024, [&](int64_t b, int64_t e) {
    for (int64_t i = b * 1024; i < std::min(n, e * 1024); ++i) {
      const float v = x[i];
      x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : quant::Fp16ToFp32(table[quant::Fp32ToFp16(v)]);
    }
  });
}

void VisionEncoder::Attention(const float* q, const float* k, const float* v, int64_t T, float* out) {
  const int64_t n = m_.hparams().n_embd, H = m_.hparams().n_head, d = n / H;
  const float scale = 1.0f / std::sqrt(float(d));
  // K and V per head transposed ([h][d][T]): a query's scores are d axpys over T keys and its
  // weighted sum of V one GEMV, both long SIMD runs.
  std::vector<float> kt(size_t(n * T)), vt(size_t(n * T));
  pool_->ParallelFor(H * d, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t h = r / d, j = r % d;
      for (int64_t t = 0; t < T; ++t) {
        kt[size_t(r * T + t)] = k[t * n + h * d + j];
        vt[size_t(r * T + t)] = v[t * n + h * d + j];
      }
    }
  });
  pool_->ParallelFor(T * H, [&](int64_t b, int64_t e) {
    std::vector<float> s(static_cast<size_t>(T));
    for (int64_t w = b; w < e; ++w) {
      const int64_t i = w / H, h = w % H;
      const float* qi = q + i * n + h * d;
      const float* kh = kt.data() + size_t(h * d * T);
      std::fill(s.begin(), s.end(), 0.0f);
      for (int64_t j = 0; j < d; ++j) quant::AxpyF32(T, qi[j], kh + j * T, s.data());
      // Softmax as ggml: scaled, exp(x - max) summed in double, then times 1 / sum.
      float mx = -INFINITY;
      for (int64_t j = 0; j < T; ++j) mx = std::max(mx, s[size_t(j)] *= scale);
      double sum = 0;
      for (int64_t j = 0; j < T; ++j) sum += double(s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      const float inv = float(1.0 / sum);
      for (int64_t j = 0; j < T; ++j) s[size_t(j)] *= inv;
      quant::Gemv(GgmlType::F32, T, vt.data() + size_t(h * d * T), size_t(T) * sizeof(float), d, s.data(), out + i * n + h * d);
    }
  });
}

Status VisionEncoder::Encode(const Image& image, std::vector<float>* embd) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    return InvalidArgument("image: " + std::to_string(image.width) + "x" + std::to_string(image.height) + " with " +
                           std::to_string(image.rgb.size()) + " bytes is no RGB image");
  const VisionHparams& hp = m_.hparams();
  return EncodePixels(PreprocessFixedSize(image, hp.image_size, hp.mean, hp.std), embd);
}

Status VisionEncoder::EncodePixels(const std::vector<float>& px, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const int64_t S = hp.image_size, P = hp.patch_size, side = hp.patches_per_side(), T = side * side;
  const int64_t n = hp.n_embd, K = 3 * P * P;
  if (px.size() != size_t(S * S * 3))
    return InvalidArgument("pixels: " + std::to_string(px.size()) + " floats, " + std::to_string(S * S * 3) + " expected");
  // im2col: per patch [c][ky][kx], the convolution weight's layout.
  std::vector<float> cols(size_t(T * K));
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t py = p / side, px0 = p % side;
      float* c = cols.data() + p * K;
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t ky = 0; ky < P; ++ky)
          for (int64_t kx = 0; kx < P; ++kx)
            c[(ch * P + ky) * P + kx] = px[size_t(((py * P + ky) * S + px0 * P + kx) * 3 + ch)];
    }
  });
  std::vector<float> x(size_t(T * n));
  MatMul(m_.patch, cols.data(), T, x.data());
  for (size_t i = 0; i < x.size(); ++i) x[i] += m_.pos[i];
  cols = {};
  if (!m_.pre_ln.w.empty()) LayerNorm(m_.pre_ln, x.data(), T);

  std::vector<float> h(x.size()), q(x.size()), k(x.size()), v(x.size()), att(x.size()), ff(size_t(T * hp.n_ff));
  for (const VitBlock& b : m_.blocks) {
    h = x;
    LayerNorm(b.ln1, h.data(), T);
    MatMul(b.q, h.data(), T, q.data());
    MatMul(b.k, h.data(), T, k.data());
    MatMul(b.v, h.data(), T, v.data());
    Attention(q.data(), k.data(), v.data(), T, att.data());
    MatMul(b.o, att.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    h = x;
    LayerNorm(b.ln2, h.data(), T);
    MatMul(b.up, h.data(), T, ff.data());
    Gelu(ff.data(), int64_t(ff.size()));
    MatMul(b.down, ff.data(), T, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
  }
  if (!m_.post_ln.w.empty()) LayerNorm(m_.post_ln, x.data(), T);

  // Average pooling n_merge x n_merge over the patch grid (sum in row order, then / k^2), RMS
  // norm (mean square summed in double) times the soft-embedding weight.
  const int64_t M = hp.n_merge, ts = hp.tokens_per_side(), NT = ts * ts;
  std::vector<float> pooled(size_t(NT * n));
  pool_->ParallelFor(NT, [&](int64_t b, int64_t e) {
    std::vector<float> acc(static_cast<size_t>(n));
    for (int64_t t = b; t < e; ++t) {
      const int64_t oy = t / ts, ox = t % ts;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t ky = 0; ky < M; ++ky)
        for (int64_t kx = 0; kx < M; ++kx) {
          const float* src = x.data() + ((oy * M + ky) * side + ox * M + kx) * n;
          for (int64_t i = 0; i < n; ++i) acc[size_t(i)] += src[i];
        }
      float* dst = pooled.data() + t * n;
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = acc[size_t(i)] / float(M * M);
        ss += double(dst[i]) * double(dst[i]);
      }
      const float scale = 1.0f / std::sqrt(float(ss / double(n)) + hp.eps);
      for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] * scale * m_.soft_norm[size_t(i)];
    }
  });
  embd->assign(size_t(NT) * size_t(hp.proj_width), 0.0f);
  MatMul(m_.proj, pooled.data(), NT, embd->data());
  return Status::Ok();
}

}  // namespace zf::vision

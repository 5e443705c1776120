#include "vision/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/thread_pool.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "quant/f16_gemm.h"
#include "vision/lfm2_vl.h"
#include "vision/softmax.h"
#include "vision/preprocess.h"

namespace zf::vision {

VisionEncoder::VisionEncoder(const Mmproj& mmproj, int32_t n_threads)
    : m_(mmproj), pool_(new engine::ThreadPool(std::max(1, n_threads))) {}

VisionEncoder::~VisionEncoder() = default;

void VisionEncoder::MatMuls(std::initializer_list<Product> products, const float* x, int64_t n_tok) {
#if defined(__x86_64__) || defined(_M_X64)
  constexpr int64_t kRows = 16, kTok = 64;  // a task: 16 weight rows x 64 tokens
  const int64_t in = products.begin()->l->in;
  bool f16 = n_tok >= 4 && quant::f16::Available();
  for (const Product& p : products) f16 = f16 && p.l->type == GgmlType::F16 && p.l->in == in;
  if (f16) {
    // F16 weights, many tokens: activations rounded to F16 once (as ggml's F16 products take
    // them) for every product of this input, and quant's F16 GEMM on 16-row x 64-token tiles
    // (any width: Qwen-VL's 588-wide patches too), all products' tiles in one task list.
    if (f16_in_.size() < size_t(n_tok * in)) f16_in_.resize(size_t(n_tok * in));
    pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
      std::copy(x + b * in, x + e * in, f16_in_.data() + b * in);
      quant::f16::avx2::RoundToF16(f16_in_.data() + b * in, (e - b) * in);
    });
    const Product* ps = products.begin();
    const int64_t n_p = int64_t(products.size());
    std::vector<int64_t> first_rc(size_t(n_p) + 1, 0);  // product i's row blocks: [first_rc[i], first_rc[i + 1])
    for (size_t i = 0; i < size_t(n_p); ++i) first_rc[i + 1] = first_rc[i] + (ps[i].l->out + kRows - 1) / kRows;
    const int64_t n_rc = first_rc.back(), n_tc = (n_tok + kTok - 1) / kTok;
    // Token blocks outer: one block's F16 rows stay in cache across every product's row blocks.
    pool_->ParallelForEach(n_rc * n_tc, [&](int64_t c, int32_t) {
      const int64_t rc = c % n_rc;
      size_t i = 0;
      while (rc >= first_rc[i + 1]) ++i;
      const Linear& l = *ps[i].l;
      float* y = ps[i].y;
      const int64_t r0 = (rc - first_rc[i]) * kRows, nr = std::min(kRows, l.out - r0);
      const int64_t t0 = (c / n_rc) * kTok, nt = std::min(kTok, n_tok - t0);
      const uint16_t* w = reinterpret_cast<const uint16_t*>(l.w) + r0 * (int64_t(l.stride) / 2);
      quant::f16::Gemm(in, w, int64_t(l.stride) / 2, nr, f16_in_.data() + t0 * in, in, nt, y + t0 * l.out + r0, l.out);
      if (!l.b.empty())
        for (int64_t t = t0; t < t0 + nt; ++t)
          for (int64_t j = 0; j < nr; ++j) y[t * l.out + r0 + j] += l.b[size_t(r0 + j)];
    });
    return;
  }
#endif
  for (const Product& p : products) MatMul(*p.l, x, n_tok, p.y);
}

void VisionEncoder::MatMul(const Linear& l, const float* x, int64_t n_tok, float* y) {
  constexpr int64_t kRows = 16, kTok = 64;  // a task: 16 weight rows x 64 tokens
  const int64_t n_rc = (l.out + kRows - 1) / kRows, n_tc = (n_tok + kTok - 1) / kTok;
  auto add_bias = [&](int64_t r0, int64_t nr, int64_t t0, int64_t nt) {
    if (l.b.empty()) return;
    for (int64_t t = t0; t < t0 + nt; ++t)
      for (int64_t i = 0; i < nr; ++i) y[t * l.out + r0 + i] += l.b[size_t(r0 + i)];
  };
#if defined(__x86_64__) || defined(_M_X64)
  if (l.type == GgmlType::F16 && n_tok >= 4 && quant::f16::Available()) {
    MatMuls({{&l, y}}, x, n_tok);
    return;
  }
#endif
  const GgmlType at = quant::VecDotType(l.type);
  const size_t astride = RowSize(at, l.in);
  if (act_.size() < astride * size_t(n_tok)) act_.resize(astride * size_t(n_tok));
  uint8_t* act = act_.data();
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) quant::QuantizeActivations(at, x + t * l.in, act + size_t(t) * astride, l.in);
  });
  const bool q8_gemm = l.type == GgmlType::Q8_0 && n_tok >= 4;  // each weight block loaded once per tile
  pool_->ParallelForEach(n_rc * n_tc, [&](int64_t c, int32_t) {
    const int64_t r0 = (c % n_rc) * kRows, nr = std::min(kRows, l.out - r0);
    const int64_t t0 = (c / n_rc) * kTok, nt = std::min(kTok, n_tok - t0);
    const uint8_t* w = l.w + size_t(r0) * l.stride;
    if (q8_gemm) {
      quant::GemmQ8_0(l.in, w, l.stride, nr, act + size_t(t0) * astride, astride, nt, y + t0 * l.out + r0, l.out);
    } else {
      for (int64_t t = t0; t < t0 + nt; ++t)
        quant::Gemv(l.type, l.in, w, l.stride, nr, act + size_t(t) * astride, y + t * l.out + r0);
    }
    add_bias(r0, nr, t0, nt);
  });
}

double SumInDouble(const float* x, int64_t n, bool squares) {
  // Four chains of double adds (one chain waits out each add's latency: 1% of an encode).
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) s[j] += squares ? double(x[i + j]) * double(x[i + j]) : double(x[i + j]);
  for (; i < n; ++i) s[0] += squares ? double(x[i]) * double(x[i]) : double(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

void NormalizeRow(float* x, int64_t dim, float eps) {
  const float mean = float(SumInDouble(x, dim, false) / double(dim));
  for (int64_t i = 0; i < dim; ++i) x[i] -= mean;
  const double v = SumInDouble(x, dim, true);
  const float scale = 1.0f / std::sqrt(float(v / double(dim)) + eps);
  for (int64_t i = 0; i < dim; ++i) x[i] *= scale;
}

void VisionEncoder::LayerNorm(const LayerNormW& n, float* x, int64_t n_tok, int64_t width) {
  const int64_t dim = width > 0 ? width : m_.hparams().n_embd;
  const float eps = m_.hparams().eps;
  pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* xt = x + t * dim;
      NormalizeRow(xt, dim, eps);
      for (int64_t i = 0; i < dim; ++i) xt[i] = xt[i] * n.w[size_t(i)] + n.b[size_t(i)];
    }
  });
}

void VisionEncoder::Gelu(float* x, int64_t n) {
  const uint16_t* table = quant::f16::GeluTable();
#if defined(__x86_64__) || defined(_M_X64)
  if (quant::f16::Available()) {  // the same values with F16C's conversions
    pool_->ParallelFor((n + 1023) / 1024, [&](int64_t b, int64_t e) {
      quant::f16::avx2::GeluF16(x + b * 1024, std::min(n, e * 1024) - b * 1024, table);
    });
    return;
  }
#endif
  pool_->ParallelFor((n + 1023) / 1024, [&](int64_t b, int64_t e) {
    for (int64_t i = b * 1024; i < std::min(n, e * 1024); ++i) {
      const float v = x[i];
      x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : quant::Fp16ToFp32(table[quant::Fp32ToFp16(v)]);
    }
  });
}

void VisionEncoder::Attention(const float* q, const float* k, const float* v, int64_t T, float* out, float scale_qk,
                              const std::vector<int32_t>* segments) {
  // As libmtmd runs it on the CPU (flash attention, its tiled kernel): K and V cast to F16, Q,
  // the scores, the probabilities and the sums in F32. Segments (Qwen2.5-VL's windows) attend
  // among themselves, all of them in one pass over the threads.
  const int64_t n = m_.hparams().n_embd, H = m_.hparams().n_head, d = n / H;
  const float scale = scale_qk != 0.0f ? scale_qk : 1.0f / std::sqrt(float(d));
  struct Segment {
    int64_t t0, len, tp;  // first token, tokens, tokens padded to 16 (the GEMM's k)
    size_t buf;           // offset of its heads' K and V^T in k16_ / vt16_
  };
  std::vector<Segment> seg;
  size_t buf = 0;
  int64_t max_tp = 0;
  for (int64_t t0 = 0, i = 0; t0 < T; ++i) {
    const int64_t len = segments != nullptr ? int64_t((*segments)[size_t(i)]) : T, tp = (len + 15) / 16 * 16;
    seg.push_back({t0, len, tp, buf});
    buf += size_t(H * d * tp);
    max_tp = std::max(max_tp, tp);
    t0 += len;
  }
  // Kept across calls: fresh buffers of this size cost page faults (zeroed huge pages) each time.
  if (k16_.size() < buf) k16_.resize(buf);
  if (vt16_.size() < buf) vt16_.resize(buf);
#if defined(__x86_64__) || defined(_M_X64)
  if (quant::f16::Available() && d % 8 == 0) {
    // V per head transposed, F16 [h][d][tp] (zero padding); K per head the same way (scores as
    // broadcast FMAs over d: no horizontal sums, whatever d is).
    const int64_t n_sh = int64_t(seg.size()) * H;
    pool_->ParallelFor(n_sh, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const Segment& g = seg[size_t(w / H)];
        const int64_t h = w % H, o = g.t0 * n + h * d;
        uint16_t* kt = k16_.data() + g.buf + size_t(h * d * g.tp);
        uint16_t* vt = vt16_.data() + g.buf + size_t(h * d * g.tp);
        quant::f16::avx2::TransposeToF16(k + o, n, g.len, d, kt, g.tp);
        quant::f16::avx2::TransposeToF16(v + o, n, g.len, d, vt, g.tp);
        for (int64_t j = 0; j < d; ++j) {
          std::fill(kt + j * g.tp + g.len, kt + (j + 1) * g.tp, uint16_t(0));
          std::fill(vt + j * g.tp + g.len, vt + (j + 1) * g.tp, uint16_t(0));
        }
      }
    });
    // Per segment, head and block of 32 queries: scores = Q (F32) x K^T (F16, [d][tp]), the
    // softmax's numerators, P (F32) x V (F16 rows of V^T), then each output row times 1 / its
    // row's sum (as ggml's flash attention divides at the end): two F16-weight GEMMs whose
    // activations stay F32. Tasks go to whichever thread is free (the load elsewhere on the machine).
    constexpr int64_t kBlock = 32;
    std::vector<int64_t> first_task(seg.size() + 1, 0);  // segment i's tasks: [first_task[i], first_task[i + 1])
    for (size_t i = 0; i < seg.size(); ++i) first_task[i + 1] = first_task[i] + H * ((seg[i].len + kBlock - 1) / kBlock);
    std::vector<std::vector<float>> scratch(size_t(pool_->size()));
    pool_->ParallelForEach(first_task.back(), [&](int64_t w, int32_t ith) {
      std::vector<float>& s = scratch[size_t(ith)];
      if (s.empty()) s.resize(size_t(kBlock * max_tp));
      const size_t si = size_t(std::upper_bound(first_task.begin(), first_task.end(), w) - first_task.begin()) - 1;
      const Segment& g = seg[si];
      const int64_t n_blocks = (g.len + kBlock - 1) / kBlock, local = w - first_task[si];
      const int64_t h = local / n_blocks, q0 = (local % n_blocks) * kBlock, nq = std::min(kBlock, g.len - q0);
      const uint16_t* kt = k16_.data() + g.buf + size_t(h * d * g.tp);
      const uint16_t* vt = vt16_.data() + g.buf + size_t(h * d * g.tp);
      float inv[kBlock];
      quant::f16::GemmT(d, kt, g.tp, g.tp, q + (g.t0 + q0) * n + h * d, n, nq, s.data(), g.tp);
      for (int64_t i = 0; i < nq; ++i) {
        float* row = s.data() + i * g.tp;
        inv[i] = float(1.0 / SoftmaxNumerators(row, g.len, scale));
        std::fill(row + g.len, row + g.tp, 0.0f);
      }
      float* o = out + (g.t0 + q0) * n + h * d;
      quant::f16::Gemm(g.tp, vt, g.tp, d, s.data(), g.tp, nq, o, n);
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < d; ++j) o[i * n + j] *= inv[i];
    });
    return;
  }
#endif
  // Portable: K as F16 rows [h][len][d], V^T as F16 [h][d][tp], one query and head at a time.
  for (const Segment& g : seg) {
    uint16_t* k16 = k16_.data() + g.buf;
    uint16_t* vt16 = vt16_.data() + g.buf;
    const float *qs = q + g.t0 * n, *ks = k + g.t0 * n, *vs = v + g.t0 * n;
    float* os = out + g.t0 * n;
    const int64_t L = g.len, Tp = g.tp;
    pool_->ParallelFor(H, [&](int64_t b, int64_t e) {
      for (int64_t h = b; h < e; ++h)
        for (int64_t t = 0; t < L; ++t)
          for (int64_t j = 0; j < d; ++j) {
            k16[size_t((h * L + t) * d + j)] = quant::Fp32ToFp16(ks[t * n + h * d + j]);
            vt16[size_t((h * d + j) * Tp + t)] = quant::Fp32ToFp16(vs[t * n + h * d + j]);
          }
    });
    pool_->ParallelFor(L * H, [&](int64_t b, int64_t e) {
      std::vector<float> s(static_cast<size_t>(Tp));
      for (int64_t w = b; w < e; ++w) {
        const int64_t i = w / H, h = w % H;
        const float* qi = qs + i * n + h * d;
        for (int64_t t = 0; t < L; ++t) {
          float acc = 0.0f;
          const uint16_t* kr = k16 + size_t((h * L + t) * d);
          for (int64_t j = 0; j < d; ++j) acc += qi[j] * quant::Fp16ToFp32(kr[j]);
          s[size_t(t)] = acc;
        }
        const float inv = float(1.0 / SoftmaxNumerators(s.data(), L, scale));
        for (int64_t t = 0; t < L; ++t) s[size_t(t)] *= inv;
        for (int64_t j = 0; j < d; ++j) {
          const uint16_t* vr = vt16 + size_t((h * d + j) * Tp);
          float acc = 0.0f;
          for (int64_t t = 0; t < L; ++t) acc += s[size_t(t)] * quant::Fp16ToFp32(vr[t]);
          os[i * n + h * d + j] = acc;
        }
      }
    });
  }
}

Status VisionEncoder::Encode(const Image& image, std::vector<float>* embd, TileGrid* grid) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    return InvalidArgument("image: " + std::to_string(image.width) + "x" + std::to_string(image.height) + " with " +
                           std::to_string(image.rgb.size()) + " bytes is no RGB image");
  const VisionHparams& hp = m_.hparams();
  TileGrid g;
  const std::vector<Image> inputs = TileImages(hp, image, &g);
  if (grid != nullptr) *grid = g;
  // The encoder's inputs one after another, their rows concatenated in placement order.
  std::vector<float> one;
  embd->clear();
  embd->reserve(inputs.size() * size_t(hp.n_tokens()) * size_t(hp.proj_width));
  for (const Image& in : inputs) {
    if (hp.spec->vit == Vit::kGemma4v) {
      ZF_RETURN_IF_ERROR(EncodeGemma4v(Normalize(in, hp.mean, hp.std), in.width, in.height, &one));
    } else if (hp.spec->vit == Vit::kQwen25vl || hp.spec->vit == Vit::kQwen3vl) {
      ZF_RETURN_IF_ERROR(EncodeQwenVl(Normalize(in, hp.mean, hp.std), in.width, in.height, &one));
    } else if (hp.spec->vit == Vit::kLfm2) {
      ZF_RETURN_IF_ERROR(EncodeLfm2(Normalize(in, hp.mean, hp.std), in.width, in.height, &one));
    } else if (hp.spec->vit == Vit::kPixtral) {
      ZF_RETURN_IF_ERROR(EncodePixtral(Normalize(in, hp.mean, hp.std), in.width, in.height, &one));
    } else {
      ZF_RETURN_IF_ERROR(EncodePixels(Normalize(in, hp.mean, hp.std), &one));
    }
    embd->insert(embd->end(), one.begin(), one.end());
  }
  return Status::Ok();
}

std::vector<float> VisionEncoder::PatchEmbed(const std::vector<float>& px, int64_t W, int64_t H) {
  const int64_t P = m_.hparams().patch_size, nx = W / P, T = nx * (H / P), K = 3 * P * P;
  // im2col: per patch [c][ky][kx], the convolution weight's layout.
  std::vector<float> cols(size_t(T * K));
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t py = p / nx, px0 = p % nx;
      float* c = cols.data() + p * K;
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t ky = 0; ky < P; ++ky)
          for (int64_t kx = 0; kx < P; ++kx) c[(ch * P + ky) * P + kx] = px[size_t(((py * P + ky) * W + px0 * P + kx) * 3 + ch)];
    }
  });
  std::vector<float> x(size_t(T * m_.hparams().n_embd));
  MatMul(m_.patch, cols.data(), T, x.data());
  return x;
}

void VisionEncoder::SiglipBlocks(std::vector<float>* xs, int64_t T) {
  std::vector<float>& x = *xs;
  std::vector<float> h(x.size()), q(x.size()), k(x.size()), v(x.size()), att(x.size()), ff(size_t(T * m_.hparams().n_ff));
  for (const VitBlock& b : m_.blocks) {
    h = x;
    LayerNorm(b.ln1, h.data(), T);
    MatMuls({{&b.q, q.data()}, {&b.k, k.data()}, {&b.v, v.data()}}, h.data(), T);
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
}

Status VisionEncoder::EncodePixels(const std::vector<float>& px, std::vector<float>* embd) {
  const VisionHparams& hp = m_.hparams();
  const int64_t S = hp.image_size, side = hp.patches_per_side(), T = side * side, n = hp.n_embd;
  if (px.size() != size_t(S * S * 3))
    return InvalidArgument("pixels: " + std::to_string(px.size()) + " floats, " + std::to_string(S * S * 3) + " expected");
  std::vector<float> x = PatchEmbed(px, S, S);
  for (size_t i = 0; i < x.size(); ++i) x[i] += m_.pos[i];
  if (!m_.pre_ln.w.empty()) LayerNorm(m_.pre_ln, x.data(), T);
  SiglipBlocks(&x, T);
  if (!m_.post_ln.w.empty()) LayerNorm(m_.post_ln, x.data(), T);

  const int64_t M = hp.n_merge, ts = hp.tokens_per_side(), NT = ts * ts;
  if (hp.spec->merge == Merge::kPixelShuffle) {
    // Each M x M block of patches becomes one token: the block's patches concatenated, rows of
    // the block outer, columns inner (libmtmd's build_patch_merge_permute), then the projection.
    const std::vector<float> merged = PixelUnshuffle(x.data(), side, side, M, n);
    embd->assign(size_t(NT) * size_t(hp.proj_width), 0.0f);
    MatMul(m_.proj, merged.data(), NT, embd->data());
    return Status::Ok();
  }
  // Average pooling n_merge x n_merge over the patch grid (sum in row order, then / k^2), RMS
  // norm (mean square summed in double) times the soft-embedding weight.
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

#include "speech/whisper_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/thread_pool.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "quant/f16_gemm.h"

namespace zf::speech {
namespace {

// Copies a tensor's bytes (the file's offsets are not aligned) and converts 1-D data to F32.
Status LoadVec(const WhisperFile& f, const std::string& name, std::vector<int64_t> ne, std::vector<float>* out) {
  WhisperTensor t;
  ZF_RETURN_IF_ERROR(f.Get(name, ne, &t));
  if (t.type != GgmlType::F32 && t.type != GgmlType::F16)
    return FormatError("tensor '" + name + "': type " + TypeName(t.type) + " where F32 or F16 is expected");
  const int64_t n = t.ne[0] * t.ne[1] * t.ne[2];
  std::vector<uint8_t> tmp(t.data, t.data + t.nbytes);
  out->resize(size_t(n));
  quant::DequantizeRow(t.type, tmp.data(), out->data(), n);
  return Status::Ok();
}

Status LoadLinear(const WhisperFile& f, const std::string& name, int64_t in, int64_t out, bool bias, Linear* l,
                  std::vector<int64_t> ne = {}) {
  WhisperTensor t;
  if (ne.empty()) ne = {in, out};
  ZF_RETURN_IF_ERROR(f.Get(name + ".weight", ne, &t));
  if (!quant::IsSupported(t.type)) return FormatError("tensor '" + name + ".weight': type " + TypeName(t.type) + " is not supported");
  l->type = t.type;
  l->in = in;
  l->out = out;
  l->stride = RowSize(t.type, in);
  if (l->stride * size_t(out) != t.nbytes)
    return FormatError("tensor '" + name + ".weight': " + std::to_string(t.nbytes) + " bytes do not make " + std::to_string(out) + " rows of " + std::to_string(in));
  l->w.assign(t.data, t.data + t.nbytes);
  if (bias) {
    std::vector<int64_t> bne = {out};
    if (name == "encoder.conv1" || name == "encoder.conv2") bne = {1, out};
    ZF_RETURN_IF_ERROR(LoadVec(f, name + ".bias", bne, &l->b));
  }
  return Status::Ok();
}

Status LoadNorm(const WhisperFile& f, const std::string& name, int64_t n, Norm* out) {
  ZF_RETURN_IF_ERROR(LoadVec(f, name + ".weight", {n}, &out->w));
  return LoadVec(f, name + ".bias", {n}, &out->b);
}

Status LoadBlock(const WhisperFile& f, const std::string& p, int64_t n, bool cross, Block* b) {
  ZF_RETURN_IF_ERROR(LoadNorm(f, p + ".attn_ln", n, &b->attn_ln));
  ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".attn.query", n, n, true, &b->q));
  ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".attn.key", n, n, false, &b->k));
  ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".attn.value", n, n, true, &b->v));
  ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".attn.out", n, n, true, &b->o));
  if (cross) {
    ZF_RETURN_IF_ERROR(LoadNorm(f, p + ".cross_attn_ln", n, &b->cross_ln));
    ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".cross_attn.query", n, n, true, &b->cq));
    ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".cross_attn.key", n, n, false, &b->ck));
    ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".cross_attn.value", n, n, true, &b->cv));
    ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".cross_attn.out", n, n, true, &b->co));
  }
  ZF_RETURN_IF_ERROR(LoadNorm(f, p + ".mlp_ln", n, &b->mlp_ln));
  ZF_RETURN_IF_ERROR(LoadLinear(f, p + ".mlp.0", n, 4 * n, true, &b->fc1));
  return LoadLinear(f, p + ".mlp.2", 4 * n, n, true, &b->fc2);
}

inline float RoundF16(float x) { return quant::Fp16ToFp32(quant::Fp32ToFp16(x)); }

// F16 of a row of n floats: quant's conversion (F16C where the CPU has it), the same bits as
// quant::Fp32ToFp16 element by element.
inline void ToF16(const float* x, uint16_t* y, int64_t n) { quant::QuantizeActivations(GgmlType::F16, x, y, n); }

}  // namespace

Status WhisperModel::Load(const std::string& path, std::unique_ptr<WhisperModel>* out) {
  std::unique_ptr<WhisperFile> f;
  ZF_RETURN_IF_ERROR(WhisperFile::Open(path, &f));
  Status s = FromFile(*f, out);
  if (!s.ok()) return Status(s.code(), "'" + path + "': " + s.message());
  return s;
}

Status WhisperModel::FromFile(const WhisperFile& f, std::unique_ptr<WhisperModel>* out) {
  out->reset();
  std::unique_ptr<WhisperModel> m(new WhisperModel());
  m->hp_ = f.hparams();
  m->mel_filters_ = f.mel_filters();
  m->vocab_ = f.vocab();
  const WhisperHparams& hp = m->hp_;
  const int64_t na = hp.n_audio_state, nt = hp.n_text_state;
  ZF_RETURN_IF_ERROR(LoadLinear(f, "encoder.conv1", 3 * hp.n_mels, na, true, &m->conv1, {3, hp.n_mels, na}));
  ZF_RETURN_IF_ERROR(LoadLinear(f, "encoder.conv2", 3 * na, na, true, &m->conv2, {3, na, na}));
  ZF_RETURN_IF_ERROR(LoadVec(f, "encoder.positional_embedding", {na, hp.n_audio_ctx}, &m->enc_pos));
  m->enc.resize(size_t(hp.n_audio_layer));
  for (int32_t i = 0; i < hp.n_audio_layer; ++i)
    ZF_RETURN_IF_ERROR(LoadBlock(f, "encoder.blocks." + std::to_string(i), na, false, &m->enc[size_t(i)]));
  ZF_RETURN_IF_ERROR(LoadNorm(f, "encoder.ln_post", na, &m->enc_ln));
  ZF_RETURN_IF_ERROR(LoadVec(f, "decoder.positional_embedding", {nt, hp.n_text_ctx}, &m->dec_pos));
  ZF_RETURN_IF_ERROR(LoadLinear(f, "decoder.token_embedding", nt, hp.n_vocab, false, &m->tok_emb));
  m->dec.resize(size_t(hp.n_text_layer));
  for (int32_t i = 0; i < hp.n_text_layer; ++i)
    ZF_RETURN_IF_ERROR(LoadBlock(f, "decoder.blocks." + std::to_string(i), nt, true, &m->dec[size_t(i)]));
  ZF_RETURN_IF_ERROR(LoadNorm(f, "decoder.ln", nt, &m->dec_ln));
  const size_t expected = 5 + size_t(hp.n_audio_layer) * 15 + 2 + 2 + size_t(hp.n_text_layer) * 24 + 2;
  if (f.tensors().size() != expected)
    return FormatError("the file has " + std::to_string(f.tensors().size()) + " tensors, Whisper with these hparams has " +
                       std::to_string(expected));
  *out = std::move(m);
  return Status::Ok();
}

std::unique_ptr<WhisperModel> WhisperModel::EncoderOnly(const WhisperHparams& hp, const EncoderStyle& style) {
  std::unique_ptr<WhisperModel> m(new WhisperModel());
  m->hp_ = hp;
  m->style_ = style;
  return m;
}

WhisperRunner::WhisperRunner(const WhisperModel& model, int32_t n_threads)
    : m_(model), pool_(new engine::ThreadPool(std::max(1, n_threads))) {
  const WhisperHparams& hp = m_.hparams();
  const size_t L = size_t(hp.n_text_layer);
  cross_kt_.assign(L * size_t(hp.n_audio_ctx) * size_t(hp.n_text_state), 0.0f);
  cross_vt_.assign(cross_kt_.size(), 0);
  self_.kt.assign(L * size_t(hp.n_text_ctx) * size_t(hp.n_text_state), 0.0f);
  self_.vt.assign(self_.kt.size(), 0);
}

void WhisperRunner::CopyCache(const DecoderCache& src, DecoderCache* dst) const {
  const WhisperHparams& hp = m_.hparams();
  const size_t C = size_t(hp.n_text_ctx), rows = size_t(hp.n_text_layer) * size_t(hp.n_text_state);
  dst->kt.resize(rows * C);
  dst->vt.resize(rows * C);
  const size_t n = size_t(std::max(0, src.n_past));
  for (size_t r = 0; r < rows; ++r) {
    std::copy(src.kt.begin() + long(r * C), src.kt.begin() + long(r * C + n), dst->kt.begin() + long(r * C));
    std::copy(src.vt.begin() + long(r * C), src.vt.begin() + long(r * C + n), dst->vt.begin() + long(r * C));
  }
  dst->n_past = src.n_past;
}

WhisperRunner::~WhisperRunner() = default;


void WhisperRunner::MatMul(const Linear& l, const float* x, int64_t n_tok, float* y) {
#if defined(__x86_64__) || defined(_M_X64)
  if (l.type == GgmlType::F16 && n_tok >= 4 && l.in % 8 == 0 && quant::f16::Available()) {
    // Many tokens on F16 weights: activations rounded to F16 (as ggml's F16 products take them)
    // in F32, then 4x3 register tiles over 48-row chunks of the weights.
    gemm_in_.assign(x, x + n_tok * l.in);
    pool_->ParallelFor(n_tok, [&](int64_t b, int64_t e) { quant::f16::avx2::RoundToF16(gemm_in_.data() + b * l.in, (e - b) * l.in); });
    constexpr int64_t kChunk = 48;
    const int64_t n_chunks = (l.out + kChunk - 1) / kChunk;
    const uint16_t* w = reinterpret_cast<const uint16_t*>(l.w.data());
    pool_->ParallelFor(n_chunks, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        const int64_t r0 = c * kChunk, nr = std::min(kChunk, l.out - r0);
        quant::f16::Gemm(l.in, w + r0 * l.in, l.in, nr, gemm_in_.data(), l.in, n_tok, y + r0, l.out);
        if (!l.b.empty())
          for (int64_t t = 0; t < n_tok; ++t)
            for (int64_t i = 0; i < nr; ++i) y[t * l.out + r0 + i] += l.b[size_t(r0 + i)];
      }
    });
    return;
  }
#endif
  MatMulExact(l, x, n_tok, y);
}

void WhisperRunner::MatMulExact(const Linear& l, const float* x, int64_t n_tok, float* y) {
#if defined(__x86_64__) || defined(_M_X64)
  // F16 weights where quant's F16 dot product is the AVX2 kernel: the same sums over many tokens
  // with each weight row read once per three (DotRowsF16), activations rounded to F16 as the GEMV
  // path's conversion does.
  static const bool exact_f16 = quant::f16::Available() && quant::GetVecDotFn(GgmlType::F16) == &quant::avx2::VecDotF16;
  if (l.type == GgmlType::F16 && l.in % 32 == 0 && exact_f16) {
    gemm_in_.assign(x, x + n_tok * l.in);
    quant::f16::avx2::RoundToF16(gemm_in_.data(), n_tok * l.in);
    constexpr int64_t kChunk = 32;
    const int64_t n_chunks = (l.out + kChunk - 1) / kChunk;
    const uint16_t* w = reinterpret_cast<const uint16_t*>(l.w.data());
    pool_->ParallelFor(n_chunks, [&](int64_t cb, int64_t ce) {
      const int64_t r0 = cb * kChunk, nr = std::min(ce * kChunk, l.out) - r0;
      quant::f16::avx2::DotRowsF16(l.in, w + r0 * l.in, l.in, nr, gemm_in_.data(), l.in, n_tok, y + r0, l.out);
      if (!l.b.empty())
        for (int64_t t = 0; t < n_tok; ++t)
          for (int64_t i = 0; i < nr; ++i) y[t * l.out + r0 + i] += l.b[size_t(r0 + i)];
    });
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
  constexpr int64_t kRows = 16;  // weight rows kept hot in cache while every token passes
  const int64_t n_chunks = (l.out + kRows - 1) / kRows;
  pool_->ParallelFor(n_chunks, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t r0 = c * kRows, nr = std::min(kRows, l.out - r0);
      for (int64_t t = 0; t < n_tok; ++t) {
        float* yt = y + t * l.out + r0;
        quant::Gemv(l.type, l.in, l.w.data() + size_t(r0) * l.stride, l.stride, nr, act + size_t(t) * astride, yt);
        if (!l.b.empty())
          for (int64_t i = 0; i < nr; ++i) yt[i] += l.b[size_t(r0 + i)];
      }
    }
  });
}

void WhisperRunner::LayerNorm(const Norm& n, const float* x, int64_t n_tok, int64_t dim, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const float* xt = x + t * dim;
    float* yt = y + t * dim;
    double s = 0;
    for (int64_t i = 0; i < dim; ++i) s += xt[i];
    const float mean = float(s / double(dim));
    double v = 0;
    for (int64_t i = 0; i < dim; ++i) v += double(xt[i] - mean) * double(xt[i] - mean);
    const float scale = 1.0f / std::sqrt(float(v / double(dim)) + m_.style().eps);
    for (int64_t i = 0; i < dim; ++i) yt[i] = (xt[i] - mean) * scale * n.w[size_t(i)] + n.b[size_t(i)];
  }
}

void WhisperRunner::AttendHead(const float* qi, const float* kt, int64_t kt_stride, int64_t kt_head, const uint16_t* vt,
                               int64_t vstride, int64_t vstride_head, int64_t T, int64_t h, int64_t d, float scale,
                               float* out, float* s, uint16_t* p16) {
  qi += h * d;
  const float* kh = kt + h * kt_head;
  // Scores as d axpys over the transposed keys (one pass per query, SIMD over T): the same
  // F16-rounded products as ggml's K.Q, summed in another order.
  std::fill(s, s + T, 0.0f);
  for (int64_t j = 0; j < d; ++j) quant::AxpyF32(T, quant::Fp16ToFp32(quant::Fp32ToFp16(qi[j])), kh + j * kt_stride, s);
  float mx = -INFINITY;
  for (int64_t j = 0; j < T; ++j) mx = std::max(mx, s[j] *= scale);
  double sum = 0;
  for (int64_t j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - mx));
  const float inv = float(1.0 / sum);
  for (int64_t j = 0; j < T; ++j) s[j] *= inv;
  ToF16(s, p16, T);
  quant::Gemv(GgmlType::F16, T, vt + h * vstride_head, size_t(vstride) * 2, d, p16, out + h * d);
}

void WhisperRunner::Attend(const float* q, int64_t n_q, int64_t q_stride, const float* kt, int64_t kt_stride,
                           int64_t kt_head, const uint16_t* vt, int64_t vstride, int64_t vstride_head, int64_t T,
                           int32_t n_head, int64_t d, float scale, float* out, int64_t out_stride) {
  pool_->ParallelFor(n_q * n_head, [&](int64_t b, int64_t e) {
    std::vector<float> s(static_cast<size_t>(T));
    std::vector<uint16_t> p16(static_cast<size_t>(T));
    for (int64_t w = b; w < e; ++w) {
      const int64_t h = w % n_head, i = w / n_head;
      AttendHead(q + i * q_stride, kt, kt_stride, kt_head, vt, vstride, vstride_head, T, h, d, scale, out + i * out_stride,
                 s.data(), p16.data());
    }
  });
}

void WhisperRunner::GeluRow(float* x, int64_t n) {
  const uint16_t* table = quant::f16::GeluTable();
  const bool erf = m_.style().gelu_erf;
  pool_->ParallelFor(n / 64 + 1, [&](int64_t b, int64_t e) {
    const int64_t i0 = b * 64, i1 = std::min(n, e * 64);
    if (i0 >= i1) return;
    if (erf) {
      for (int64_t i = i0; i < i1; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752440f));
      return;
    }
#if defined(__x86_64__) || defined(_M_X64)
    if (quant::f16::Available()) {
      quant::f16::avx2::GeluF16(x + i0, i1 - i0, table);
      return;
    }
#endif
    for (int64_t i = i0; i < i1; ++i) {
      const float v = x[i];
      x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : quant::Fp16ToFp32(table[quant::Fp32ToFp16(v)]);
    }
  });
}

void WhisperRunner::EncoderAttentionGemm(float* q, const float* k, const float* v, float* out) {
#if defined(__x86_64__) || defined(_M_X64)
  const WhisperHparams& hp = m_.hparams();
  const int64_t T = hp.n_audio_ctx, n = hp.n_audio_state, H = hp.n_audio_head, d = n / H;
  const int64_t Tp = (T + 7) / 8 * 8;  // the probabilities' rows padded for the 8-wide kernel
  // K per head as F16 rows [T][d]; V per head transposed, F16 [d][Tp] (zero padding).
  std::vector<uint16_t> k16(size_t(H * T * d)), vt16(size_t(H * d * Tp), 0), v16(size_t(T * n));
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (int64_t h = 0; h < H; ++h) ToF16(k + t * n + h * d, k16.data() + (h * T + t) * d, d);
      ToF16(v + t * n, v16.data() + t * n, n);
    }
  });
  pool_->ParallelFor(H, [&](int64_t b, int64_t e) {
    for (int64_t h = b; h < e; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < d; ++j) vt16[size_t((h * d + j) * Tp + t)] = v16[size_t(t * n + h * d + j)];
  });
  pool_->ParallelFor(T, [&](int64_t b, int64_t e) { quant::f16::avx2::RoundToF16(q + b * n, (e - b) * n); });
  constexpr int64_t kBlock = 32;  // queries per task: scores [32][Tp] stay in L2
  const int64_t n_blocks = (T + kBlock - 1) / kBlock;
  const float scale = 1.0f / std::sqrt(float(d));
  pool_->ParallelFor(H * n_blocks, [&](int64_t b, int64_t e) {
    std::vector<float> s(size_t(kBlock * Tp), 0.0f);
    for (int64_t w = b; w < e; ++w) {
      const int64_t h = w / n_blocks, q0 = (w % n_blocks) * kBlock, nq = std::min(kBlock, T - q0);
      quant::f16::Gemm(d, k16.data() + h * T * d, d, T, q + q0 * n + h * d, n, nq, s.data(), Tp);
      for (int64_t i = 0; i < nq; ++i) {
        float* si = s.data() + i * Tp;
        quant::f16::avx2::SoftmaxF16(si, T, scale);
        for (int64_t j = T; j < Tp; ++j) si[j] = 0.0f;
      }
      quant::f16::Gemm(Tp, vt16.data() + h * d * Tp, Tp, d, s.data(), Tp, nq, out + q0 * n + h * d, n);
    }
  });
#else
  (void)q; (void)k; (void)v; (void)out;
#endif
}

void WhisperRunner::Encode(const float* mel, int32_t n_len, int32_t mel_stride, int32_t offset) {
  const WhisperHparams& hp = m_.hparams();
  const int64_t n_ctx = hp.n_audio_ctx, n_frames = 2 * n_ctx, n = hp.n_audio_state, nm = hp.n_mels;
  const int64_t d = n / hp.n_audio_head;
  // conv1 (k3, pad 1) as a product over im2col rows [frame][in_ch][3].
  std::vector<float> cols(size_t(n_frames) * size_t(3 * std::max(nm, n)));
  auto melat = [&](int64_t c, int64_t f) -> float {
    const int64_t src = offset + f;
    return f >= 0 && f < n_frames && src < n_len ? mel[c * mel_stride + src] : 0.0f;
  };
  for (int64_t f = 0; f < n_frames; ++f)
    for (int64_t c = 0; c < nm; ++c)
      for (int64_t k = 0; k < 3; ++k) cols[size_t((f * nm + c) * 3 + k)] = melat(c, f + k - 1);
  std::vector<float> y1(size_t(n_frames * n));
  MatMul(m_.conv1, cols.data(), n_frames, y1.data());
  GeluRow(y1.data(), int64_t(y1.size()));
  // conv2 (k3, stride 2, pad 1).
  for (int64_t t = 0; t < n_ctx; ++t)
    for (int64_t c = 0; c < n; ++c)
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t f = 2 * t + k - 1;
        cols[size_t((t * n + c) * 3 + k)] = f >= 0 && f < n_frames ? y1[size_t(f * n + c)] : 0.0f;
      }
  std::vector<float> x(size_t(n_ctx * n));
  MatMul(m_.conv2, cols.data(), n_ctx, x.data());
  GeluRow(x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) x[i] += m_.enc_pos[i];

  std::vector<float> h(x.size()), qb(x.size()), kb(x.size()), vb(x.size()), att(x.size()), ff(x.size() * 4);
  std::vector<float> kt(x.size());
  std::vector<uint16_t> vt16(x.size());
  for (const Block& b : m_.enc) {
    LayerNorm(b.attn_ln, x.data(), n_ctx, n, h.data());
    MatMul(b.q, h.data(), n_ctx, qb.data());
    MatMul(b.k, h.data(), n_ctx, kb.data());
    MatMul(b.v, h.data(), n_ctx, vb.data());
    if (quant::f16::Available() && d % 8 == 0) {
      EncoderAttentionGemm(qb.data(), kb.data(), vb.data(), att.data());
    } else {
      for (int64_t hd = 0; hd < hp.n_audio_head; ++hd)
        for (int64_t t = 0; t < n_ctx; ++t)
          for (int64_t j = 0; j < d; ++j) {
            kt[size_t((hd * d + j) * n_ctx + t)] = RoundF16(kb[size_t(t * n + hd * d + j)]);
            vt16[size_t((hd * d + j) * n_ctx + t)] = quant::Fp32ToFp16(vb[size_t(t * n + hd * d + j)]);
          }
      Attend(qb.data(), n_ctx, n, kt.data(), n_ctx, d * n_ctx, vt16.data(), n_ctx, d * n_ctx, n_ctx, hp.n_audio_head, d,
             1.0f / std::sqrt(float(d)), att.data(), n);
    }
    MatMul(b.o, att.data(), n_ctx, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
    LayerNorm(b.mlp_ln, x.data(), n_ctx, n, h.data());
    MatMul(b.fc1, h.data(), n_ctx, ff.data());
    GeluRow(ff.data(), int64_t(ff.size()));
    MatMul(b.fc2, ff.data(), n_ctx, h.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += h[i];
  }
  int64_t n_out = n_ctx;
  if (m_.style().pool2) {  // ggml_pool_1d(AVG, 2, 2) over positions: a trailing odd one dropped
    n_out = n_ctx / 2;
    for (int64_t t = 0; t < n_out; ++t)
      for (int64_t i = 0; i < n; ++i) x[size_t(t * n + i)] = (x[size_t(2 * t * n + i)] + x[size_t((2 * t + 1) * n + i)]) * 0.5f;
  }
  enc_out_.resize(size_t(n_out * n));
  LayerNorm(m_.enc_ln, x.data(), n_out, n, enc_out_.data());

  if (m_.dec.empty()) return;  // an encoder alone (an audio projector's)
  // Cross-attention K/V of every decoder layer, once per window.
  const int64_t nt = hp.n_text_state, dt = nt / hp.n_text_head;
  // As whisper.cpp: cross K carries d^-1/4 of the scale (the query the other d^-1/4, in the
  // softmax), both before the F16 rounding.
  const float kscale = std::pow(float(dt), -0.25f);
  std::vector<uint16_t> k16(size_t(n_ctx * nt)), v16(k16.size());
  for (size_t l = 0; l < m_.dec.size(); ++l) {
    MatMul(m_.dec[l].ck, enc_out_.data(), n_ctx, kb.data());
    MatMul(m_.dec[l].cv, enc_out_.data(), n_ctx, vb.data());
    float* ck = cross_kt_.data() + l * size_t(n_ctx * nt);
    uint16_t* cv = cross_vt_.data() + l * size_t(n_ctx * nt);
    // Scaled and converted row by row (SIMD), then transposed.
    pool_->ParallelFor(n_ctx, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        float* kr = kb.data() + t * nt;
        for (int64_t j = 0; j < nt; ++j) kr[j] *= kscale;
        ToF16(kr, k16.data() + t * nt, nt);
        quant::DequantizeRow(GgmlType::F16, k16.data() + t * nt, kr, nt);  // K rounded to F16, held as F32
        ToF16(vb.data() + t * nt, v16.data() + t * nt, nt);
      }
    });
    pool_->ParallelFor(nt, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c)
        for (int64_t t = 0; t < n_ctx; ++t) {
          ck[c * n_ctx + t] = kb[size_t(t * nt + c)];
          cv[c * n_ctx + t] = v16[size_t(t * nt + c)];
        }
    });
  }
  self_.n_past = 0;
}

Status WhisperRunner::Decode(int32_t token, float* logits) {
  const Row r{token, &self_, logits};
  return DecodeBatch(&r, 1);
}

Status WhisperRunner::CheckRows(const Row* rows, int32_t n_rows) const {
  const WhisperHparams& hp = m_.hparams();
  if (n_rows <= 0 || !rows) return InvalidArgument("DecodeBatch: no rows");
  int64_t pos = 0;
  for (int32_t i = 0; i < n_rows; ++i) {
    const Row& r = rows[i];
    if (r.token < 0 || r.token >= hp.n_vocab) return InvalidArgument("token id " + std::to_string(r.token) + " is outside [0, n_vocab)");
    if (!r.cache) return InvalidArgument("DecodeBatch: a row without a cache");
    if (i > 0 && r.cache == rows[i - 1].cache) {
      ++pos;
    } else {
      for (int32_t j = 0; j < i; ++j)
        if (rows[j].cache == r.cache) return InvalidArgument("DecodeBatch: one sequence's rows are not consecutive");
      pos = r.cache->n_past;
    }
    if (pos >= hp.n_text_ctx) return Status(Code::kContextFull, "decoder context is full (" + std::to_string(hp.n_text_ctx) + " tokens)");
  }
  return Status::Ok();
}

Status WhisperRunner::DecodeBatch(const Row* rows, int32_t n_rows) {
  ZF_RETURN_IF_ERROR(CheckRows(rows, n_rows));
  const WhisperHparams& hp = m_.hparams();
  const int64_t n = hp.n_text_state, H = hp.n_text_head, d = n / H, C = hp.n_text_ctx, A = hp.n_audio_ctx;
  const size_t cache_size = size_t(hp.n_text_layer) * size_t(C) * size_t(n);
  const int64_t R = n_rows;
  std::vector<int64_t> pos(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i) {
    const Row& r = rows[i];
    if (i > 0 && r.cache == rows[i - 1].cache) {
      pos[size_t(i)] = pos[size_t(i - 1)] + 1;
    } else {
      if (r.cache->kt.size() != cache_size) {  // a fresh cache
        r.cache->kt.assign(cache_size, 0.0f);
        r.cache->vt.assign(cache_size, 0);
      }
      pos[size_t(i)] = r.cache->n_past;
    }
  }
  const float qk_scale = std::pow(float(d), -0.25f);
  const size_t un = size_t(R * n);
  for (auto* b : {&bx_, &bh_, &bq_, &bk_, &bv_, &ba_}) b->resize(un);
  bff_.resize(4 * un);
  float *x = bx_.data(), *h = bh_.data(), *q = bq_.data(), *k = bk_.data(), *v = bv_.data(), *a = ba_.data();
  for (int64_t i = 0; i < R; ++i) {
    float* xi = x + i * n;
    quant::DequantizeRow(m_.tok_emb.type, m_.tok_emb.w.data() + size_t(rows[i].token) * m_.tok_emb.stride, xi, n);
    for (int64_t j = 0; j < n; ++j) xi[j] += m_.dec_pos[size_t(pos[size_t(i)] * n + j)];
  }
  for (size_t l = 0; l < m_.dec.size(); ++l) {
    const Block& b = m_.dec[l];
    LayerNorm(b.attn_ln, x, R, n, h);
    MatMulExact(b.q, h, R, q);
    MatMulExact(b.k, h, R, k);
    MatMulExact(b.v, h, R, v);
    for (size_t i = 0; i < un; ++i) {  // self-attention: d^-1/4 on each side, as whisper.cpp
      q[i] *= qk_scale;
      k[i] *= qk_scale;
    }
    for (int64_t i = 0; i < R; ++i) {  // every row's K/V first: a prompt's later rows attend to earlier ones
      float* sk = rows[i].cache->kt.data() + l * size_t(C * n);
      uint16_t* sv = rows[i].cache->vt.data() + l * size_t(C * n);
      const int64_t p = pos[size_t(i)];
      for (int64_t j = 0; j < n; ++j) {
        sk[j * C + p] = RoundF16(k[i * n + j]);
        sv[j * C + p] = quant::Fp32ToFp16(v[i * n + j]);
      }
    }
    pool_->ParallelFor(R * H, [&](int64_t wb, int64_t we) {
      std::vector<float> s(static_cast<size_t>(C));
      std::vector<uint16_t> p16(static_cast<size_t>(C));
      for (int64_t w = wb; w < we; ++w) {
        const int64_t hd = w % H, i = w / H;
        const DecoderCache& c = *rows[i].cache;
        AttendHead(q + i * n, c.kt.data() + l * size_t(C * n), C, d * C, c.vt.data() + l * size_t(C * n), C, d * C,
                   pos[size_t(i)] + 1, hd, d, 1.0f, a + i * n, s.data(), p16.data());
      }
    });
    MatMulExact(b.o, a, R, h);
    for (size_t i = 0; i < un; ++i) x[i] += h[i];
    LayerNorm(b.cross_ln, x, R, n, h);
    MatMulExact(b.cq, h, R, q);
    auto window = [&](int64_t i) { return rows[i].cross ? rows[i].cross : this; };
    for (int64_t i0 = 0, i1 = 0; i0 < R; i0 = i1) {  // each run of rows over one window's K/V
      const WhisperRunner* w = window(i0);
      i1 = i0 + 1;
      while (i1 < R && window(i1) == w) ++i1;
      Attend(q + i0 * n, i1 - i0, n, w->cross_kt_.data() + l * size_t(A * n), A, d * A,
             w->cross_vt_.data() + l * size_t(A * n), A, d * A, A, int32_t(H), d, qk_scale, a + i0 * n, n);
    }
    MatMulExact(b.co, a, R, h);
    for (size_t i = 0; i < un; ++i) x[i] += h[i];
    LayerNorm(b.mlp_ln, x, R, n, h);
    MatMulExact(b.fc1, h, R, bff_.data());
    GeluRow(bff_.data(), int64_t(bff_.size()));
    MatMulExact(b.fc2, bff_.data(), R, h);
    for (size_t i = 0; i < un; ++i) x[i] += h[i];
  }
  for (int64_t i = 0; i < R; ++i) rows[i].cache->n_past = int32_t(pos[size_t(i)] + 1);
  // Logits of the rows that want them, as one product over the token embedding.
  std::vector<int64_t> want;
  for (int64_t i = 0; i < R; ++i)
    if (rows[i].logits) want.push_back(i);
  if (want.empty()) return Status::Ok();
  const int64_t W = int64_t(want.size()), nv = hp.n_vocab;
  for (int64_t j = 0; j < W; ++j) LayerNorm(m_.dec_ln, x + want[size_t(j)] * n, 1, n, h + j * n);
  blog_.resize(size_t(W * nv));
  MatMulExact(m_.tok_emb, h, W, blog_.data());
  for (int64_t j = 0; j < W; ++j) std::copy(blog_.begin() + j * nv, blog_.begin() + (j + 1) * nv, rows[want[size_t(j)]].logits);
  return Status::Ok();
}

}  // namespace zf::speech

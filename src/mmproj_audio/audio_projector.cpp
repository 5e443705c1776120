#include "mmproj_audio/audio_projector.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "speech/mel.h"
#include "mmproj_audio/tensor_reader.h"

namespace zf::mmproj_audio {
namespace {

constexpr int32_t kFramesPerChunk = 3000;  // libmtmd feeds the encoder 30 s of mel at a time
constexpr int32_t kPositions = kFramesPerChunk / 2;
constexpr int64_t kMinPadded = 201;        // libmtmd pads shorter clips with zeros to this
constexpr double kMelFloor = 5.960464477539063e-08;  // libmtmd's mel floor (2^-24)

// libmtmd's Gemma 4 front end: 512-point FFT, 320-sample window, hop 160, 160 zeros before
// each 30 s piece (semicausal), as many frames as PyTorch's unfold(321, 160) gives.
constexpr int32_t kGemma4Fft = 512, kGemma4Window = 320, kHop = 160;

int64_t Gemma4Frames(int64_t chunk_len) {
  return (chunk_len + kGemma4Window / 2 - (kGemma4Window + 1)) / kHop + 1;  // C++ truncation, as libmtmd
}

Status ReadHparams(Reader& r, AudioHparams* hp) {
  const gguf::GgufFile& f = r.f;
  std::string_view sv;
  if (!f.GetString("general.architecture", &sv).ok() || sv != "clip")
    return FormatError("mmproj: general.architecture is '" + std::string(sv) + "', 'clip' expected (not a projector file)");
  // libmtmd: the default key first (it names both towers' type when present), then the audio one.
  if (!f.GetString("clip.projector_type", &sv).ok() && !f.GetString("clip.audio.projector_type", &sv).ok())
    return FormatError("mmproj: clip.projector_type is missing");
  hp->projector = std::string(sv);
  if (hp->projector == "ultravox") hp->kind = Kind::kUltravox;
  else if (hp->projector == "qwen2a") hp->kind = Kind::kQwen2a;
  else if (hp->projector == "voxtral") hp->kind = Kind::kVoxtral;
  else if (hp->projector == "gemma4a") hp->kind = Kind::kGemma4a;
  else
    return Unsupported("mmproj: audio projector type '" + hp->projector +
                       "' is not supported (ultravox, qwen2a, voxtral and gemma4a are)");
  ZF_RETURN_IF_ERROR(r.U32("clip.audio.num_mel_bins", &hp->n_mel, 1));
  if (hp->n_mel > 256) return FormatError("mmproj: clip.audio.num_mel_bins " + std::to_string(hp->n_mel) + " is over 256");
  ZF_RETURN_IF_ERROR(r.U32("clip.audio.embedding_length", &hp->n_embd, 1));
  ZF_RETURN_IF_ERROR(r.U32("clip.audio.feed_forward_length", &hp->n_ff, 1));
  ZF_RETURN_IF_ERROR(r.U32("clip.audio.block_count", &hp->n_layer, 1));
  ZF_RETURN_IF_ERROR(r.U32("clip.audio.attention.head_count", &hp->n_head, 1));
  if (hp->n_embd % hp->n_head != 0)
    return FormatError("mmproj: clip.audio.embedding_length is no multiple of clip.audio.attention.head_count");
  // clip.cpp hard-codes gemma4a's norm epsilon (1e-6) whatever the file says.
  if (hp->kind == Kind::kGemma4a) {
    hp->eps = 1e-6f;
    return Status::Ok();
  }
  if (hp->kind != Kind::kQwen2a) ZF_RETURN_IF_ERROR(r.U32("clip.audio.projector.stack_factor", &hp->stack, 1));
  Status s = f.GetF32("clip.audio.attention.layer_norm_epsilon", &hp->eps);
  if (!s.ok()) return FormatError("mmproj: clip.audio.attention.layer_norm_epsilon: " + s.message());
  if (!(hp->eps > 0.0f && hp->eps < 1.0f)) return FormatError("mmproj: clip.audio.attention.layer_norm_epsilon is out of range");
  if (hp->n_ff != 4 * hp->n_embd)
    return Unsupported("mmproj: clip.audio.feed_forward_length " + std::to_string(hp->n_ff) +
                       " is not 4 x clip.audio.embedding_length (a Whisper encoder's)");
  return Status::Ok();
}

}  // namespace

int32_t AudioHparams::tokens_per_chunk() const {
  if (kind == Kind::kGemma4a) return int32_t(Gemma4AudioTower::Rows(Gemma4Frames(kChunkSamples)));
  const int32_t pos = kind == Kind::kUltravox ? kPositions : kPositions / 2;
  return (pos + stack - 1) / stack;  // clip.cpp's build_stack pads the last row with zeros
}

AudioProjector::~AudioProjector() = default;

bool AudioProjector::IsAudio(const gguf::GgufFile& file) {
  bool b = false;
  return file.GetBool("clip.has_audio_encoder", &b).ok() && b;
}

Status AudioProjector::FromGguf(std::unique_ptr<gguf::GgufFile> file, std::unique_ptr<AudioProjector>* out) {
  out->reset();
  if (!IsAudio(*file)) return FormatError("mmproj: clip.has_audio_encoder is not true (no audio encoder in the file)");
  std::unique_ptr<AudioProjector> p(new AudioProjector());
  Reader r{*file, {}};
  AudioHparams& hp = p->hp_;
  ZF_RETURN_IF_ERROR(ReadHparams(r, &hp));
  const int64_t E = hp.n_embd, M = hp.n_mel;
  // Gemma 4's files may hold the vision tower too: its tensors are the image projector's.
  bool vision = false;
  const bool two_tower = file->GetBool("clip.has_vision_encoder", &vision).ok() && vision;
  const auto audio_tensor = [&](std::string_view name) {
    return !two_tower || name.substr(0, 2) == "a." || name.substr(0, 5) == "mm.a.";
  };
  if (hp.kind == Kind::kGemma4a) {
    ZF_RETURN_IF_ERROR(Gemma4AudioTower::Load(r, hp.n_mel, hp.n_embd, hp.n_ff, hp.n_layer, hp.n_head, &p->gemma4_));
    hp.proj_width = p->gemma4_->proj_width();
    for (const gguf::TensorInfo& ti : r.f.tensors())
      if (r.used.count(std::string(ti.name)) == 0 && audio_tensor(ti.name))
        return FormatError("mmproj: tensor '" + std::string(ti.name) + "' is not part of a gemma4a projector");
    p->filters_ = speech::HtkMelFilters(hp.n_mel, kGemma4Fft);
    *out = std::move(p);
    return Status::Ok();
  }
  if (two_tower)
    return Unsupported("mmproj: a " + hp.projector + " audio tower beside a vision one is not supported (Gemma 4's gemma4a is)");

  speech::WhisperHparams wh;
  wh.n_audio_ctx = kPositions;
  wh.n_audio_state = hp.n_embd;
  wh.n_audio_head = hp.n_head;
  wh.n_audio_layer = hp.n_layer;
  wh.n_mels = hp.n_mel;
  speech::EncoderStyle style;
  style.gelu_erf = true;  // clip.cpp: ffn_op = FFN_GELU_ERF for these types, and the convolutions' GELU
  style.eps = hp.eps;
  style.pool2 = hp.kind != Kind::kUltravox;
  std::unique_ptr<speech::WhisperModel> m = speech::WhisperModel::EncoderOnly(wh, style);
  ZF_RETURN_IF_ERROR(r.Matrix("a.conv1d.1", 3 * M, E, &m->conv1, {1, E}, {3, M, E}));
  ZF_RETURN_IF_ERROR(r.Matrix("a.conv1d.2", 3 * E, E, &m->conv2, {1, E}, {3, E, E}));
  // clip.cpp takes the first 1500 rows of a longer table.
  const gguf::TensorInfo* pos = r.f.FindTensor("a.position_embd.weight");
  if (pos == nullptr) return FormatError("mmproj: tensor 'a.position_embd.weight' is missing");
  if (pos->n_dims != 2 || pos->ne[0] != E || pos->ne[1] < kPositions)
    return FormatError("mmproj: tensor 'a.position_embd.weight' has shape " + gguf::ShapeString(pos->ne, pos->n_dims) + ", [" +
                       std::to_string(E) + ", >= 1500] expected");
  ZF_RETURN_IF_ERROR(r.Floats("a.position_embd.weight", {E, pos->ne[1]}, &m->enc_pos));
  m->enc_pos.resize(size_t(E) * kPositions);
  m->enc.resize(size_t(hp.n_layer));
  for (int32_t i = 0; i < hp.n_layer; ++i) {
    speech::Block& b = m->enc[size_t(i)];
    const std::string p = "a.blk." + std::to_string(i) + ".";
    ZF_RETURN_IF_ERROR(r.Norm(p + "ln1", E, &b.attn_ln));
    ZF_RETURN_IF_ERROR(r.Matrix(p + "attn_q", E, E, &b.q, {E}));
    ZF_RETURN_IF_ERROR(r.Matrix(p + "attn_k", E, E, &b.k, {}));  // Whisper's key has no bias
    ZF_RETURN_IF_ERROR(r.Matrix(p + "attn_v", E, E, &b.v, {E}));
    ZF_RETURN_IF_ERROR(r.Matrix(p + "attn_out", E, E, &b.o, {E}));
    ZF_RETURN_IF_ERROR(r.Norm(p + "ln2", E, &b.mlp_ln));
    ZF_RETURN_IF_ERROR(r.Matrix(p + "ffn_up", E, hp.n_ff, &b.fc1, {hp.n_ff}));
    ZF_RETURN_IF_ERROR(r.Matrix(p + "ffn_down", hp.n_ff, E, &b.fc2, {E}));
  }
  ZF_RETURN_IF_ERROR(r.Norm("a.post_ln", E, &m->enc_ln));

  // The projector's widths come from its tensors; the last one's rows are the output width.
  const int64_t S = E * hp.stack;
  int64_t H = 0, P = 0;
  switch (hp.kind) {
    case Kind::kQwen2a:
      ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.fc.weight", E, &P));
      ZF_RETURN_IF_ERROR(r.Matrix("mm.a.fc", E, P, &p->fc, {P}));
      break;
    case Kind::kUltravox:
      ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.mlp.1.weight", S, &H));
      if (H % 2 != 0) return FormatError("mmproj: tensor 'mm.a.mlp.1.weight' has an odd row count (SwiGLU halves it)");
      ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.mlp.2.weight", H / 2, &P));
      ZF_RETURN_IF_ERROR(r.Floats("mm.a.norm_pre.weight", {S}, &p->norm_pre));
      ZF_RETURN_IF_ERROR(r.Matrix("mm.a.mlp.1", S, H, &p->mm1, {}));
      ZF_RETURN_IF_ERROR(r.Floats("mm.a.norm_mid.weight", {H / 2}, &p->norm_mid));
      ZF_RETURN_IF_ERROR(r.Matrix("mm.a.mlp.2", H / 2, P, &p->mm2, {}));
      break;
    case Kind::kVoxtral:
      ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.mlp.1.weight", S, &H));
      ZF_RETURN_IF_ERROR(r.RowsOf("mm.a.mlp.2.weight", H, &P));
      ZF_RETURN_IF_ERROR(r.Matrix("mm.a.mlp.1", S, H, &p->mm1, {}));
      ZF_RETURN_IF_ERROR(r.Matrix("mm.a.mlp.2", H, P, &p->mm2, {}));
      break;
    case Kind::kGemma4a:  // loaded above
      break;
  }
  hp.proj_width = int32_t(P);
  for (const gguf::TensorInfo& ti : r.f.tensors())
    if (r.used.count(std::string(ti.name)) == 0)
      return FormatError("mmproj: tensor '" + std::string(ti.name) + "' is not part of a " + hp.projector + " projector");
  p->enc_ = std::move(m);
  p->filters_ = speech::SlaneyMelFilters(hp.n_mel);
  *out = std::move(p);
  return Status::Ok();
}

Status AudioProjector::CheckLanguageModel(int64_t lm_n_embd) const {
  if (lm_n_embd != hp_.proj_width)
    return InvalidArgument("mmproj: the projector's output width " + std::to_string(hp_.proj_width) +
                           " is not the language model's embedding width " + std::to_string(lm_n_embd) +
                           ": the projector belongs to another model");
  return Status::Ok();
}

int64_t AudioProjector::Rows(int64_t n_samples) const {
  if (hp_.kind != Kind::kGemma4a) return Chunks(n_samples) * hp_.tokens_per_chunk();
  int64_t rows = 0;
  for (int64_t off = 0; off < n_samples; off += kChunkSamples)
    rows += Gemma4AudioTower::Rows(Gemma4Frames(std::min(kChunkSamples, n_samples - off)));
  return rows;
}

int64_t AudioProjector::Chunks(int64_t n_samples) {
  // libmtmd: the mel of the clip and 30 s of silence, (n + 480000) / 160 + 1 frames, cut into
  // whole 3000-frame chunks (the last, partial one is silence and dropped).
  const int64_t n = std::max(n_samples, kMinPadded);
  return ((n + kChunkSamples) / 160 + 1) / kFramesPerChunk;
}

AudioEncoder::AudioEncoder(const AudioProjector& p, int32_t n_threads)
    : p_(p), n_threads_(std::max(1, n_threads)) {
  if (p.gemma4() == nullptr) runner_ = std::make_unique<speech::WhisperRunner>(p.encoder(), n_threads_);
}

AudioEncoder::~AudioEncoder() = default;

std::vector<float> AudioEncoder::Mel(const float* pcm, int64_t n_samples) const {
  const AudioHparams& hp = p_.hparams();
  if (hp.kind == Kind::kGemma4a) {
    // Each 30 s piece alone: 160 zeros before it, zeros after up to its last frame's end;
    // magnitudes through HTK filters, ln of max(x, 1e-3), nothing rescaled.
    speech::MelOptions o;
    o.floor = 1e-3;
    o.n_fft = kGemma4Fft;
    o.window = kGemma4Window;
    o.magnitude = true;
    o.natural_log = true;
    o.whisper_padding = false;
    std::vector<float> out;
    for (int64_t off = 0; off < n_samples; off += kChunkSamples) {
      const int64_t len = std::min(kChunkSamples, n_samples - off), frames = Gemma4Frames(len);
      const int64_t needed = (frames - 1) * kHop + kGemma4Fft;
      std::vector<float> padded(size_t(std::max<int64_t>(needed - len, kGemma4Window / 2) + len), 0.0f);
      std::copy(pcm + off, pcm + off + len, padded.begin() + kGemma4Window / 2);
      speech::Mel mel = speech::LogMel(padded.data(), int64_t(padded.size()), p_.filters(), hp.n_mel, n_threads_, o);
      for (int32_t m = 0; m < hp.n_mel; ++m)
        out.insert(out.end(), mel.data.begin() + long(size_t(m) * size_t(mel.n_len)),
                   mel.data.begin() + long(size_t(m) * size_t(mel.n_len) + size_t(frames)));
    }
    return out;
  }
  std::vector<float> padded;
  if (n_samples < kMinPadded) {  // libmtmd: zeros after a clip too short to reflect
    padded.assign(size_t(kMinPadded), 0.0f);
    std::copy(pcm, pcm + n_samples, padded.begin());
    pcm = padded.data();
    n_samples = kMinPadded;
  }
  speech::MelOptions o;
  o.floor = kMelFloor;
  o.last_frame = true;
  speech::Mel mel = speech::LogMel(pcm, n_samples, p_.filters(), hp.n_mel, n_threads_, o);
  const int64_t chunks = mel.n_len / kFramesPerChunk;
  std::vector<float> out(size_t(chunks) * size_t(hp.n_mel) * kFramesPerChunk);
  for (int64_t c = 0; c < chunks; ++c)
    for (int32_t m = 0; m < hp.n_mel; ++m)
      std::copy_n(mel.data.begin() + long(size_t(m) * size_t(mel.n_len) + size_t(c) * kFramesPerChunk), kFramesPerChunk,
                  out.begin() + long((size_t(c) * size_t(hp.n_mel) + size_t(m)) * kFramesPerChunk));
  return out;
}

void AudioEncoder::Encode(const float* pcm, int64_t n_samples, std::vector<float>* rows) {
  const AudioHparams& hp = p_.hparams();
  const std::vector<float> mel = Mel(pcm, n_samples);
  if (const Gemma4AudioTower* g = p_.gemma4()) {
    rows->clear();
    size_t at = 0;
    for (int64_t off = 0; off < n_samples; off += kChunkSamples) {
      const int64_t frames = Gemma4Frames(std::min(kChunkSamples, n_samples - off));
      std::vector<float> t_major(size_t(frames) * size_t(hp.n_mel)), chunk_rows;
      for (int32_t m = 0; m < hp.n_mel; ++m)
        for (int64_t t = 0; t < frames; ++t) t_major[size_t(t) * size_t(hp.n_mel) + size_t(m)] = mel[at + size_t(m) * size_t(frames) + size_t(t)];
      at += size_t(frames) * size_t(hp.n_mel);
      EncodeGemma4Audio(*g, t_major.data(), frames, n_threads_, &chunk_rows);
      rows->insert(rows->end(), chunk_rows.begin(), chunk_rows.end());
    }
    return;
  }
  const size_t chunk_floats = size_t(hp.n_mel) * kFramesPerChunk;
  const int64_t chunks = int64_t(mel.size() / chunk_floats);
  const size_t per_chunk = size_t(hp.tokens_per_chunk()) * size_t(hp.proj_width);
  rows->assign(size_t(chunks) * per_chunk, 0.0f);
  for (int64_t c = 0; c < chunks; ++c) {
    runner_->Encode(mel.data() + size_t(c) * chunk_floats, kFramesPerChunk, kFramesPerChunk, 0);
    const std::vector<float>& h = runner_->encoder_out();
    Project(h.data(), int64_t(h.size() / size_t(hp.n_embd)), rows->data() + size_t(c) * per_chunk);
  }
}

void AudioEncoder::Project(const float* hidden, int64_t n_pos, float* out) {
  const AudioHparams& hp = p_.hparams();
  const int64_t E = hp.n_embd;
  if (hp.kind == Kind::kQwen2a) {
    runner_->Product(p_.fc, hidden, n_pos, out);
    return;
  }
  // clip.cpp's build_stack: k consecutive positions side by side, the last row zero-padded.
  const int64_t k = hp.stack, n_rows = (n_pos + k - 1) / k, S = E * k;
  std::vector<float> x(size_t(n_rows * S), 0.0f);
  std::copy(hidden, hidden + n_pos * E, x.begin());
  const int64_t H = p_.mm1.out;
  std::vector<float> y(size_t(n_rows * H));
  if (hp.kind == Kind::kUltravox) {
    RmsNorm(x.data(), n_rows, S, p_.norm_pre, 1e-6f);
    runner_->Product(p_.mm1, x.data(), n_rows, y.data());
    // ggml_swiglu_swapped: silu of the second half times the first.
    const int64_t h = H / 2;
    std::vector<float> g(size_t(n_rows * h));
    for (int64_t t = 0; t < n_rows; ++t)
      for (int64_t i = 0; i < h; ++i) {
        const float a = y[size_t(t * H + h + i)];
        g[size_t(t * h + i)] = a / (1.0f + std::exp(-a)) * y[size_t(t * H + i)];
      }
    RmsNorm(g.data(), n_rows, h, p_.norm_mid, 1e-6f);
    runner_->Product(p_.mm2, g.data(), n_rows, out);
    return;
  }
  runner_->Product(p_.mm1, x.data(), n_rows, y.data());  // voxtral
  runner_->Gelu(y.data(), int64_t(y.size()));
  runner_->Product(p_.mm2, y.data(), n_rows, out);
}

}  // namespace zf::mmproj_audio

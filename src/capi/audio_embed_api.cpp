// C entry points for audio (issue #46): audio projectors (ultravox, qwen2a, voxtral) loaded by
// zf_mmproj_load, a clip's embeddings (zf_audio_embed), and what the session and chat turn entry
// points use of them (through the projector's cache of recent clips). src/mmproj_audio/ does the
// work.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "capi/mmproj_handle.h"
#include "gguf/gguf.h"
#include "mmproj_audio/audio_projector.h"
#include "speech/wav.h"

using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(zf::mmproj_audio::kSampleRate == zf::speech::kSampleRate, "audio projectors take speech/'s 16 kHz PCM");

namespace zf::capi {
namespace {

using mmproj_audio::AudioEncoder;
using mmproj_audio::AudioProjector;

// Idle encoders kept per projector (each holds a thread pool and its scratch).
constexpr size_t kMaxIdleAudioEncoders = 4;

std::unique_ptr<AudioEncoder> Borrow(const zf_mmproj* p, int32_t n_threads) {
  {
    std::lock_guard<std::mutex> lock(p->mu);
    for (auto it = p->idle_audio.begin(); it != p->idle_audio.end(); ++it) {
      if (it->first != n_threads) continue;
      std::unique_ptr<AudioEncoder> e = std::move(it->second);
      p->idle_audio.erase(it);
      return e;
    }
  }
  return std::make_unique<AudioEncoder>(*p->audio, n_threads);
}

void Return(const zf_mmproj* p, int32_t n_threads, std::unique_ptr<AudioEncoder> e) {
  std::lock_guard<std::mutex> lock(p->mu);
  if (p->idle_audio.size() < kMaxIdleAudioEncoders) p->idle_audio.emplace_back(n_threads, std::move(e));
}

// FNV-1a of the samples' bits, tagged so that no image's key (vision_api.cpp) is one of them.
uint64_t ClipKey(const float* pcm, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ 0x61756469ull;  // "audi"
  const auto* b = reinterpret_cast<const uint8_t*>(pcm);
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  const uint64_t size = n;
  for (size_t i = 0; i < sizeof size; ++i) h = (h ^ ((size >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

int32_t DefaultThreads(int32_t n_threads) {
  return n_threads > 0 ? n_threads : static_cast<int32_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

}  // namespace

bool IsAudioMmproj(const char* path) {
  std::unique_ptr<gguf::GgufFile> f;
  return gguf::GgufFile::Open(path, gguf::OpenOptions{}, &f).ok() && AudioProjector::IsAudio(*f);
}

Status LoadAudioTower(zf_model* model, const char* path, std::unique_ptr<mmproj_audio::AudioProjector>* out) {
  std::unique_ptr<gguf::GgufFile> f;
  Status s = gguf::GgufFile::Open(path, gguf::OpenOptions{}, &f);
  std::unique_ptr<AudioProjector> a;
  if (s.ok()) s = AudioProjector::FromGguf(std::move(f), &a);
  if (!s.ok()) return Status(s.code(), std::string(path) + ": " + s.message());
  // libmtmd checks the width only: the audio types go with several families (ultravox with
  // Llama, qwen2a with Qwen2, voxtral with Mistral's).
  const model::ModelDesc& c = model->impl->desc();
  if (!a->CheckLanguageModel(c.n_embd).ok()) {
    return InvalidArgument(std::string(path) + ": the projector does not belong to this model: its output width " +
                           std::to_string(a->hparams().proj_width) + " is not the model's embedding width " +
                           std::to_string(c.n_embd));
  }
  *out = std::move(a);
  return Status::Ok();
}

zf_status LoadAudioMmproj(zf_model* model, const char* path, zf_mmproj** out) {
  std::unique_ptr<AudioProjector> a;
  if (Status s = LoadAudioTower(model, path, &a); !s.ok()) return Fail(s);
  auto h = std::make_unique<zf_mmproj>();
  h->model = model;
  h->audio = std::move(a);
  model->refs.fetch_add(1, std::memory_order_relaxed);
  *out = h.release();
  return Succeed();
}

void AudioSummary(const zf_mmproj* p, zf_mmproj_summary* s) {
  const mmproj_audio::AudioHparams& hp = p->audio->hparams();
  s->n_tokens = hp.tokens_per_chunk();
  s->n_embd = hp.proj_width;
  s->n_embd_vision = hp.n_embd;
  s->n_layer = hp.n_layer;
  s->projector_type = hp.projector.c_str();
  s->modalities = ZF_MODALITY_AUDIO;
  s->sample_rate = mmproj_audio::kSampleRate;

}

Status CheckAudioSamples(const float* pcm, size_t n, const std::string& field) {
  if (n < ZF_AUDIO_MIN_SAMPLES) {
    return InvalidArgument(field + " holds " + std::to_string(n) + " samples; at least " +
                           std::to_string(ZF_AUDIO_MIN_SAMPLES) + " (10 ms at 16 kHz) are needed");
  }
  if (n > ZF_AUDIO_MAX_SAMPLES) {
    return InvalidArgument(field + " holds " + std::to_string(n) + " samples (" + std::to_string(n / 16000) +
                           " s); at most " + std::to_string(ZF_AUDIO_MAX_SAMPLES) +
                           " (10 minutes at 16 kHz, ZF_AUDIO_MAX_SAMPLES) are taken");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(pcm[i])) {
      return InvalidArgument(field + "[" + std::to_string(i) + "] is " + (std::isnan(pcm[i]) ? "NaN" : "infinite") +
                             " (samples must be finite, nominally in [-1, 1])");
    }
  }
  return Status::Ok();
}

size_t AudioRows(const zf_mmproj* p, size_t n_samples) {
  return size_t(p->audio->Rows(int64_t(n_samples)));
}

Status NotAudio(const zf_mmproj* p, const std::string& field) {
  return InvalidArgument(field + ": the projector '" + p->impl->hparams().projector +
                         "' encodes images, not audio (an audio part needs an audio projector: ultravox, qwen2a, voxtral, gemma4a)");
}

Status EmbedAudioCached(const zf_mmproj* p, const float* pcm, size_t n, int32_t n_threads, const std::string& field,
                        std::shared_ptr<const std::vector<float>>* rows) {
  if (!p->audio) return NotAudio(p, field);
  ZF_RETURN_IF_ERROR(CheckAudioSamples(pcm, n, field));
  const uint64_t key = ClipKey(pcm, n);
  {
    std::lock_guard<std::mutex> lock(p->mu);
    for (auto it = p->recent.begin(); it != p->recent.end(); ++it) {
      if (it->first != key) continue;
      p->recent.splice(p->recent.begin(), p->recent, it);
      *rows = it->second;
      return Status::Ok();
    }
  }
  n_threads = DefaultThreads(n_threads);
  auto embd = std::make_shared<std::vector<float>>();
  std::unique_ptr<AudioEncoder> enc = Borrow(p, n_threads);
  enc->Encode(pcm, int64_t(n), embd.get());
  Return(p, n_threads, std::move(enc));
  std::lock_guard<std::mutex> lock(p->mu);
  p->recent.emplace_front(key, embd);
  if (p->recent.size() > kRecentImages) p->recent.pop_back();
  *rows = std::move(embd);
  return Status::Ok();
}

ImagePlacement AudioPlacementOf(const zf_mmproj* p, size_t n_rows) {
  // libmtmd's init_audio markers (no newlines around them); the rows attend causally.
  std::string begin, end;
  switch (p->audio->hparams().kind) {
    case mmproj_audio::Kind::kQwen2a:
      begin = "<|audio_bos|>";
      end = "<|audio_eos|>";
      break;
    case mmproj_audio::Kind::kVoxtral:
      begin = "[BEGIN_AUDIO]";
      break;
    case mmproj_audio::Kind::kGemma4a:
      begin = "<|audio>";
      end = "<audio|>";
      break;
    case mmproj_audio::Kind::kUltravox:
      break;
  }
  ImagePlacement pl;
  if (!begin.empty()) pl.pieces.push_back(vision::LayoutPiece{begin, 0});
  pl.pieces.push_back(vision::LayoutPiece{"", int64_t(n_rows)});
  if (!end.empty()) pl.pieces.push_back(vision::LayoutPiece{end, 0});
  return pl;
}

namespace {

std::vector<rt::ImagePiece> AudioPieces(const zf_mmproj* p, size_t n_rows) {
  std::vector<rt::ImagePiece> out;
  for (const vision::LayoutPiece& piece : AudioPlacementOf(p, n_rows).pieces)
    out.push_back(rt::ImagePiece{piece.text, size_t(piece.rows)});
  return out;
}

// A chat part's bytes (a WAV file) as 16 kHz samples; errors name the part.
Status DecodeClip(std::string_view bytes, const std::string& field, std::vector<float>* pcm) {
  Status s = speech::DecodeWav(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), pcm);
  if (!s.ok()) return Status(s.code(), field + ".input_audio.data: " + s.message());
  return Status::Ok();
}

}  // namespace

void AddAudioToTurn(const zf_mmproj* p, int32_t n_threads, rt::TurnImages* t) {
  t->embed_audio = [p, n_threads](std::string_view bytes, const std::string& field,
                                  std::shared_ptr<const std::vector<float>>* rows, std::vector<rt::ImagePiece>* pieces) {
    if (!p->audio) return NotAudio(p, field);
    std::vector<float> pcm;
    ZF_RETURN_IF_ERROR(DecodeClip(bytes, field, &pcm));
    ZF_RETURN_IF_ERROR(EmbedAudioCached(p, pcm.data(), pcm.size(), n_threads, field + ".input_audio.data", rows));
    *pieces = AudioPieces(p, (*rows)->size() / size_t(p->audio->hparams().proj_width));
    return Status::Ok();
  };
  t->layout_audio = [p](std::string_view bytes, const std::string& field, std::vector<rt::ImagePiece>* pieces) {
    if (!p->audio) return NotAudio(p, field);
    std::vector<float> pcm;
    ZF_RETURN_IF_ERROR(DecodeClip(bytes, field, &pcm));
    ZF_RETURN_IF_ERROR(CheckAudioSamples(pcm.data(), pcm.size(), field + ".input_audio.data"));
    *pieces = AudioPieces(p, AudioRows(p, pcm.size()));
    return Status::Ok();
  };
}

}  // namespace zf::capi

extern "C" {

ZF_API zf_status zf_audio_embed(const zf_mmproj* mmproj, const float* pcm, size_t n_samples, int32_t n_threads,
                                float* out, size_t cap, size_t* needed, int32_t* n_tokens) {
  if (mmproj == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "mmproj is NULL");
  if (pcm == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "pcm is NULL");
  if (needed == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "needed is NULL");
  *needed = 0;
  if (n_tokens != nullptr) *n_tokens = 0;
  if (out == nullptr && cap != 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "out is NULL but cap is " + std::to_string(cap));
  if (n_threads < 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "n_threads must be >= 0, got " + std::to_string(n_threads));
  ZF_GUARD_BEGIN
  if (!mmproj->audio) return Fail(zf::capi::NotAudio(mmproj, "mmproj"));
  if (zf::Status s = zf::capi::CheckAudioSamples(pcm, n_samples, "pcm"); !s.ok()) return Fail(s);
  // The size follows from the clip's length alone: known before the (costly) encode.
  const size_t n_rows = zf::capi::AudioRows(mmproj, n_samples), n = n_rows * size_t(mmproj->audio->hparams().proj_width);
  *needed = n;
  if (n_tokens != nullptr) *n_tokens = static_cast<int32_t>(n_rows);
  if (cap < n) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "out holds " + std::to_string(cap) + " floats; the clip's embeddings need " +
                                             std::to_string(n) + " (*needed)");
  }
  std::shared_ptr<const std::vector<float>> rows;
  if (zf::Status s = zf::capi::EmbedAudioCached(mmproj, pcm, n_samples, n_threads, "pcm", &rows); !s.ok()) return Fail(s);
  if (rows->size() != n) return Fail(ZF_ERR_INTERNAL, "audio encoder returned " + std::to_string(rows->size()) + " floats");
  std::memcpy(out, rows->data(), n * sizeof(float));
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"

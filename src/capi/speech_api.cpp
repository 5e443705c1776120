// C entry points for speech to text (Whisper, issue #47): load a whisper.cpp .bin, transcribe
// PCM into segments (callback and result object), WAV bytes to PCM. src/speech/ does the work.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "capi/handles.h"
#include "speech/transcribe.h"
#include "speech/wav.h"
#include "speech/whisper_model.h"
#include "speech/whisper_vocab.h"

using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(sizeof(zf_speech_summary) == 32, "zf_speech_summary layout is part of the ABI");
static_assert(sizeof(zf_speech_token) == 16, "zf_speech_token layout is part of the ABI");
#if UINTPTR_MAX == 0xffffffffffffffffu
static_assert(sizeof(zf_transcribe_params) == 72 && offsetof(zf_transcribe_params, flags) == 24 &&
                  offsetof(zf_transcribe_params, temperature) == 32 && offsetof(zf_transcribe_params, n_max_text_ctx) == 68,
              "zf_transcribe_params layout is part of the ABI");
static_assert(sizeof(zf_speech_segment) == 96 && offsetof(zf_speech_segment, no_speech_prob) == 56 &&
                  offsetof(zf_speech_segment, token_times) == 64 && offsetof(zf_speech_segment, avg_logprob) == 92,
              "zf_speech_segment layout is part of the ABI");
static_assert(sizeof(zf_speech_word) == 40, "zf_speech_word layout is part of the ABI");
#endif
static_assert(sizeof(zf_speech_token_time) == 16, "zf_speech_token_time layout is part of the ABI");

struct zf_speech_model {
  std::unique_ptr<zf::speech::WhisperModel> impl;
  zf::speech::WhisperVocab vocab;
  // Concurrent zf_transcribe calls join their decoder steps here (the model stays read-only;
  // the batcher is the one shared, thread-safe state).
  mutable zf::speech::DecodeBatcher batcher;
};

// A segment with its C views (the tokens, times and words converted once, the text owned here).
struct SpeechSegment {
  zf::speech::Segment seg;
  std::vector<zf_speech_token> tokens;
  std::vector<zf_speech_token_time> times;  // empty without word timestamps
  std::vector<zf_speech_word> words;
};

struct zf_transcription {
  std::vector<SpeechSegment> segments;
  std::string text;
  std::string language;
  float language_prob = 0;
};

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

SpeechSegment ToC(const zf::speech::Segment& s) {
  SpeechSegment out;
  out.seg = s;
  out.tokens.reserve(s.tokens.size());
  for (const zf::speech::SegmentToken& t : s.tokens) out.tokens.push_back(zf_speech_token{t.id, t.p, t.plog, 0});
  if (!s.words.empty() || (!s.tokens.empty() && s.tokens.front().t0 >= 0))
    for (const zf::speech::SegmentToken& t : s.tokens) out.times.push_back(zf_speech_token_time{t.t0 * 10, t.t1 * 10});
  return out;
}

// The words' C views point into seg.words' strings: built once the segment sits where it stays.
void LinkWords(SpeechSegment& s) {
  s.words.clear();
  for (const zf::speech::Word& w : s.seg.words)
    s.words.push_back(zf_speech_word{w.text.c_str(), w.text.size(), w.t0 * 10, w.t1 * 10, w.p, 0});
}

// Fills the first `size` bytes of *out (the caller's struct_size) with the segment's view.
void Fill(const SpeechSegment& s, uint32_t size, zf_speech_segment* out) {
  zf_speech_segment v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = static_cast<uint32_t>(std::min<size_t>(size, sizeof v));
  v.t0_ms = s.seg.t0 * 10;  // the core's unit is 10 ms
  v.t1_ms = s.seg.t1 * 10;
  v.text = s.seg.text.c_str();
  v.text_len = s.seg.text.size();
  v.tokens = s.tokens.empty() ? nullptr : s.tokens.data();
  v.n_tokens = s.tokens.size();
  v.no_speech_prob = s.seg.no_speech_prob;
  v.token_times = s.times.empty() ? nullptr : s.times.data();
  v.words = s.words.empty() ? nullptr : s.words.data();
  v.n_words = s.words.size();
  v.temperature = s.seg.temperature;
  v.avg_logprob = s.seg.avg_logprob;
  std::memcpy(static_cast<void*>(out), &v, v.struct_size);
}

// The caller's params checked and turned into the core's options (each field named when bad).
zf_status ReadOptions(const zf_transcribe_params* params, zf::speech::TranscribeParams* o, int32_t* n_threads) {
  zf_transcribe_params p;
  zf_transcribe_params_init(&p, sizeof p);
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  const uint32_t known = ZF_TRANSCRIBE_TRANSLATE | ZF_TRANSCRIBE_NO_TIMESTAMPS | ZF_TRANSCRIBE_WORD_TIMESTAMPS | ZF_TRANSCRIBE_CARRY_PROMPT;
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags, known)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved", p.reserved)) return e;
  if (p.n_threads < 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->n_threads must be >= 0, got " + std::to_string(p.n_threads));
  auto bad = [](const char* field, const std::string& why) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string("params->") + field + " " + why); };
  if (!(p.temperature >= 0 && p.temperature <= 1)) return bad("temperature", "must be within [0, 1], got " + std::to_string(p.temperature));
  if (!(p.temperature_inc >= 0 && p.temperature_inc <= 1))
    return bad("temperature_inc", "must be within [0, 1], got " + std::to_string(p.temperature_inc));
  if (p.beam_size < 0 || p.beam_size > zf::speech::kMaxDecoders)
    return bad("beam_size", "must be within [0, " + std::to_string(zf::speech::kMaxDecoders) + "], got " + std::to_string(p.beam_size));
  if (p.best_of < 1 || p.best_of > zf::speech::kMaxDecoders)
    return bad("best_of", "must be within [1, " + std::to_string(zf::speech::kMaxDecoders) + "], got " + std::to_string(p.best_of));
  const std::pair<const char*, float> finite[] = {{"length_penalty", p.length_penalty},
                                                   {"entropy_thold", p.entropy_thold},
                                                   {"logprob_thold", p.logprob_thold},
                                                   {"no_speech_thold", p.no_speech_thold}};
  for (const auto& f : finite)
    if (!std::isfinite(f.second)) return bad(f.first, "must be a finite number");
  if (p.n_max_text_ctx < 0) return bad("n_max_text_ctx", "must be >= 0, got " + std::to_string(p.n_max_text_ctx));
  o->language = p.language == nullptr || p.language[0] == '\0' ? "en" : p.language;
  o->translate = (p.flags & ZF_TRANSCRIBE_TRANSLATE) != 0;
  o->timestamps = (p.flags & ZF_TRANSCRIBE_NO_TIMESTAMPS) == 0;
  o->token_timestamps = (p.flags & ZF_TRANSCRIBE_WORD_TIMESTAMPS) != 0;
  o->carry_initial_prompt = (p.flags & ZF_TRANSCRIBE_CARRY_PROMPT) != 0;
  o->initial_prompt = p.initial_prompt == nullptr ? "" : p.initial_prompt;
  o->temperature = p.temperature;
  o->temperature_inc = p.temperature_inc;
  o->beam_size = std::max(1, p.beam_size);
  o->best_of = p.best_of;
  o->length_penalty = p.length_penalty;
  o->entropy_thold = p.entropy_thold;
  o->logprob_thold = p.logprob_thold;
  o->no_speech_thold = p.no_speech_thold;
  o->seed = p.seed;
  o->n_max_text_ctx = p.n_max_text_ctx;
  *n_threads = p.n_threads;
  if (*n_threads == 0) *n_threads = static_cast<int32_t>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  return ZF_OK;
}

// A GGUF file is a common mistake: say so rather than report its magic as bad.
bool IsGguf(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  char m[4] = {};
  const bool gguf = std::fread(m, 1, 4, f) == 4 && std::memcmp(m, "GGUF", 4) == 0;
  std::fclose(f);
  return gguf;
}

}  // namespace

extern "C" {

ZF_API zf_status zf_speech_load(const char* path, uint32_t flags, zf_speech_model** out) {
  if (out != nullptr) *out = nullptr;
  if (path == nullptr) return NullArg("path");
  if (out == nullptr) return NullArg("out");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, 0)) return e;
  ZF_GUARD_BEGIN
  if (IsGguf(path)) {
    return Fail(ZF_ERR_FORMAT, std::string(path) +
                                   ": a GGUF file, not a whisper.cpp ggml .bin model (language models load with zf_model_load)");
  }
  auto m = std::make_unique<zf_speech_model>();
  zf::Status s = zf::speech::WhisperModel::Load(path, &m->impl);
  if (!s.ok()) return Fail(static_cast<int32_t>(s.code()), std::string(path) + ": " + s.message());
  m->vocab = zf::speech::WhisperVocab::Make(m->impl->hparams().n_vocab, m->impl->vocab());
  *out = m.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API void zf_speech_free(zf_speech_model* model) { delete model; }

ZF_API zf_status zf_speech_info(const zf_speech_model* model, zf_speech_summary* info) {
  if (model == nullptr) return NullArg("model");
  if (info == nullptr) return NullArg("info");
  if (info->struct_size < sizeof(uint32_t)) return Fail(ZF_ERR_INVALID_ARGUMENT, "info->struct_size is too small");
  const zf::speech::WhisperHparams& hp = model->impl->hparams();
  zf_speech_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = static_cast<uint32_t>(std::min<size_t>(info->struct_size, sizeof s));
  s.n_vocab = hp.n_vocab;
  s.n_mels = hp.n_mels;
  s.n_audio_layer = hp.n_audio_layer;
  s.n_text_layer = hp.n_text_layer;
  s.n_audio_state = hp.n_audio_state;
  s.multilingual = model->vocab.multilingual() ? 1 : 0;
  std::memcpy(static_cast<void*>(info), &s, s.struct_size);
  return Succeed();
}

ZF_API zf_status zf_transcribe_params_init(zf_transcribe_params* params, size_t size) {
  zf_transcribe_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  const zf::speech::TranscribeParams core;  // whisper.cpp's defaults live in the core
  d.temperature = core.temperature;
  d.temperature_inc = core.temperature_inc;
  d.beam_size = core.beam_size;
  d.best_of = core.best_of;
  d.length_penalty = core.length_penalty;
  d.entropy_thold = core.entropy_thold;
  d.logprob_thold = core.logprob_thold;
  d.no_speech_thold = core.no_speech_thold;
  d.seed = core.seed;
  d.n_max_text_ctx = core.n_max_text_ctx;
  return zf::capi::InitParams(params, size, d);
}

ZF_API zf_status zf_transcribe(const zf_speech_model* model, const float* pcm, size_t n_samples,
                               const zf_transcribe_params* params, zf_segment_cb cb, void* user_data,
                               zf_transcription** out) {
  if (out != nullptr) *out = nullptr;
  if (model == nullptr) return NullArg("model");
  if (pcm == nullptr) return NullArg("pcm");
  if (n_samples == 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "pcm is empty (n_samples is 0)");
  ZF_GUARD_BEGIN
  zf::speech::TranscribeParams o;
  int32_t n_threads = 0;
  if (zf_status e = ReadOptions(params, &o, &n_threads)) return e;
  auto result = std::make_unique<zf_transcription>();
  zf::speech::SegmentFn on_segment;
  if (cb != nullptr) {
    on_segment = [&](const zf::speech::Segment& s) {
      SpeechSegment c = ToC(s);
      LinkWords(c);
      zf_speech_segment v;
      Fill(c, sizeof v, &v);
      return cb(user_data, &v) == 0;
    };
  }
  zf::speech::WhisperRunner runner(*model->impl, n_threads);
  zf::speech::TranscribeResult r;
  zf::Status s = zf::speech::Transcribe(runner, *model->impl, pcm, static_cast<int64_t>(n_samples), o, n_threads, &r,
                                        on_segment, &model->batcher);
  // A stop asked for by the callback is a success with the segments decoded so far.
  if (!s.ok() && s.code() != zf::Code::kCancelled) return Fail(s);
  for (const zf::speech::Segment& seg : r.segments) {
    result->segments.push_back(ToC(seg));
    result->text += seg.text;
  }
  for (SpeechSegment& seg : result->segments) LinkWords(seg);
  result->language = r.language;
  result->language_prob = r.language_prob;
  if (out != nullptr) *out = result.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API size_t zf_transcription_n_segments(const zf_transcription* result) {
  return result == nullptr ? 0 : result->segments.size();
}

ZF_API zf_status zf_transcription_segment(const zf_transcription* result, size_t i, zf_speech_segment* out) {
  if (result == nullptr) return NullArg("result");
  if (out == nullptr) return NullArg("out");
  if (out->struct_size < sizeof(uint32_t)) return Fail(ZF_ERR_INVALID_ARGUMENT, "out->struct_size is too small");
  if (i >= result->segments.size()) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "segment " + std::to_string(i) + " is out of range (the result has " +
                                             std::to_string(result->segments.size()) + ")");
  }
  Fill(result->segments[i], out->struct_size, out);
  return Succeed();
}

ZF_API zf_status zf_transcription_text(const zf_transcription* result, char* buf, size_t cap, size_t* needed) {
  if (result == nullptr) return NullArg("result");
  ZF_GUARD_BEGIN
  return zf::capi::CopyOut(result->text, buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_transcription_language(const zf_transcription* result, char* buf, size_t cap, size_t* needed) {
  if (result == nullptr) return NullArg("result");
  ZF_GUARD_BEGIN
  return zf::capi::CopyOut(result->language, buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_transcription_language_prob(const zf_transcription* result, float* prob) {
  if (result == nullptr) return NullArg("result");
  if (prob == nullptr) return NullArg("prob");
  *prob = result->language_prob;
  return Succeed();
}

ZF_API void zf_transcription_free(zf_transcription* result) { delete result; }

ZF_API zf_status zf_speech_token_text(const zf_speech_model* model, int32_t id, char* buf, size_t cap, size_t* needed) {
  if (model == nullptr) return NullArg("model");
  if (id < 0 || id >= model->vocab.n_vocab) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) + " is outside [0, " +
                                             std::to_string(model->vocab.n_vocab) + ")");
  }
  ZF_GUARD_BEGIN
  return zf::capi::CopyOut(model->vocab.Piece(id), buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_wav_decode(const void* data, size_t size, float* pcm, size_t cap, size_t* n_samples) {
  if (n_samples != nullptr) *n_samples = 0;
  if (data == nullptr) return NullArg("data");
  if (n_samples == nullptr) return NullArg("n_samples");
  ZF_GUARD_BEGIN
  std::vector<float> out;
  zf::Status s = zf::speech::DecodeWav(static_cast<const uint8_t*>(data), size, &out);
  if (!s.ok()) return Fail(s);
  *n_samples = out.size();
  if (out.size() > cap || (pcm == nullptr && !out.empty())) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, std::to_string(out.size()) + " samples do not fit in a buffer of " +
                                             std::to_string(pcm == nullptr ? 0 : cap));
  }
  if (!out.empty()) std::memcpy(pcm, out.data(), out.size() * sizeof(float));
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"

// Audio projector files (llama.cpp's mmproj GGUF with clip.has_audio_encoder): a Whisper-style
// encoder (speech/'s WhisperModel, run in libmtmd's style) and one of three projectors that
// differ by shape, not by algorithm (clip.cpp's whisper-enc graph):
//   ultravox  stack k positions, RMS norm x w, mm.a.mlp.1, SwiGLU (silu of the second half
//             times the first), RMS norm x w, mm.a.mlp.2            markers: none
//   qwen2a    (pairs averaged before the final LayerNorm) mm.a.fc + bias
//                                                                   <|audio_bos|> .. <|audio_eos|>
//   voxtral   (pairs averaged) stack k, mm.a.mlp.1, GELU (erf), mm.a.mlp.2
//                                                                   [BEGIN_AUDIO] ..
// and libmtmd's preprocessing: 16 kHz mono PCM -> log-mel (clip.audio.num_mel_bins bins, Slaney
// filters) over the clip plus 30 s of silence, cut into 3000-frame (30 s) chunks; each chunk is
// encoded alone and the chunks' rows are concatenated.
// Gemma 4's audio tower (gemma4a, gemma4_conformer.h) is the fourth type: its own log-mel (HTK
// filters, 512-point FFT over 320-sample windows, magnitudes, natural log, floor 1e-3) of each
// 30 s piece of the clip (the last one shorter), a conformer per piece  <|audio> .. <audio|>
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "mmproj_audio/gemma4_conformer.h"
#include "speech/whisper_model.h"

namespace zf::gguf {
class GgufFile;
}

namespace zf::mmproj_audio {

enum class Kind { kUltravox, kQwen2a, kVoxtral, kGemma4a };

struct AudioHparams {
  std::string projector;  // clip.projector_type
  Kind kind = Kind::kQwen2a;
  int32_t n_mel = 0, n_embd = 0, n_ff = 0, n_layer = 0, n_head = 0;
  int32_t stack = 1;       // clip.audio.projector.stack_factor (ultravox, voxtral)
  int32_t proj_width = 0;  // the last product's rows: the language model's width
  float eps = 1e-5f;

  // Rows per 30 s chunk: 1500 encoder positions, halved by the pooling, divided by the stack
  // (gemma4a: 2999 mel frames over two stride-2 convolutions, 750).
  int32_t tokens_per_chunk() const;
};

// libmtmd's limits on the clip (16 kHz samples).
constexpr int32_t kSampleRate = 16000;
constexpr int64_t kChunkSamples = 30 * kSampleRate;

class AudioProjector {
 public:
  ~AudioProjector();
  // A GGUF whose clip.has_audio_encoder is true (FromGguf refuses others by name).
  static Status FromGguf(std::unique_ptr<gguf::GgufFile> file, std::unique_ptr<AudioProjector>* out);
  // True when the file describes an audio projector (clip.has_audio_encoder).
  static bool IsAudio(const gguf::GgufFile& file);

  const AudioHparams& hparams() const { return hp_; }
  const speech::WhisperModel& encoder() const { return *enc_; }
  const std::vector<float>& filters() const { return filters_; }
  Status CheckLanguageModel(int64_t lm_n_embd) const;

  // Chunks libmtmd makes of n_samples (after its padding of very short clips).
  static int64_t Chunks(int64_t n_samples);
  // Rows a clip of n_samples gives (every chunk's).
  int64_t Rows(int64_t n_samples) const;
  // gemma4a's tower (null for the Whisper-encoder types).
  const Gemma4AudioTower* gemma4() const { return gemma4_.get(); }

  // Projector weights (speech::Linear rows of `in`; empty b: no bias).
  std::vector<float> norm_pre, norm_mid;  // ultravox
  speech::Linear mm1, mm2;                // ultravox, voxtral
  speech::Linear fc;                      // qwen2a

 private:
  AudioProjector() = default;
  AudioHparams hp_;
  std::unique_ptr<speech::WhisperModel> enc_;
  std::unique_ptr<Gemma4AudioTower> gemma4_;
  std::vector<float> filters_;
};

// One encode at a time (a WhisperRunner: thread pool and scratch); the projector is shared.
class AudioEncoder {
 public:
  AudioEncoder(const AudioProjector& p, int32_t n_threads);
  ~AudioEncoder();
  // 16 kHz mono samples -> Chunks(n) * tokens_per_chunk() rows of proj_width floats.
  // The caller has checked the samples (count, finite).
  void Encode(const float* pcm, int64_t n_samples, std::vector<float>* rows);
  // The log-mel libmtmd's preprocessor makes of the clip ([n_mel][3000] per chunk, chunks after
  // each other; gemma4a: [n_mel][its frames] per chunk), for comparing with the reference.
  std::vector<float> Mel(const float* pcm, int64_t n_samples) const;

 private:
  void Project(const float* hidden, int64_t n_pos, float* out);

  const AudioProjector& p_;
  int32_t n_threads_;
  std::unique_ptr<speech::WhisperRunner> runner_;  // null for gemma4a
};

}  // namespace zf::mmproj_audio

// Whisper's decoding of a whole recording, as whisper.cpp 1.8.5's whisper_full does it:
// 30 s windows of the log-mel; per window the encoder, then the prompt (the previous window's
// tokens after <|startofprev|>, then <|startoftranscript|>, language, task), then one token at a
// time with the timestamp rules (pairs, monotonic, the first at most max_initial_ts, a
// timestamp forced when their total probability beats every text token); a window ends at
// <|endoftext|> or when its timestamps reach the end of the audio, and the next one starts at
// the last timestamp (seeking). Segments run from one timestamp to the next.
// Per window: greedy (or beam search with beam_size > 1) at the first temperature; when the best
// sequence fails (repetition: entropy of its last 32 tokens under entropy_thold; average
// log-probability under logprob_thold while the no-speech probability is under no_speech_thold;
// timestamps going back), again at temperature + temperature_inc ... up to 1.0, sampling best_of
// sequences (at 0.5 and above without the previous text as prompt). Sampling draws from
// std::mt19937 seeded seed + j for sequence j, as whisper.cpp seeds its decoders with j: a fixed
// seed gives the same transcript on every run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "speech/decode_batcher.h"
#include "speech/whisper_model.h"
#include "speech/whisper_vocab.h"

namespace zf::speech {

// Defaults are whisper_full_default_params(WHISPER_SAMPLING_GREEDY)'s (whisper-cli uses beam 5).
struct TranscribeParams {
  std::string language = "en";   // a code from Whisper's list, or "auto" (multilingual models)
  bool translate = false;        // the translate task (multilingual models)
  bool timestamps = true;        // false: <|notimestamps|>, one segment per window
  int32_t n_max_text_ctx = 16384;  // previous-text tokens offered as the prompt (0: none)
  std::string initial_prompt;    // text before the first window, after <|startofprev|>
  bool carry_initial_prompt = false;  // keep initial_prompt in front of every window's prompt
  bool suppress_blank = true;
  float max_initial_ts = 1.0f;
  float temperature = 0.0f;      // the first temperature (0: greedy / beam search)
  float temperature_inc = 0.2f;  // fallback step (0: no fallback)
  int32_t beam_size = 1;         // > 1: beam search at temperature 0
  int32_t best_of = 5;           // sequences sampled at temperature > 0
  float length_penalty = -1.0f;  // <= 0: the score is the average log-probability
  float entropy_thold = 2.4f;
  float logprob_thold = -1.0f;
  float no_speech_thold = 0.6f;
  uint32_t seed = 0;             // sequence j samples from std::mt19937(seed + j)
  bool token_timestamps = false; // t0/t1 per token and words (whisper.cpp's token_timestamps)
  float thold_pt = 0.01f;        // a token's own timestamp counts above these probabilities
  float thold_ptsum = 0.01f;
};

constexpr int32_t kMaxDecoders = 8;  // beam_size and best_of at most (whisper.cpp's limit)

struct SegmentToken {
  int32_t id = 0;
  float p = 0;     // probability the decoder gave it
  float plog = 0;
  int64_t t0 = -1, t1 = -1;  // 10 ms units, with token_timestamps (else -1)
};

struct Word {
  std::string text;   // begins with its leading space, as the tokens do
  int64_t t0 = 0, t1 = 0;
  float p = 0;        // the lowest probability among its tokens
};

struct Segment {
  int64_t t0 = 0, t1 = 0;  // 10 ms units
  std::string text;
  std::vector<SegmentToken> tokens;  // text and timestamp tokens of the segment
  float no_speech_prob = 0;
  std::vector<Word> words;  // with token_timestamps: text tokens joined into words
  float temperature = 0;    // the temperature the window was decoded at
  float avg_logprob = 0;    // of the window's tokens
};

struct TranscribeResult {
  std::vector<Segment> segments;
  std::string language;   // the code decoded with
  float language_prob = 0; // with language "auto": the detected language's probability
  int32_t n_windows = 0;
};

// Returns false to stop (the result then holds what was decoded so far, status kCancelled).
using SegmentFn = std::function<bool(const Segment&)>;

// shared: decoder passes joined with other transcriptions' on the same model (decode_batcher.h);
// null: this runner's own passes. The transcript is the same either way.
Status Transcribe(WhisperRunner& runner, const WhisperModel& model, const float* pcm, int64_t n_samples,
                  const TranscribeParams& params, int32_t n_threads, TranscribeResult* out, const SegmentFn& on_segment = {},
                  DecodeBatcher* shared = nullptr);

}  // namespace zf::speech

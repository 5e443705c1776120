// Whisper's decoding of a whole recording, as whisper.cpp's whisper_full does it greedily:
// 30 s windows of the log-mel; per window the encoder, then the prompt (the previous window's
// tokens after <|startofprev|>, then <|startoftranscript|>, language, task), then one token at a
// time with the timestamp rules (pairs, monotonic, the first at most max_initial_ts, a
// timestamp forced when their total probability beats every text token); a window ends at
// <|endoftext|> or when its timestamps reach the end of the audio, and the next one starts at
// the last timestamp (seeking). Segments run from one timestamp to the next.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "speech/whisper_model.h"
#include "speech/whisper_vocab.h"

namespace zf::speech {

struct TranscribeParams {
  std::string language = "en";   // a code from Whisper's list, or "auto" (multilingual models)
  bool translate = false;        // the translate task (multilingual models)
  bool timestamps = true;        // false: <|notimestamps|>, one segment per window
  int32_t n_max_text_ctx = 16384;  // previous-text tokens offered as the prompt (0: none)
  bool suppress_blank = true;
  float max_initial_ts = 1.0f;
  float logprob_thold = -1.0f;
  float no_speech_thold = 0.6f;
};

struct SegmentToken {
  int32_t id = 0;
  float p = 0;     // probability the decoder gave it
  float plog = 0;
};

struct Segment {
  int64_t t0 = 0, t1 = 0;  // 10 ms units
  std::string text;
  std::vector<SegmentToken> tokens;  // text and timestamp tokens of the segment
  float no_speech_prob = 0;
};

struct TranscribeResult {
  std::vector<Segment> segments;
  std::string language;   // the code decoded with
  int32_t n_windows = 0;
};

// Returns false to stop (the result then holds what was decoded so far, status kCancelled).
using SegmentFn = std::function<bool(const Segment&)>;

Status Transcribe(WhisperRunner& runner, const WhisperModel& model, const float* pcm, int64_t n_samples,
                  const TranscribeParams& params, int32_t n_threads, TranscribeResult* out, const SegmentFn& on_segment = {});

}  // namespace zf::speech

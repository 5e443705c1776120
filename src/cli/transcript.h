// A transcription as the CLI and the server hand it out: zf_transcribe into plain structs
// (audio_decode.h gives the PCM), and the output formats (text, SubRip, WebVTT, JSON) both `zerfoo transcribe` and
// /v1/audio/transcriptions write.
#ifndef ZERFOO_CLI_TRANSCRIPT_H
#define ZERFOO_CLI_TRANSCRIPT_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace cli::transcript {

struct Token {
  int32_t id = 0;
  std::string text;
  float p = 0;
  float plog = 0;
};

// A word with its times (ZF_TRANSCRIBE_WORD_TIMESTAMPS).
struct Word {
  std::string text;  // with its leading space, as in the segment's text
  int64_t t0_ms = 0, t1_ms = 0;
  float p = 0;  // its least likely token's probability
};

struct Segment {
  int64_t t0_ms = 0, t1_ms = 0;
  std::string text;
  float no_speech_prob = 0;
  float temperature = 0;  // the window's (above the first: a fallback)
  float avg_logprob = 0;
  std::vector<Token> tokens;
  std::vector<Word> words;  // with word timestamps
};

struct Transcript {
  std::string task = "transcribe";  // or "translate"
  std::string language;
  std::string text;
  double duration_s = 0;  // of the audio
  std::vector<Segment> segments;
};

// Transcribes pcm; on_segment (optional) sees each segment as it is decoded. On failure returns
// the status with zf_last_error()'s text in *error.
zf_status Run(const zf_speech_model* model, const std::vector<float>& pcm, const zf_transcribe_params& params,
              const std::function<void(const Segment&)>& on_segment, Transcript* out, std::string* error);

// "00:00:08,000" (SubRip) or "00:00:08.000" (WebVTT).
std::string Timestamp(int64_t ms, char decimal_mark);

std::string Text(const Transcript& t);  // the whole text, trimmed, with a final newline
std::string Srt(const Transcript& t);
std::string Vtt(const Transcript& t);
// {"task", "language", "duration", "text", "segments": [{"id", "start", "end", "text", "tokens"
// (ids), "temperature", "avg_logprob", "no_speech_prob"}...]} with times in seconds (OpenAI's
// verbose_json), and "words": [{"word", "start", "end"}...] when word timestamps were asked;
// `detailed` adds per-token text and probability ("token_probs") and each word's probability for
// the CLI.
std::string Json(const Transcript& t, bool detailed);

}  // namespace cli::transcript

#endif  // ZERFOO_CLI_TRANSCRIPT_H

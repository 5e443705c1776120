// Token-level timestamps as whisper.cpp 1.8.5's whisper_exp_compute_token_level_timestamps
// (token_timestamps = true): a token whose own timestamp prediction is confident (pt, ptsum over
// thresholds, increasing) pins its start; the gaps are split in proportion to a "voice length" of
// the token text; then each token's edges move to where the signal's energy (mean |x| over 65
// samples) crosses half the local mean. And words: text tokens joined at a leading space.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "speech/transcribe.h"
#include "speech/whisper_vocab.h"

namespace zf::speech {

struct TimedToken {
  int32_t id = 0, tid = 0;   // the token and the likeliest timestamp at its step
  float pt = 0, ptsum = 0;   // that timestamp's share of the timestamp mass, and the mass
  int64_t t0 = -1, t1 = -1;
  float vlen = 0;
};

// Carried from one segment to the next within a transcription (whisper.cpp's t_beg, t_last,
// tid_last) with the signal energy.
struct TokenTimeState {
  int64_t t_beg = 0, t_last = 0;
  int32_t tid_last = 0;
  std::vector<float> energy;
};

std::vector<float> SignalEnergy(const float* pcm, int64_t n, int32_t half_window);

// token_text: the reference's id -> string (file vocabulary, then its names for the specials).
void ComputeTokenTimes(const WhisperVocab& v, const std::vector<std::string>& token_text, int64_t seg_t0, int64_t seg_t1,
                       float thold_pt, float thold_ptsum, TokenTimeState& st, std::vector<TimedToken>& tokens);

// The names whisper.cpp gives ids past the file's vocabulary ("[_TT_1]", "[_EOT_]", ...).
std::vector<std::string> ReferenceTokenText(const WhisperVocab& v, const std::vector<std::string>& file_tokens);

// Text tokens (id < eot) joined into words: a token starting with a space starts a word; others
// (word pieces, punctuation) join the current one.
std::vector<Word> JoinWords(const WhisperVocab& v, const std::vector<SegmentToken>& tokens);

}  // namespace zf::speech

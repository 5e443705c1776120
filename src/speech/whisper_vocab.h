// Whisper's token ids: the GPT-2 byte-level BPE vocabulary from the model file (token text as
// bytes), then the special tokens, whose ids depend on whether the model is multilingual
// (n_vocab >= 51865) and on how many languages it has (large-v3 has one more).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zf::speech {

struct WhisperVocab {
  int32_t n_vocab = 0;
  int32_t eot = 50256, sot = 50257, translate = 50357, transcribe = 50358, solm = 50359, prev = 50360,
          nosp = 50361, no_timestamps = 50362, timestamp_begin = 50363;
  int32_t space = -1;  // the token " " (suppressed at the start of a segment)
  std::vector<std::string> text;  // id -> bytes, for ids below eot (and eot itself when present)

  bool multilingual() const { return n_vocab >= 51865; }
  int32_t n_languages() const { return n_vocab - 51765 - (multilingual() ? 1 : 0); }
  int32_t lang(int32_t lang_id) const { return sot + 1 + lang_id; }

  static WhisperVocab Make(int32_t n_vocab, const std::vector<std::string>& file_tokens);
  // Text of a token; specials and timestamps give "".
  const std::string& Piece(int32_t id) const;
};

// Index of a language code ("en", "de", ...) in Whisper's language list, or -1.
int32_t WhisperLanguageId(const std::string& code);
const char* WhisperLanguageCode(int32_t id);  // nullptr when out of range

}  // namespace zf::speech

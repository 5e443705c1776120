#include "speech/whisper_vocab.h"

#include <algorithm>

namespace zf::speech {
namespace {

// Whisper's language order (the ids of the language tokens follow it).
const char* const kLanguages[] = {
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id", "hi", "fi",
    "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg", "lt", "la", "mi", "ml",
    "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs",
    "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am",
    "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln",
    "ha", "ba", "jw", "su", "yue"};
constexpr int32_t kNumLanguages = int32_t(sizeof kLanguages / sizeof kLanguages[0]);

const std::string kEmpty;

}  // namespace

WhisperVocab WhisperVocab::Make(int32_t n_vocab, const std::vector<std::string>& file_tokens) {
  WhisperVocab v;
  v.n_vocab = n_vocab;
  if (v.multilingual()) {
    ++v.eot;
    ++v.sot;
    const int32_t dt = v.n_languages() - 98;
    for (int32_t* id : {&v.translate, &v.transcribe, &v.solm, &v.prev, &v.nosp, &v.no_timestamps, &v.timestamp_begin}) *id += dt;
  }
  const size_t n_text = std::min(file_tokens.size(), size_t(v.eot));
  v.text.assign(file_tokens.begin(), file_tokens.begin() + long(n_text));
  for (size_t i = 0; i < v.text.size(); ++i)
    if (v.text[i] == " ") v.space = int32_t(i);
  return v;
}

const std::string& WhisperVocab::Piece(int32_t id) const {
  return id >= 0 && size_t(id) < text.size() && id < eot ? text[size_t(id)] : kEmpty;
}

int32_t WhisperLanguageId(const std::string& code) {
  for (int32_t i = 0; i < kNumLanguages; ++i)
    if (code == kLanguages[i]) return i;
  return -1;
}

const char* WhisperLanguageCode(int32_t id) { return id >= 0 && id < kNumLanguages ? kLanguages[id] : nullptr; }

}  // namespace zf::speech

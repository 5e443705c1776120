// WordPiece (BERT) encoding as the reference does it: its normalizer and word split, then
// greedy longest-match per word.
#include <algorithm>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

// CJK ideographs are words of their own. The range list is BERT's (HF tokenizers'), including
// its 0x2B920 start where 0x2B820 would be the Unicode block.
bool IsChineseChar(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Normalized words: whitespace ends a word; punctuation, ASCII symbols and CJK characters are
// one-character words; NUL, U+FFFD and control characters are dropped.
std::vector<std::string> SplitWords(const Vocab& vocab, std::string_view text) {
  std::vector<uint32_t> cps;
  DecodeUtf8(text, &cps, nullptr);
  std::vector<std::string> words(1);
  for (uint32_t cp : cps) {
    if (vocab.strip_accents) cp = NfdBase(cp);
    const uint16_t f = CodepointFlags(cp);
    if (f & kCpWhitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || (f & kCpControl)) continue;
    if (vocab.strip_accents && (f & kCpMark)) continue;
    std::string s;
    AppendUtf8(vocab.lowercase ? ToLower(cp) : cp, &s);
    if ((f & kCpPunctuation) || (cp < 0x7F && (f & kCpSymbol)) || IsChineseChar(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(s);
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void WpmEncode(const Vocab& vocab, std::string_view text, std::vector<int32_t>* out) {
  for (const std::string& word : SplitWords(vocab, text)) {
    if (word.empty()) continue;
    const std::string w = "\xE2\x96\x81" + word;  // the vocab's word-start marker
    const size_t n = w.size();
    const size_t start = out->size();
    // Byte positions, as the reference matches: the longest piece from i that is a token.
    for (size_t i = 0; i < n; ++i) {
      bool match = false;
      for (size_t j = std::min(n, i + vocab.max_token_len + 1); j > i; --j) {
        int32_t id = vocab.Find(std::string_view(w).substr(i, j - i));
        if (id >= 0) {
          out->push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {
        out->resize(start);
        break;
      }
    }
    if (out->size() == start) out->push_back(vocab.unk);
  }
}

}  // namespace zf::tok

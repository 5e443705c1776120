#include "speech/whisper_tokenize.h"

#include <algorithm>
#include <unordered_map>

namespace zf::speech {
namespace {

bool IsAlpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsSpace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool IsOther(unsigned char c) { return !IsSpace(c) && !IsAlpha(c) && !IsDigit(c); }

// Length of the match at s[p], trying the pattern's alternatives in order, as ECMAScript does:
//   's|'t|'re|'ve|'m|'ll|'d| ?[alpha]+| ?[digit]+| ?[^space alpha digit]+|\s+(?!\S)|\s+
size_t MatchAt(const std::string& s, size_t p) {
  const size_t n = s.size();
  for (const char* c : {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}) {
    const size_t len = std::char_traits<char>::length(c);
    if (s.compare(p, len, c) == 0) return len;
  }
  for (bool (*cls)(unsigned char) : {IsAlpha, IsDigit, IsOther}) {
    // " ?" is greedy: with the space first, then without it.
    for (size_t lead : {size_t(1), size_t(0)}) {
      if (lead && s[p] != ' ') continue;
      size_t q = p + lead;
      while (q < n && cls(static_cast<unsigned char>(s[q]))) ++q;
      if (q > p + lead) return q - p;
    }
  }
  size_t q = p;
  while (q < n && IsSpace(static_cast<unsigned char>(s[q]))) ++q;
  const size_t run = q - p;
  if (run == 0) return 0;
  if (q == n) return run;       // \s+(?!\S) at the end of the text: the whole run
  if (run > 1) return run - 1;  // backtracks one so that a space, not the next word, follows
  return run;                   // \s+
}

}  // namespace

std::vector<std::string> WhisperSplitWords(const std::string& text) {
  std::vector<std::string> words;
  size_t p = 0;
  while (p < text.size()) {
    const size_t len = MatchAt(text, p);
    if (len == 0) {  // every byte matches some alternative; kept for safety
      ++p;
      continue;
    }
    words.push_back(text.substr(p, len));
    p += len;
  }
  return words;
}

std::vector<int32_t> WhisperTokenize(const std::vector<std::string>& file_tokens, const std::string& text) {
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(file_tokens.size());
  for (size_t i = 0; i < file_tokens.size(); ++i) ids[file_tokens[i]] = int32_t(i);
  std::vector<int32_t> out;
  for (const std::string& w : WhisperSplitWords(text)) {
    size_t i = 0;
    while (i < w.size()) {
      bool found = false;
      for (size_t j = w.size(); j > i; --j) {
        const auto it = ids.find(w.substr(i, j - i));
        if (it != ids.end()) {
          out.push_back(it->second);
          i = j;
          found = true;
          break;
        }
      }
      if (!found) ++i;
    }
  }
  return out;
}

}  // namespace zf::speech

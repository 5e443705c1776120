// UTF-8 reassembly and stop-string hold-back.
#include "runtime/text_stream.h"

#include <algorithm>
#include <cstdint>

namespace zf::rt {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the sequence a lead byte announces, 0 if it cannot start one.
size_t SequenceLength(uint8_t c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether bytes [0, k) of a sequence starting with lead `c0` are still a valid prefix.
bool ValidContinuation(const std::string& s, size_t start, size_t k) {
  const uint8_t c0 = uint8_t(s[start]);
  for (size_t i = 1; i < k; ++i) {
    const uint8_t c = uint8_t(s[start + i]);
    if ((c & 0xC0) != 0x80) return false;
    if (i == 1) {  // exclude overlongs and surrogates / > U+10FFFF at the second byte
      if (c0 == 0xE0 && c < 0xA0) return false;
      if (c0 == 0xED && c > 0x9F) return false;
      if (c0 == 0xF0 && c < 0x90) return false;
      if (c0 == 0xF4 && c > 0x8F) return false;
    }
  }
  return true;
}

}  // namespace

TextStream::TextStream(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  raw_.reserve(8);
  text_.reserve(64);
}

void TextStream::Reset() {
  raw_.clear();
  text_.clear();
  matched_.clear();
}

void TextStream::DecodeComplete(bool final) {
  size_t i = 0;
  while (i < raw_.size()) {
    const size_t len = SequenceLength(uint8_t(raw_[i]));
    if (len == 0) {
      text_ += kReplacement;
      ++i;
      continue;
    }
    const size_t avail = std::min(len, raw_.size() - i);
    if (!ValidContinuation(raw_, i, avail)) {
      text_ += kReplacement;  // bad lead/continuation: replace the lead, resync on the next byte
      ++i;
      continue;
    }
    if (avail < len) {
      if (final) {
        text_ += kReplacement;
        i = raw_.size();
      }
      break;  // wait for the rest of the character
    }
    text_.append(raw_, i, len);
    i += len;
  }
  raw_.erase(0, i);
}

bool TextStream::Push(std::string_view bytes, std::string* emit) {
  raw_.append(bytes.data(), bytes.size());
  DecodeComplete(false);
  if (stops_.empty()) {
    emit->append(text_);
    text_.clear();
    return false;
  }
  // Earliest complete stop string wins.
  size_t best = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = text_.find(s);
    if (at != std::string::npos && at < best) {
      best = at;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    emit->append(text_, 0, best);
    text_.clear();
    raw_.clear();
    return true;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    const size_t max_k = std::min(s.size() - 1, text_.size());
    for (size_t k = max_k; k > hold; --k) {
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  emit->append(text_, 0, text_.size() - hold);
  text_.erase(0, text_.size() - hold);
  return false;
}

void TextStream::Finish(std::string* emit) {
  DecodeComplete(true);
  emit->append(text_);
  text_.clear();
}

}  // namespace zf::rt

// Turns token byte pieces into callback-ready text: only whole UTF-8 characters are released
// (invalid bytes become U+FFFD), and text that may begin a stop string is held back until it
// either completes the stop (never emitted) or diverges (released). Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zf::rt {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop_strings);

  // Appends a token's bytes; appends releasable text to *emit. Returns true when a stop string
  // completed: the text before it has been released, the stop and the rest are dropped.
  bool Push(std::string_view bytes, std::string* emit);
  // End of generation: releases what is held (an incomplete UTF-8 tail becomes U+FFFD).
  void Finish(std::string* emit);

  const std::string& matched_stop() const { return matched_; }
  void Reset();

 private:
  // Moves complete characters from raw_ to text_ (sanitizing invalid bytes).
  void DecodeComplete(bool final);

  std::vector<std::string> stops_;
  std::string raw_;   // bytes not yet forming a complete character
  std::string text_;  // valid UTF-8 not yet released (possible stop-string prefix)
  std::string matched_;
};

}  // namespace zf::rt

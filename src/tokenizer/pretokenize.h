// Byte-level BPE pre-tokenizer: splits text into words with the regex list the reference uses
// for each tokenizer.ggml.pre value. Common patterns (GPT-2, Llama 3, Qwen 2, single digits)
// have hand-written splitters; the rest run on the small regex engine in regex_split.h.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace zf::tok {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // kUnsupported naming the pre-tokenizer when it is unknown.
  static Status Create(std::string_view pre, std::unique_ptr<PreTokenizer>* out);
  // Word boundaries as codepoint offsets into cps (ascending, last == cps.size()).
  virtual std::vector<size_t> Split(const std::vector<uint32_t>& cps) const = 0;
};

}  // namespace zf::tok

// Text to Whisper token ids, by whisper.cpp's rule (whisper_tokenize, used for initial_prompt):
// split into words with GPT-2's pre-tokenizer pattern (ASCII letter / digit classes, as C++'s
// std::regex in the "C" locale sees them), then cover each word by the longest vocabulary entries
// from its left; a byte no entry starts is dropped. Not GPT-2's BPE merges: the same rule as the
// reference, so prompts give the same ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zf::speech {

// file_tokens: the model file's vocabulary (id -> bytes); where two ids share bytes the later one
// is used (as whisper.cpp's token_to_id map).
std::vector<int32_t> WhisperTokenize(const std::vector<std::string>& file_tokens, const std::string& text);

// The pre-tokenizer alone (exposed for tests).
std::vector<std::string> WhisperSplitWords(const std::string& text);

}  // namespace zf::speech

// Text through the model's tokenizer, with failures as ApiError: what request parsing,
// /tokenize and the logprobs JSON share; and the model's metadata as text.
#ifndef ZERFOO_CLI_SERVE_MODEL_TEXT_H
#define ZERFOO_CLI_SERVE_MODEL_TEXT_H

#include <cstdint>
#include <string>
#include <vector>

#include "api_error.h"
#include "zerfoo.h"

namespace cli::serve {

// zf_tokenize with ZF_TOKENIZE_* `flags`; throws ApiError (400 on invalid UTF-8).
std::vector<int32_t> Tokenize(const zf_model* model, const std::string& text, uint32_t flags);

// One token's text with special tokens rendered; empty if the token has none.
std::string TokenText(const zf_model* model, int32_t token);

// A GGUF metadata value as text (zf_model_meta); "" when the file has no such key.
std::string Meta(const zf_model* model, const char* key);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_MODEL_TEXT_H

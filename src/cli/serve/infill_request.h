// Fill-in-the-middle requests: llama-server's POST /infill body, and `suffix` on /v1/completions,
// turned into the FIM token sequence built from the model's FIM tokens (zf_model_summary's
// token_fim_*). No httplib here: a fuzz target calls ParseInfill on random bytes.
#ifndef ZERFOO_CLI_SERVE_INFILL_REQUEST_H
#define ZERFOO_CLI_SERVE_INFILL_REQUEST_H

#include <cstdint>
#include <string>
#include <vector>

#include "api_error.h"
#include "request.h"
#include "zerfoo.h"

namespace cli::serve {

// One input_extra chunk: a file of the repository given as context.
struct InfillChunk {
  std::string filename;
  std::string text;
};

// What goes around the middle: prefix and suffix as token ids (llama-server's input_prefix and
// input_suffix may mix text and ids), repository chunks, and text right after the prefix.
struct InfillInput {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
  std::vector<InfillChunk> extra;
  std::string prompt;
};

// llama-server's format_infill order (PSM):
//   [fim_rep] "myproject\n" ([fim_sep] filename "\n" text)... [fim_sep] "filename\n"   (repo-level
//   context, only where the model has those tokens; chunks otherwise separated by a "--- snippet
//   ---" line), then [BOS] [fim_pre] prefix prompt [fim_suf] suffix [fim_mid].
// Like llama-server the prefix keeps its last 3/4 of a batch (min(n_ctx, 2048) tokens), the
// suffix its first 1/4 less the prompt, and the extra chunks their end within what the context
// leaves after a batch and twice n_predict (< 0: none). BOS comes first, where the model adds one
// (llama-server puts it after the repository context). Throws ApiError 400 when the model has no
// FIM tokens.
std::vector<int32_t> BuildInfillPrompt(const zf_model* model, const InfillInput& in, int n_ctx, int32_t n_predict);

// The body of POST /infill: input_prefix and input_suffix (required; a string, or an array of
// strings and token ids), input_extra ([{"filename", "text"}]), prompt (a string) and every
// /v1/completions field (n_predict / max_tokens, temperature, stop, stream, ...), checked by
// ParseCompletion. Throws ApiError naming the field.
Request ParseInfill(const std::string& body, const RequestContext& ctx);

// OpenAI's `suffix` on /v1/completions: when `body` has a non-empty one, fills *prompt with the
// FIM sequence of `prompt` (the prefix: a string) and the suffix and returns true; false (nothing
// done) without one. Throws ApiError naming the field. ParseCompletion's hook.
bool CompletionSuffixPrompt(const json& body, const RequestContext& ctx, int32_t max_tokens, std::vector<int32_t>* prompt);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_INFILL_REQUEST_H

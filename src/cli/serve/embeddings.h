// POST /v1/embeddings (OpenAI's format) and POST /v1/rerank (llama-server's / Jina's / Cohere's):
// request parsing, the zf_embed / zf_embed_tokens / zf_rerank call, and the answer. These need
// no slot: the library calls are thread-safe on the shared model and batch the inputs.
#ifndef ZERFOO_CLI_SERVE_EMBEDDINGS_H
#define ZERFOO_CLI_SERVE_EMBEDDINGS_H

#include <cstdint>
#include <string>
#include <vector>

#include "api_error.h"
#include "zerfoo.h"

namespace cli::serve {

struct EmbedRequest {
  std::vector<std::string> texts;            // text inputs, or
  std::vector<std::vector<int32_t>> tokens;  // token-id inputs (exactly one of the two is used)
  bool base64 = false;                       // encoding_format "base64"
  int dimensions = 0;                        // 0: the model's size
  // Inputs longer than the context are a 400 unless the request asks for truncation: vLLM's
  // truncate_prompt_tokens = k keeps each input's last k tokens (-1: the context), Ollama's /
  // TEI's truncate: true keeps the first tokens that fit.
  int64_t keep_last = 0;   // > 0: truncate_prompt_tokens; -1: the context
  bool keep_first = false; // truncate: true
};

struct RerankRequest {
  std::string query;
  std::vector<std::string> documents;
  size_t top_n = 0;  // results kept (documents.size() when absent)
  bool return_documents = false;
};

// Parse the JSON bodies; bad input throws a 400 ApiError naming the field. Token ids are checked
// against n_vocab here so the message can name the input. More than max_inputs inputs /
// max_documents documents is a 400 too.
EmbedRequest ParseEmbedRequest(const std::string& body, int32_t n_vocab, size_t max_inputs);
RerankRequest ParseRerankRequest(const std::string& body, size_t max_documents);

// Little-endian float32 bytes in base64 (OpenAI's encoding_format "base64").
std::string Base64Floats(const float* v, size_t n);

struct EmbedContext {
  const zf_model* model;
  std::string alias;
  int32_t pooling;  // zf_embed_params.pooling (--pooling; ZF_POOLING_DEFAULT: the file's)
  int32_t n_ctx;  // the longest input (rerank: formatted pair) served: --ctx-size, at most the
                  // model's training context (the library's bound)
};

// Runs a parsed request; *n_tokens receives the prompt tokens (usage): for rerank the tokens
// of the formatted (query, document) pairs that were scored. Throws ApiError.
json Embed(const EmbedContext& ctx, const EmbedRequest& r, uint64_t* n_tokens);
json Rerank(const EmbedContext& ctx, const RerankRequest& r, uint64_t* n_tokens);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_EMBEDDINGS_H

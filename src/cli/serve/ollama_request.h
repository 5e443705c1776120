// The request bodies of Ollama's API (/api/chat, /api/generate, /api/embed, /api/embeddings,
// /api/show) checked and translated into what the one generation path takes: a chat turn's
// OpenAI-shaped request JSON, a tokenized prompt, or an EmbedRequest. No httplib here: a fuzz
// target calls ParseOllama on random bytes, and every problem is an ApiError naming the field.
#ifndef ZERFOO_CLI_SERVE_OLLAMA_REQUEST_H
#define ZERFOO_CLI_SERVE_OLLAMA_REQUEST_H

#include <string>

#include "api_error.h"
#include "embeddings.h"
#include "request.h"
#include "zerfoo.h"

namespace cli::serve {

enum class OllamaEndpoint { kChat, kGenerate, kEmbed, kEmbeddings, kShow };

struct OllamaRequest {
  std::string model;  // the name as the request gave it (answers echo it)
  // Chat and generate: `r.chat` true for a chat turn (/api/chat, /api/generate without raw),
  // false for a raw prompt's text completion (r.prompt tokenized as /v1/completions does).
  Request r;
  // An empty prompt (generate) or no messages (chat): Ollama's "load the model" probe, answered
  // {"done": true, "done_reason": "load"} without generating.
  bool load_only = false;
  // Embed and embeddings.
  EmbedRequest embed;
  bool empty_legacy_embedding = false;  // /api/embeddings with an empty prompt: {"embedding": []}
};

// The served model's Ollama names: "alias:latest" when the alias has no tag, else the alias.
std::string OllamaModelName(const std::string& alias);

// Whether `name` names the served model (the alias with or without ":latest").
bool OllamaNameMatches(const std::string& name, const std::string& alias);

// Parses one endpoint's body; throws ApiError (400 naming the field). The model a name picks is
// FrontDoor::Admit's decision, made before (OllamaNameMatches).
OllamaRequest ParseOllama(OllamaEndpoint endpoint, const std::string& body, const RequestContext& ctx);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_OLLAMA_REQUEST_H

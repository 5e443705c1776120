// The OpenAI answer JSON of a completion: the whole answer at once, or its stream of SSE chunks
// (role, pieces, finish reason, usage), with usage and token log-probabilities.
#ifndef ZERFOO_CLI_SERVE_STREAMING_H
#define ZERFOO_CLI_SERVE_STREAMING_H

#include <cstdint>
#include <string>
#include <vector>

#include "api_error.h"
#include "generate.h"
#include "request.h"
#include "turn.h"
#include "zerfoo.h"

namespace cli::serve {

// "length" when the token budget or the context ended the answer, else "stop".
const char* FinishReason(int32_t stop);

// {"prompt_tokens", "completion_tokens", "total_tokens"}.
json UsageJson(const Outcome& o);

// The OpenAI JSON for a piece's log-probabilities: chat's {"content": [...]} or the legacy
// completions {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (offsets from
// `text_offset` on, advanced past each token's text).
json LogprobsJson(const zf_model* model, const Request& r, const std::vector<TokenLogprobs>& lps,
                  size_t* text_offset);

// The non-streamed answer ("chat.completion" / "text_completion").
json CompletionJson(const zf_model* model, const Request& r, const AnswerHeader& h, const Outcome& out);

// OpenAI's usage of a chat turn, with prompt_tokens_details.cached_tokens.
json TurnUsageJson(const TurnOutcome& o);
json ChatCompletionJson(const zf_model* model, const Request& r, const AnswerHeader& h, const TurnOutcome& out);

// The chunks of one streamed answer, in order: Start (chat only), Piece per piece, End, then
// Usage when the request asked for stream_options.include_usage. Keeps the legacy logprobs'
// text offset across pieces.
class ChunkBuilder {
 public:
  ChunkBuilder(const zf_model* model, const Request& r, AnswerHeader h) : model_(model), r_(r), h_(std::move(h)) {}
  json Start();  // chat: the assistant role with empty content
  // Completions: a piece as a chunk, and the last chunk with the finish reason.
  std::vector<json> Piece(const std::string& piece, const std::vector<TokenLogprobs>& lps);
  std::vector<json> End(int32_t stop_reason);
  // Chat: a turn's event as a chunk, and the chunk with the turn's finish reason.
  json Event(const TurnDelta& d);
  json Finish(int32_t finish);
  // The usage chunk (stream_options.include_usage).
  json Usage(const json& usage) const;

 private:
  json Chunk(const json& delta_or_text, const json& finish_reason, const std::vector<TokenLogprobs>* lps);
  const char* Object() const;

  const zf_model* model_;
  const Request& r_;
  AnswerHeader h_;
  size_t text_offset_ = 0;
};

// One server-sent event carrying `data`: "data: <data>\n\n".
std::string SseEvent(const std::string& data);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_STREAMING_H

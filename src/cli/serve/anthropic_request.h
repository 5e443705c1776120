// The request schema of Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens):
// a body checked and translated into the one generation path's Request, whose turn_request is
// the OpenAI-shaped chat turn the library takes (system and content blocks become messages,
// tool_use / tool_result become tool_calls / tool messages, thinking becomes reasoning_content,
// tools and tool_choice their function forms, output_config.format a response_format). No
// httplib here: a fuzz target calls ParseAnthropic on arbitrary bytes; every problem is an
// ApiError naming the field.
#ifndef ZERFOO_CLI_SERVE_ANTHROPIC_REQUEST_H
#define ZERFOO_CLI_SERVE_ANTHROPIC_REQUEST_H

#include <string>
#include <vector>

#include "api_error.h"
#include "request.h"

namespace cli::serve {

struct AnthropicRequest {
  Request r;                               // chat = true; turn_request in OpenAI's names
  std::string model;                       // the request's "model", echoed in the answer
  std::vector<std::string> ignored_tools;  // server tools (web_search, bash, ...) not served here
};

// Parses a Messages body. `count_only`: /v1/messages/count_tokens (no max_tokens, no stream).
// Throws ApiError (400 naming the field).
AnthropicRequest ParseAnthropic(const std::string& body, const RequestContext& ctx, bool count_only = false);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_ANTHROPIC_REQUEST_H

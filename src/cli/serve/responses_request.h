// The request schema of OpenAI's Responses API (POST /v1/responses): a body checked and
// translated into the chat turn's request (OpenAI Chat Completions names), so that the one
// generation path serves it. No HTTP here (a fuzz target calls ParseResponses on random bytes);
// every rejection is an ApiError naming the field.
#ifndef ZERFOO_CLI_SERVE_RESPONSES_REQUEST_H
#define ZERFOO_CLI_SERVE_RESPONSES_REQUEST_H

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "request.h"
#include "zerfoo.h"

namespace cli::serve {

// Looks up a stored response's conversation (chat messages, without its instructions) by id;
// false when unknown or evicted.
using ResponseHistoryFn = std::function<bool(const std::string& id, json* messages)>;

struct ResponsesRequest {
  Request req;  // chat = true: turn_request, turn_messages, gp, stream, ...
  // The conversation without the instructions' system message: what a stored response keeps
  // (previous_response_id does not carry instructions over, as OpenAI specifies).
  json history = json::array();
  std::string previous_response_id;
  bool store = true;
  // The Response object's echo of the request (instructions, tools, tool_choice, text,
  // reasoning, temperature, ...).
  json echo = json::object();
  // Tools of types not served here (web_search, local_shell, custom, ...): skipped, named in a
  // response header.
  std::vector<std::string> ignored_tools;
  // Input item types skipped (none that carry conversation text).
  std::vector<std::string> ignored_items;
  // A function offered inside a `namespace` tool: its namespace, for the call items.
  std::map<std::string, std::string> namespace_of;
};

// Parses a Responses body; `history` resolves previous_response_id (none: every id is
// unknown, a 404). Throws ApiError.
ResponsesRequest ParseResponses(const std::string& body, const RequestContext& ctx,
                                const ResponseHistoryFn& history = nullptr);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_RESPONSES_REQUEST_H

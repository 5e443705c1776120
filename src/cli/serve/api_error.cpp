// ApiError helpers: building errors and parsing a JSON body (no HTTP here: the request parsers
// use this file, and the fuzz target links them without the server; send_error.cpp answers).
#include "api_error.h"

#include "../../common/json_depth.h"

namespace cli::serve {

std::string LibraryErrorInRequestTerms() {
  std::string m = zf_last_error();
  static const std::string kTools = "params->tools_json";
  for (size_t at = m.find(kTools); at != std::string::npos; at = m.find(kTools, at)) m.replace(at, kTools.size(), "tools");
  return m;
}

ApiError BadRequest(const std::string& code, const std::string& msg) {
  return {400, "invalid_request_error", code, msg};
}

ApiError ServerError(zf_status st) { return {500, "server_error", zf_status_string(st), zf_last_error()}; }

json ParseObject(const std::string& text) {
  // nlohmann parses without recursing, but dumps, copies and compares recursively, as do the
  // library's walks over schemas and tools: a body of 10^5 '[' would overflow the stack.
  if (zf::JsonNesting(text, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) {
    throw BadRequest("invalid_json", "request body nests arrays and objects deeper than " +
                                         std::to_string(zf::kMaxJsonNesting) + " levels");
  }
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw BadRequest("invalid_json", std::string("request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) throw BadRequest("invalid_json", "request body must be a JSON object");
  return body;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string ErrorBody(const ApiError& e) {
  return Dump(json{{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}});
}

}  // namespace cli::serve

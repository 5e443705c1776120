// How a request fails: an HTTP status with an OpenAI error object. Every layer below the server
// throws ApiError; the route handlers catch it and answer with SendError.
#ifndef ZERFOO_CLI_SERVE_API_ERROR_H
#define ZERFOO_CLI_SERVE_API_ERROR_H

#include <nlohmann/json.hpp>
#include <string>

#include "zerfoo.h"

namespace httplib {
struct Response;
}

namespace cli::serve {

using json = nlohmann::json;

// A request-level failure: HTTP status + OpenAI error object.
struct ApiError {
  int status;
  std::string type;
  std::string code;
  std::string message;
};

ApiError BadRequest(const std::string& code, const std::string& msg);

// The library's last error in the request's words: the C API names its parameters
// (params->tools_json[0]); the client sent them as request fields (tools[0]).
std::string LibraryErrorInRequestTerms();

// A 500 for a zerfoo call that failed; call it right after the failure (zf_last_error).
ApiError ServerError(zf_status st);

// A request body that must be a JSON object (every POST endpoint takes one).
json ParseObject(const std::string& text);

// JSON text for an answer; invalid UTF-8 (e.g. a piece that splits a character) becomes U+FFFD
// instead of throwing.
std::string Dump(const json& j);

// {"error": {"message", "type", "code"}}.
std::string ErrorBody(const ApiError& e);

// Sets the status and the error body in an API's shape (OpenAI's ErrorBody unless given; and
// Retry-After on a 503).
void SendError(httplib::Response& res, const ApiError& e, std::string (*format)(const ApiError&) = ErrorBody);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_API_ERROR_H

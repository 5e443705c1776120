// The request parsers of `zerfoo serve`'s front doors (src/cli/serve/*_request.*, request.cpp),
// fuzzed on the tiny llama model: byte 0 picks the API, the rest is the body. Invariants: a
// parser returns a Request or throws ApiError (a 4xx with a message): no other exception, no
// crash; a chat request's turn JSON is an object the library's zf_chat_turn_prompt answers with
// a documented status (the translation never produces what the chat turn cannot take).
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/serve/anthropic_request.h"
#include "cli/serve/infill_request.h"
#include "cli/serve/ollama_request.h"
#include "cli/serve/request.h"
#include "cli/serve/responses_request.h"
#include "common/tiny_model.h"
#include "fuzz_common.h"

namespace {

using zf::fuzz::Check;
using cli::serve::ApiError;
using cli::serve::Request;
using cli::serve::RequestContext;

zf_model* Model() {
  static zf_model* model = zf::fuzz::LoadOnce(zf::testutil::TinyLlamaGguf());
  return model;
}

RequestContext Context() {
  zf_model_summary info;
  info.struct_size = sizeof info;
  Check(zf_model_info(Model(), &info) == ZF_OK, "model info");
  return RequestContext{Model(), "tiny", true, info.n_vocab, 512, "", 0};
}

// The library takes what a front door translated, or refuses it with a documented status.
void CheckTurn(const Request& r) {
  const nlohmann::json turn = nlohmann::json::parse(r.turn_request, nullptr, false);
  Check(turn.is_object() && turn.contains("messages"), "a chat request's turn JSON is an object with messages");
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = r.turn_request.c_str();
  size_t needed = 0;
  const zf_status st = zf_chat_turn_prompt(Model(), &p, nullptr, 0, &needed);
  zf::fuzz::CheckStatus(st, "zf_chat_turn_prompt on a translated request");
}

using Parser = Request (*)(const std::string& body, const RequestContext& ctx);

Request OpenAiChat(const std::string& b, const RequestContext& c) { return cli::serve::ParseCompletion(b, true, c); }
Request OpenAiCompletion(const std::string& b, const RequestContext& c) {
  return cli::serve::ParseCompletion(b, false, c);
}

Request Anthropic(const std::string& b, const RequestContext& c) { return cli::serve::ParseAnthropic(b, c).r; }
Request AnthropicCount(const std::string& b, const RequestContext& c) {
  return cli::serve::ParseAnthropic(b, c, true).r;
}
// previous_response_id "resp_1" resolves to a short conversation; any other id is unknown.
Request Responses(const std::string& b, const RequestContext& c) {
  return cli::serve::ParseResponses(b, c, [](const std::string& id, nlohmann::json* messages) {
           if (id != "resp_1") return false;
           *messages = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}},
                                              {{"role", "assistant"}, {"content", "hello"}}});
           return true;
         }).req;
}
template <cli::serve::OllamaEndpoint E>
Request Ollama(const std::string& b, const RequestContext& c) {
  return cli::serve::ParseOllama(E, b, c).r;
}
Request Infill(const std::string& b, const RequestContext& c) { return cli::serve::ParseInfill(b, c); }

using cli::serve::OllamaEndpoint;
const Parser kParsers[] = {OpenAiChat,
                           OpenAiCompletion,
                           Anthropic,
                           AnthropicCount,
                           Responses,
                           Ollama<OllamaEndpoint::kChat>,
                           Ollama<OllamaEndpoint::kGenerate>,
                           Ollama<OllamaEndpoint::kEmbed>,
                           Ollama<OllamaEndpoint::kEmbeddings>,
                           Ollama<OllamaEndpoint::kShow>,
                           Infill};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zf::fuzz::QuietLogs();
  if (size < 1) return 0;
  const Parser parse = kParsers[data[0] % (sizeof kParsers / sizeof kParsers[0])];
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const RequestContext ctx = Context();
  try {
    const Request r = parse(body, ctx);
    if (r.chat && !r.turn_request.empty()) CheckTurn(r);
  } catch (const ApiError& e) {
    Check(e.status >= 400 && e.status < 500, "a request's fault is a 4xx");
    Check(!e.message.empty(), "an error names the problem");
  }
  return 0;
}

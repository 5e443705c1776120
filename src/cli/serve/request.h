// The request schema of /v1/completions and /v1/chat/completions: a JSON body checked and turned
// into a Request (sampling parameters, stop strings, logprobs, the tokenized prompt). Every
// rejection is an ApiError naming the field.
#ifndef ZERFOO_CLI_SERVE_REQUEST_H
#define ZERFOO_CLI_SERVE_REQUEST_H

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "api_error.h"
#include "image_request.h"
#include "model_text.h"
#include "zerfoo.h"

namespace cli::serve {

// The fields an answer, and every event of a streamed one, repeats.
struct AnswerHeader {
  std::string id;       // "chatcmpl-N", "cmpl-N", "msg_N", "resp_N", ...
  int64_t created = 0;  // Unix seconds
  std::string model;    // the served alias
};

// Parsed sampling/request parameters of one completion request.
struct Request {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool cache_prompt = true;
  std::vector<int32_t> prompt;
  std::string model_name;
  std::vector<std::string> stop;
  zf_generate_params gp{};
  // Token log-probabilities: chat `logprobs: true` (+ `top_logprobs`), completions `logprobs: n`
  // (legacy format). gp.n_logprobs is max(1, top) when on: the ABI reports alternatives only
  // with the chosen token, and top == 0 still asks for the chosen token's logprob.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  // Structured output: response_format, structured_outputs (vLLM), regex / choice / grammar /
  // json_schema at the top level; r.gp.constraint points here when the request is generated.
  std::string constraint;
  int32_t constraint_kind = ZF_CONSTRAINT_NONE;
  // Chat: the request's chat fields as zf_chat_turn's request JSON (messages, tools,
  // tool_choice, parallel_tool_calls, response_format, reasoning_format, chat_template_kwargs,
  // documents), the messages (the slot's conversation key) and --chat-template-file's text.
  std::string turn_request;
  json turn_messages;
  std::string chat_template;
  // The model's projector when the messages hold images (their parts are data: URLs by then,
  // image_request.h); nullptr otherwise. n_images counts them.
  const zf_mmproj* mmproj = nullptr;
  int n_images = 0;
  // llama-server's "lora": [{"id", "scale"}]: the adapters' scales for this request (unlisted
  // ones 0); absent (lora_set false): the model's current scales.
  bool lora_set = false;
  std::vector<std::pair<int32_t, float>> lora;

  // gp with the stop strings and the constraint pointing into this request (*stops holds the
  // pointer array; both must outlive the call the params go to).
  zf_generate_params GenerateParams(std::vector<const char*>* stops) const;
};

// What a request is checked against: the served model and the server's defaults.
struct RequestContext {
  const zf_model* model;     // tokenizes the prompt, renders `messages`
  std::string alias;         // the picked model's name (FrontDoor::Admit picks it by "model")
  bool cache_prompt;         // --cache-prompt, unless the request says otherwise
  int32_t n_vocab;           // token-id prompts must lie below it
  int n_ctx;                 // the prompt plus one token must fit
  std::string chat_template;  // --chat-template-file's text, "" for the model's
  int32_t draft_max = 0;      // --draft-max / --lookup: prompt-lookup drafts (0 = off)
  int32_t n_lora = 0;         // the model's LoRA adapters (a request's "lora" ids lie below it)
  ImagePolicy images = {};    // the model's projector and the image limits (none: text only)
};

// The chat fields of a body as zf_chat_turn's request JSON (messages, tools, tool_choice,
// parallel_tool_calls, response_format, reasoning_format, chat_template_kwargs, documents): the
// library checks them. Throws ApiError when `messages` is missing.
std::string TurnRequestJson(const json& body);

// Reads an optional number field of a body (every API's parser uses it); false when absent or
// null; throws a 400 naming the field on a wrong type.
template <class T>
bool GetNumber(const json& body, const char* key, T* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_number()) throw BadRequest("invalid_type", std::string("'") + key + "' must be a number");
  if (std::is_integral<T>::value && !it->is_number_integer() && !it->is_number_unsigned()) {
    throw BadRequest("invalid_type", std::string("'") + key + "' must be an integer");
  }
  if (std::is_integral<T>::value && it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)) {
    *out = T(INT64_MAX);  // past int64: as large as it gets, for the range check
    return true;
  }
  *out = it->get<T>();
  return true;
}

// Parses a completion (`chat` false: "prompt") or chat completion ("messages") body; throws
// ApiError.
Request ParseCompletion(const std::string& body, bool chat, const RequestContext& ctx);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_REQUEST_H

// Text through the model's tokenizer and chat template, with failures as ApiError: what request
// parsing, /tokenize, /apply-template and the logprobs JSON share.
#ifndef ZERFOO_CLI_SERVE_MODEL_TEXT_H
#define ZERFOO_CLI_SERVE_MODEL_TEXT_H

#include <cstdint>
#include <string>
#include <vector>

#include "api_error.h"
#include "zerfoo.h"

namespace cli::serve {

// zf_tokenize with ZF_TOKENIZE_* `flags`; throws ApiError (400 on invalid UTF-8).
std::vector<int32_t> Tokenize(const zf_model* model, const std::string& text, uint32_t flags);

// What a chat prompt is rendered with besides the messages.
struct ChatRender {
  std::string template_text;  // --chat-template-file, "" for the model's template
  std::string tools_json;  // the request's `tools` (JSON array), "" for none
  std::string extra_json;  // `chat_template_kwargs` (JSON object), "" for none
};

// An OpenAI `messages` array (roles system/developer/user/assistant/tool; content, tool_calls,
// tool_call_id, name, reasoning_content) rendered with the model's chat template, assistant turn
// opened; throws ApiError (400) on a malformed array or a template that rejects it.
std::string RenderChat(const zf_model* model, const json& messages, const ChatRender& opts = ChatRender());

// One token's text with special tokens rendered; empty if the token has none.
std::string TokenText(const zf_model* model, int32_t token);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_MODEL_TEXT_H

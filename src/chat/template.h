// Chat templates: Jinja source (the file's tokenizer.chat_template, or the caller's) rendered by
// the template engine in src/jinja exactly as transformers' apply_chat_template renders it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "jinja/value.h"

namespace zf::chat {

// The templates used when a file has none: ChatML, and Gemma's turn format (system text merged
// into the first user turn; no BOS text, the tokenizer adds BOS).
extern const char kChatMlTemplate[];
extern const char kGemmaTemplate[];

// Renders a chat template with `vars` (a jinja dict: messages, add_generation_prompt,
// bos_token, eos_token, tools, documents, extra variables). `now` pins strftime_now (seconds
// since the epoch, as UTC; -1 = the local time now). kTemplate on any template error, the
// message "line L, column C: ..." (syntax, unknown filter, raise_exception, limits).
Status RenderChatTemplate(std::string_view chat_template, const jinja::Value& vars, int64_t now, std::string* out);

}  // namespace zf::chat

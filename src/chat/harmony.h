// OpenAI's harmony format (gpt-oss), read by hand: it cannot be derived by diffing probe turns
// (the call's name sits in a message header, content next to a call is rendered as the analysis
// channel, reasoning comes from a `thinking` field). A turn is a sequence of messages, each
// `[<|start|>assistant] HEADER <|message|> BODY (<|end|> | <|call|> | <|return|>)`, the header
// naming a channel (`<|channel|>analysis|commentary|final`) and optionally a recipient
// (` to=functions.NAME`, before or after the channel) and a content type (`<|constrain|>json`).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/parser.h"

namespace zf::chat {

// True when a template renders harmony messages (its source writes the channel headers).
bool IsHarmonyTemplate(const std::string& template_source);

// analysis -> reasoning; final and commentary without a function recipient -> content;
// commentary to=functions.NAME -> a tool call (its body the JSON arguments). Text without
// harmony structure is content (or the generic JSON call form, as for other formats).
// `partial` as ParseAssistant's.
ParsedMessage ParseHarmony(std::string_view text, const nlohmann::ordered_json& tools, bool partial);

}  // namespace zf::chat

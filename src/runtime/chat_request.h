// A chat turn's request (OpenAI Chat Completions JSON) checked and read into what the turn needs:
// the messages as the template gets them, the tools it shows, how the answer is read back (the
// tool-choice policy) and the output constraint. Every rejection is kInvalidArgument naming the
// field ("request.tool_choice: ..."); type errors say "request.X must be ...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "runtime/constraint.h"

namespace zf::rt {

struct ChatRequest {
  // The conversation as templates get it: roles checked ("developer" is "system"), text content
  // parts joined, tool-call arguments given as objects where they parse (as llama-server does).
  nlohmann::ordered_json messages;
  bool may_normalize = false;       // something chat::NormalizeMessages may change
  nlohmann::ordered_json tools;     // shown to the template; null = none (a named tool_choice: that one)
  nlohmann::ordered_json documents; // null = none
  std::string extra_json;           // chat_template_kwargs ("" = none)
  bool parse_tools = false;         // calls are read back: tools offered and tool_choice not "none"
  bool require_call = false;        // tool_choice "required" or a named function
  bool parallel = true;             // parallel_tool_calls
  bool split_reasoning = true;      // reasoning_format not "none"
  // The final assistant message continued instead of answered with a new turn (llama-server's
  // assistant prefill, on by default, and its continue_final_message): the messages then end
  // before it, and its text is written after the generation prompt for the model to go on from.
  enum class Continue { kNone, kContent, kReasoning } continue_final = Continue::kNone;
  std::string continue_content, continue_reasoning;
  // Image parts (OpenAI's image_url with a data URL), in the order they appear: their bytes and
  // the part's name for errors ("request.messages[0].content[1]"). In `messages` each is the
  // text `image_marker` in its message's content, whose parts are joined as llama-server joins
  // a message with media (text parts by "\n", nothing before or after an image).
  struct Image {
    std::string field;
    std::string bytes;
    bool audio = false;  // an input_audio part (WAV bytes), not an image
  };
  std::vector<Image> images;
  std::string image_marker;  // absent from the request's text, so the rendered prompt splits at it
  // response_format as a constraint (kNone: none).
  ConstraintKind format_kind = ConstraintKind::kNone;
  std::string format_constraint;
};

Status ParseChatRequest(std::string_view request_json, ChatRequest* out);

}  // namespace zf::rt

// An assistant turn read back as OpenAI fields while it is generated: the text so far goes
// through zf_chat_parse (ZF_CHAT_PARSE_PARTIAL) after each piece, and what grew since the last
// piece becomes the deltas of a chat.completion.chunk (reasoning_content, content, tool_calls).
// The parse is the library's, so every binding reads a turn exactly as the server does.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zerfoo.h"

namespace cli::serve {

// How a request's output is read: the template and variables its prompt was rendered with, the
// offered tools, and whether reasoning is split out (llama-server's reasoning_format).
struct ChatReading {
  std::string template_text; // --chat-template-file, "" for the model's template
  std::string tools_json;    // "" = no tools offered
  std::string extra_json;    // chat_template_kwargs, "" = none
  bool parse_tools = false;  // tools offered and tool_choice is not "none"
  bool parallel = true;      // parallel_tool_calls: false keeps the first call only
  bool require_call = false; // tool_choice "required" or a named function
  bool split_reasoning = true;  // reasoning_format "auto" / "deepseek"; "none" keeps it in content
};

class AssistantStream {
 public:
  AssistantStream(const zf_model* model, ChatReading reading) : model_(model), reading_(std::move(reading)) {}

  // The deltas (each a chunk's "delta" object) for the text generated so far.
  std::vector<nlohmann::json> Update(const std::string& text);
  // The deltas still owed for the complete text, and the final message
  // ({"role","content","reasoning_content"?,"tool_calls"?}).
  std::vector<nlohmann::json> Finish(const std::string& text, nlohmann::json* message);
  bool called_tools() const { return !sent_args_.empty(); }

  // The whole message for a complete text (non-streaming answers).
  static nlohmann::json Message(const zf_model* model, const ChatReading& reading, const std::string& text);

 private:
  nlohmann::json Parse(const std::string& text, bool partial) const;
  std::vector<nlohmann::json> Deltas(const nlohmann::json& msg);

  const zf_model* model_;
  ChatReading reading_;
  std::string sent_content_, sent_reasoning_;
  std::vector<std::string> sent_args_;  // per call opened: the arguments sent so far
};

}  // namespace cli::serve

// An assistant turn's generated text parsed back into an OpenAI message: content, reasoning
// (between the template's reasoning markers) and tool calls (in the template's own call format,
// or a generic JSON form for templates without one). Pure functions of the text and the format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"

namespace zf::chat {

struct ToolCall {
  std::string id;         // as the model wrote it (formats with ids), else derived
  std::string name;
  std::string arguments;  // a JSON object's text: as written (JSON formats), else compact
};

struct ParsedMessage {
  std::string content;
  bool has_reasoning = false;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
};

// `tools`: the offered tools (an OpenAI `tools` array) or null: argument types for formats that
// write values as text, and the names the generic JSON fallback accepts (none offered: no calls).
// `partial`: the text is a prefix of the turn (streaming): text that may still become a marker
// or a call is held back, reasoning not yet closed is reasoning; the last call may be one still
// arriving (its name written): its arguments are what can be said so far. Each field of a later
// parse extends the earlier one (content, reasoning and a call's arguments grow at the end,
// calls are appended with the same ids).
ParsedMessage ParseAssistant(std::string_view text, const ChatFormat& format, const nlohmann::ordered_json& tools,
                             bool partial = false);

// {"role":"assistant","content":string|null,"reasoning_content"?,"tool_calls"?}; content is null
// when the turn is only tool calls.
nlohmann::ordered_json ToOpenAiMessage(const ParsedMessage& m);

// Lower-level pieces, shared with format.cpp's self-check.
// Matches one tool-call block at `pos` of `text`; on success appends the calls, sets *end and
// returns true. `partial`: a call the text ends inside is appended too (see ParseAssistant).
bool MatchToolCalls(std::string_view text, size_t pos, const ChatFormat& format, const nlohmann::ordered_json& tools,
                    std::vector<ToolCall>* calls, size_t* end, bool partial = false);

// An object literal with bare keys and strings between `quote` marks (ArgsStyle::kRelaxed) at
// text[i] ('{'): its end and its value as JSON, or npos.
size_t ReadRelaxedObject(std::string_view text, size_t i, std::string_view quote, nlohmann::ordered_json* out);
inline size_t RelaxedObjectEnd(std::string_view text, size_t i, std::string_view quote) {
  nlohmann::ordered_json v;
  return ReadRelaxedObject(text, i, quote, &v);
}

// The generic JSON call form (templates without their own): the whole text (or a ```json block)
// is {"name","arguments"|"parameters"}, a list of those or {"tool_calls":[...]}, every name an
// offered tool. Ids are left empty.
bool GenericCalls(std::string_view text, const nlohmann::ordered_json& tools, std::vector<ToolCall>* calls);

// A deterministic id for a call whose format writes none, from what is known when the call
// starts (the text before it, its name, its place), so that a streamed call keeps its first id.
std::string DerivedId(std::string_view before, const std::string& name, size_t index);

}  // namespace zf::chat

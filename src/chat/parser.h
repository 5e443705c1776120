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
// A final parse is lenient where a stream has already sent what it read (chat/stream_parser.h):
// a call whose JSON arguments began is a call, its arguments the object's text as written (valid
// JSON or not, cut short when generation stopped inside it), ending after them when what follows
// does not match the rest of the call's pattern. So is a call of an offered tool whose XML
// arguments were reached: cut short inside them, its arguments are the partial parse's, closed.
ParsedMessage ParseAssistant(std::string_view text, const ChatFormat& format, const nlohmann::ordered_json& tools,
                             bool partial = false);

// A final parse without that leniency: calls only where the whole pattern matches and the
// arguments are valid JSON (format.cpp's self-check of a derived format).
ParsedMessage ParseAssistantStrict(std::string_view text, const ChatFormat& format, const nlohmann::ordered_json& tools);

// {"role":"assistant","content":string|null,"reasoning_content"?,"tool_calls"?}; content is null
// when the turn is only tool calls.
nlohmann::ordered_json ToOpenAiMessage(const ParsedMessage& m);

// Lower-level pieces, shared with format.cpp's self-check.
// Matches one tool-call block at `pos` of `text`; on success appends the calls, sets *end and
// returns true. `partial`: a call the text ends inside is appended too (see ParseAssistant).
// `lenient`: as ParseAssistant's final parse.
bool MatchToolCalls(std::string_view text, size_t pos, const ChatFormat& format, const nlohmann::ordered_json& tools,
                    std::vector<ToolCall>* calls, size_t* end, bool partial = false, bool lenient = false);

// The end of a JSON value read a piece at a time ('{', '[' or '"' first): strings and escapes
// respected, brackets counted; the value itself is checked by the JSON parser.
struct JsonValueScanner {
  int depth = 0;
  bool in_string = false, escaped = false;
  // Reads the value's next bytes: how many of them up to and including its end, or npos if it
  // goes on (or a bracket closed that was never opened: it never ends).
  size_t Feed(std::string_view s);
};

// What reading a call found out beyond its fields (streaming).
struct CallScan {
  bool ran_out = false;                          // the text ended inside the call
  size_t args_begin = std::string_view::npos;    // JSON arguments: where their '{' is
  size_t args_end = std::string_view::npos;      // and where they end, when complete
  bool cut = false;  // lenient: what follows the arguments did not match; the call ends at args_end
                     // (XML arguments: after them, or at the text's end where it ended inside them)
  size_t xml_args = std::string_view::npos;  // XML arguments: where they start, once reached
  bool skip_cut_args = false;  // in: a call cut short inside XML arguments leaves its arguments
                               // unread (the caller reads them as a partial call)
};

// One call of a block read from a text that may still grow (chat/stream_parser.h): at `pos`, the
// block's open (index 0) or a separator, then the call.
struct CallRead {
  enum Result { kMismatch, kIncomplete, kComplete } result = kMismatch;
  size_t begin = std::string_view::npos;  // where the call starts (after the open or separator)
  ToolCall call;  // kComplete: the call as the final parse reads it; kIncomplete: name and id so far
                  // (ids the format writes none of are left empty: DerivedId(text[0, begin))), and
                  // for XML arguments, once certain, what can be said of them (a prefix of the final)
  size_t end = std::string_view::npos;         // kComplete: after the call
  bool certain = false;  // kIncomplete: the final parse will list the call (JSON or XML arguments begun)
  size_t args_begin = std::string_view::npos;  // kIncomplete: its JSON arguments' '{', if begun
};
CallRead ReadCallAt(std::string_view text, size_t pos, size_t index, const ChatFormat& format,
                    const nlohmann::ordered_json& tools);

// The rest of a call after its JSON arguments text[args_begin, args_end) were read piece by piece
// (streaming), as ParseAssistant's final parse reads it: the position after the call, where
// *scan says ran_out and cut when the text ends before that is known. `call`: its name so far.
size_t MatchCallAfterArgs(std::string_view text, size_t args_end, const ToolCallFormat& f,
                          const nlohmann::ordered_json& tools, ToolCall* call, CallScan* scan);

// The first word a tool-call block starts with (where the parser looks for calls), or "" where
// the generation prompt opened the block.
std::string CallAnchor(const ToolCallFormat& f);

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

// The length of the longest proper prefix of `marker` (not empty) that `text` ends with: text
// that may be the start of the marker, held back while streaming.
size_t PartialSuffix(std::string_view text, std::string_view marker);

// A deterministic id for a call whose format writes none, from what is known when the call
// starts (the text before it, its name, its place), so that a streamed call keeps its first id.
std::string DerivedId(std::string_view before, const std::string& name, size_t index);

}  // namespace zf::chat

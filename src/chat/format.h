// What a chat template writes around an assistant turn's reasoning and tool calls, derived from
// the template itself: probe conversations (a plain answer, an answer with reasoning, one and
// two tool calls) are rendered and diffed, so the markers are whatever the template emits
// (llama.cpp's "autoparser" idea). Nothing here knows a model family by name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zf::chat {

// Renders `messages` (OpenAI-style JSON) with the template under test, with the probe's tools
// offered; false when the template fails (raise_exception, an unsupported message shape).
using Renderer = std::function<bool(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                    std::string* out)>;

// One piece of a tool-call pattern: literal text, or a slot the parser fills from the output.
struct Piece {
  enum Kind { kLiteral, kName, kArgs, kId, kIndex } kind = kLiteral;  // kIndex: a call counter (digits)
  std::string text;  // kLiteral only
};

// How a template writes arguments.
enum class ArgsStyle {
  kJson,  // one JSON object (tojson of the arguments)
  kXml,   // one element per argument: param_open KEY param_mid VALUE param_close (Qwen3-Coder,
          // GLM, MiniMax); strings raw, other values as JSON
  kPython,   // a Python call's arguments, (k='v', n=3) (LFM2.5)
  kRelaxed,  // an object literal with bare keys and strings between string_quote marks
             // (Gemma 4's {key:<|"|>text<|"|>,n:3})
};

struct ToolCallFormat {
  bool native = false;        // the template renders tool calls (else: the generic JSON fallback)
  bool parallel = false;      // it renders several calls in one turn (some render only one)
  std::string block_open;     // before the first call (e.g. "[TOOL_CALLS][")
  std::string call_sep;       // between two calls (e.g. ", " or "\n")
  std::string block_close;    // after the last call (e.g. "]")
  std::vector<Piece> call;    // one call: literals and the name / arguments / id slots
  ArgsStyle args = ArgsStyle::kJson;
  std::string string_quote;  // kRelaxed: what a string value is written between
  std::string param_open, param_mid, param_close;  // kXml: around each key and value; param_close
                                                   // may name the key (kKeySlot: MiniMax-M3's </KEY>)
};

// Where param_close repeats the parameter's key.
inline constexpr char kKeySlot = '\x1f';

// param_close for `key`.
std::string ParamClose(const ToolCallFormat& f, std::string_view key);

struct ReasoningFormat {
  std::string open;          // e.g. "<think>" (whitespace trimmed); empty = no reasoning markers
  std::string close;         // e.g. "</think>"
  bool forced_open = false;  // the generation prompt already opened it: output starts inside
  bool prompt_closed = false;  // the generation prompt wrote an empty block (thinking is off)
};

struct ChatFormat {
  ReasoningFormat reasoning;
  ToolCallFormat tools;
  std::string end_of_turn;     // what the template writes after an assistant message's content
  std::string content_prefix;  // what it writes before the content (e.g. a final-channel header)
  bool harmony = false;        // OpenAI's harmony messages (gpt-oss): read by chat/harmony.h
  bool python_tag = false;     // Llama 3.x built-in tool calls after <|python_tag|> (chat/python_tag.h)
  bool renders_tool_calls = false;    // an assistant message's tool_calls show in what it renders
  bool renders_tool_results = false;  // so does a tool message's content
};

// Derives the format by rendering probe conversations; `template_source` is searched for
// reasoning markers the probes could not show (templates that drop reasoning_content).
// Never fails: what cannot be derived is left empty (plain content, generic tool-call JSON).
ChatFormat DeriveChatFormat(const Renderer& render, const std::string& template_source);

// OpenAI-style messages as the template can show them (what llama-server renders for clients
// that send tool-call turns to any model): an assistant message's content null (or absent) is
// ""; where the template does not render tool calls, they are written into the content as the
// generic JSON form the parser reads back ({"name","arguments"}, a list for several); where it
// does not render tool results, tool messages become user messages holding
// {"tool_response": {"name","tool_call_id","content"}} (consecutive ones, and a user message
// after them, in one message).
// Messages the template renders as they are stay untouched (null content included).
nlohmann::ordered_json NormalizeMessages(const nlohmann::ordered_json& messages, const ChatFormat& format);

// Whether NormalizeMessages may change `messages` for some template: tool calls, tool messages
// or an assistant message without content.
bool MayNeedNormalizing(const nlohmann::ordered_json& messages);

// The marker texts the format's output is read by (the call block's literals, reasoning markers,
// the content prefix; harmony's message headers; <|python_tag|>), not the end of turn. A model
// writes a marker that is one of its control tokens as that token, which renders as no text:
// the generator shows these (llama.cpp's "preserved tokens") so that the parser finds them.
std::vector<std::string> MarkerTexts(const ChatFormat& format);

// The probe's tool definitions (an OpenAI `tools` array), for the renderer to offer.
const nlohmann::ordered_json& ProbeTools();

}  // namespace zf::chat

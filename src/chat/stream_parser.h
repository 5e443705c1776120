// An assistant turn parsed while it is generated: each piece of text is read once (content and
// reasoning are scanned only in the new text and a held-back tail no longer than a marker; a
// call's JSON arguments are passed on as they arrive), and the deltas it gives add up to exactly
// the message the final parse (ReadAssistant) reads from the whole turn.
//
// Re-read per piece, bounded: the current call of a block from its start while its header is
// arriving; for XML arguments (Qwen3-Coder, GLM, MiniMax) the whole current call, O(call) per
// piece, whose partial parse is sent as it grows (complete parameters, a string value as it
// arrives; a CDATA value once complete); for Python and object-literal arguments the whole call,
// said once complete (no partial reader: their values are typed by how they end); after JSON
// arguments, what follows them.
// Held back until Finish: text after a block of calls, the generic JSON call form, harmony
// (gpt-oss) turns, calls after <|python_tag|> (Llama 3.x, whose tag may still turn a block of
// calls into content) and formats whose calls the generation prompt opened (no marker).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"

namespace zf::chat {

struct Delta {
  enum Kind { kContent, kReasoning, kToolCall, kToolArgs } kind = kContent;
  size_t index = 0;       // kToolCall, kToolArgs: the call's index
  std::string text;       // kContent, kReasoning, kToolArgs: the new text (whole UTF-8 characters)
  std::string id, name;   // kToolCall: the call's id and function name
};

// How the answer is read (the request's policy).
struct ReadOptions {
  bool parse_tools = true;      // false (no tools offered, or tool_choice "none"): no calls are read;
                                // their text is content (with reasoning still split out)
  size_t max_calls = SIZE_MAX;  // parallel_tool_calls false: 1; later calls are dropped
  bool split_reasoning = true;  // false (reasoning_format "none"): a turn with reasoning is content,
                                // the whole text as generated
};

// The final message of a complete turn under `options`: ParseAssistant's, with the policy
// applied. Without parse_tools the format's calls are not looked for (harmony's, read anyway,
// are dropped; without reasoning the content is then the turn as generated).
ParsedMessage ReadAssistant(std::string_view text, const ChatFormat& format, const nlohmann::ordered_json& tools,
                            const ReadOptions& options);

class StreamParser {
 public:
  StreamParser(const ChatFormat& format, nlohmann::ordered_json tools, ReadOptions options);

  // Appends a piece of generated text (whole UTF-8 characters) and appends to *out the deltas
  // that are now certain (text that may still become a marker or a call is held back).
  void Push(std::string_view piece, std::vector<Delta>* out);
  // The turn is complete: appends the remaining deltas.
  void Finish(std::vector<Delta>* out);
  // What the deltas said so far; after Finish, the final message.
  const ParsedMessage& message() const { return message_; }
  // The whole text pushed so far.
  const std::string& text() const { return text_; }

 private:
  enum class Phase {
    kStart,         // whether the turn opens with reasoning is not known yet
    kReasoning,     // inside reasoning
    kPrefix,        // the content's header (format.content_prefix) may be arriving
    kContentStart,  // where content starts and whether it may be the generic call form
    kContent,       // content, up to a call block's marker
    kCalls,         // inside a block of calls
    kRaw,           // everything is content as generated (reasoning_format "none")
    kHeld,          // the rest is said by Finish
    kDone,
  };

  void Advance(std::vector<Delta>* out);
  bool StepStart();
  bool StepReasoning(std::vector<Delta>* out);
  bool StepPrefix();
  bool StepContentStart();
  bool StepContent(std::vector<Delta>* out);
  bool StepCalls(std::vector<Delta>* out);
  void SetRest(size_t pos, bool read_before);
  // The end of [from, to) without whitespace at its end (amortized over growing `to`).
  size_t TrimmedEnd(size_t from, size_t to);
  // Sends text_[*sent, to) as content or reasoning (to backed off to a character boundary).
  void Send(Delta::Kind kind, size_t* sent, size_t to, std::vector<Delta>* out);
  void SendArgs(size_t to, std::vector<Delta>* out);
  // Sends what `now` (the current call's arguments so far) adds to what was sent of them.
  void SendArgsGrowth(const std::string& now, std::vector<Delta>* out);
  void OpenCall(const ToolCall& call, std::vector<Delta>* out);
  bool CloseCall(ToolCall call, size_t end, std::vector<Delta>* out);

  ChatFormat format_;
  nlohmann::ordered_json tools_;
  ReadOptions options_;
  std::string text_;
  ParsedMessage message_;
  Phase phase_ = Phase::kStart;
  std::string anchor_;  // the call block's first word, "" if none

  size_t reasoning_begin_ = 0, reasoning_sent_ = std::string::npos;  // sent: npos until its first word
  size_t rest_begin_ = 0;  // where what follows reasoning starts (ParseAssistant's `rest`)
  bool read_before_ = false;
  size_t content_sent_ = 0;
  size_t scan_ = 0;  // where the next search for a marker starts

  // The call block.
  size_t call_pos_ = 0;  // the current call's open or separator
  size_t call_index_ = 0;
  size_t call_begin_ = 0;  // where it starts, after the open or separator (its derived id's text)
  bool call_open_ = false;  // the current call was sent (kToolCall)
  ToolCall pending_;        // its name and id, once its JSON arguments began
  // Its JSON arguments: text_[args_begin_, args_end_), scanned up to args_fed_, sent up to args_sent_.
  size_t args_begin_ = std::string::npos, args_end_ = std::string::npos, args_sent_ = 0, args_fed_ = 0;
  bool args_scanning_ = false;
  JsonValueScanner args_scan_;

  size_t trim_from_ = std::string::npos, trim_to_ = 0, trim_end_ = 0;  // TrimmedEnd's memo
};

}  // namespace zf::chat

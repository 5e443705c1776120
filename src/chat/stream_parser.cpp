// Reading an assistant turn as it is generated (see stream_parser.h). Each phase follows the
// rule of ParseAssistant (parser.cpp) for its part of the turn, sending only what no later text
// can change; Finish reads the whole turn once and sends what the phases held back.
#include "chat/stream_parser.h"

#include <algorithm>
#include <utility>

#include "chat/python_tag.h"
#include "common/utf8.h"

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;
constexpr size_t kNpos = std::string::npos;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The first non-space position of text[from, text.size()), or npos.
size_t FirstNonSpace(const std::string& text, size_t from) {
  while (from < text.size() && IsSpace(text[from])) ++from;
  return from < text.size() ? from : kNpos;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Tools as the policy offers them: none without parse_tools.
Json OfferedTools(const Json& tools, const ReadOptions& o) { return o.parse_tools ? tools : Json(); }

// The format as the policy reads it: without parse_tools, no call format is looked for.
ChatFormat PolicyFormat(ChatFormat f, const ReadOptions& o) {
  if (!o.parse_tools) {
    f.tools.native = false;
    f.python_tag = false;
  }
  return f;
}

// `s` without a UTF-8 sequence cut at `to`: `to` moved back to a character's start.
size_t CharBoundary(std::string_view s, size_t from, size_t to) {
  while (to > from && to < s.size() && (static_cast<unsigned char>(s[to]) & 0xC0) == 0x80) --to;
  return to;
}

// What `now` adds to `sent` (which it must extend: a stream never takes back what it sent).
std::string_view Growth(const std::string& sent, const std::string& now) {
  if (now.size() < sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
  return std::string_view(now).substr(sent.size());
}

}  // namespace

ParsedMessage ReadAssistant(std::string_view text, const ChatFormat& format, const Json& tools, const ReadOptions& options) {
  ParsedMessage m = ParseAssistant(text, PolicyFormat(format, options), OfferedTools(tools, options), false);
  if (!options.parse_tools && !m.tool_calls.empty()) {
    // Calls read without tools (harmony's are a message type) are text.
    m.tool_calls.clear();
    if (!m.has_reasoning) m.content = std::string(text);
  }
  if (m.tool_calls.size() > options.max_calls) m.tool_calls.resize(options.max_calls);
  if (!options.split_reasoning && m.has_reasoning) {
    m = ParsedMessage();
    m.content = std::string(text);
  }
  return m;
}

StreamParser::StreamParser(const ChatFormat& format, Json tools, ReadOptions options)
    : format_(PolicyFormat(format, options)), tools_(OfferedTools(tools, options)), options_(options) {
  if (format_.tools.native) anchor_ = CallAnchor(format_.tools);
  if (format_.harmony) phase_ = Phase::kHeld;  // its messages interleave channels: read once complete
}

void StreamParser::Push(std::string_view piece, std::vector<Delta>* out) {
  if (phase_ == Phase::kDone) return;
  text_.append(piece);
  Advance(out);
}

void StreamParser::Advance(std::vector<Delta>* out) {
  for (bool progress = true; progress;) {
    switch (phase_) {
      case Phase::kStart: progress = StepStart(); break;
      case Phase::kReasoning: progress = StepReasoning(out); break;
      case Phase::kPrefix: progress = StepPrefix(); break;
      case Phase::kContentStart: progress = StepContentStart(); break;
      case Phase::kContent: progress = StepContent(out); break;
      case Phase::kCalls: progress = StepCalls(out); break;
      case Phase::kRaw:
        Send(Delta::kContent, &content_sent_, text_.size(), out);
        progress = false;
        break;
      case Phase::kHeld:
      case Phase::kDone: progress = false; break;
    }
  }
}

// ParseAssistant's step 1: the turn opens the reasoning (its open marker, or the generation
// prompt did), starts with an empty block (the close marker), or has none.
bool StreamParser::StepStart() {
  const ReasoningFormat& r = format_.reasoning;
  if (r.close.empty()) {
    SetRest(0, false);
    return true;
  }
  const size_t t = FirstNonSpace(text_, 0);
  if (t == kNpos) return false;
  const std::string_view head = std::string_view(text_).substr(t);
  if (!r.open.empty() && StartsWith(head, r.open)) {
    reasoning_begin_ = scan_ = t + r.open.size();
    phase_ = Phase::kReasoning;
  } else if (StartsWith(head, r.close)) {
    SetRest(t + r.close.size(), true);
  } else if ((!r.open.empty() && StartsWith(r.open, head)) || StartsWith(r.close, head)) {
    return false;  // may be a marker arriving
  } else if (r.forced_open) {
    reasoning_begin_ = scan_ = 0;
    phase_ = Phase::kReasoning;
  } else {
    SetRest(0, false);
  }
  return true;
}

// Reasoning up to the close marker, trimmed; what may be the marker arriving is held back.
bool StreamParser::StepReasoning(std::vector<Delta>* out) {
  const std::string& close = format_.reasoning.close;
  const size_t c = text_.find(close, scan_);
  const size_t hold = c != kNpos ? c : text_.size() - PartialSuffix(std::string_view(text_).substr(reasoning_begin_), close);
  if (c == kNpos) scan_ = std::max(reasoning_begin_, text_.size() - std::min(text_.size(), close.size() - 1));
  if (reasoning_sent_ == kNpos) {
    const size_t first = FirstNonSpace(text_, reasoning_begin_);
    if (first != kNpos && first < hold) {
      reasoning_sent_ = first;
      if (!options_.split_reasoning) {
        // The turn has reasoning: all of it is content, as generated.
        phase_ = Phase::kRaw;
        return true;
      }
      message_.has_reasoning = true;
    }
  }
  if (reasoning_sent_ != kNpos) Send(Delta::kReasoning, &reasoning_sent_, TrimmedEnd(reasoning_sent_, hold), out);
  if (c == kNpos) return false;
  SetRest(c + close.size(), true);
  return true;
}

void StreamParser::SetRest(size_t pos, bool read_before) {
  rest_begin_ = pos;
  read_before_ = read_before;
  phase_ = Phase::kPrefix;
}

// The template's header before content (a final channel) is not content.
bool StreamParser::StepPrefix() {
  std::string_view prefix = format_.content_prefix;
  while (!prefix.empty() && IsSpace(prefix.front())) prefix.remove_prefix(1);
  while (!prefix.empty() && IsSpace(prefix.back())) prefix.remove_suffix(1);
  if (!prefix.empty()) {
    const size_t t = FirstNonSpace(text_, rest_begin_);
    if (t == kNpos) return false;
    const std::string_view head = std::string_view(text_).substr(t);
    if (StartsWith(head, prefix)) {
      rest_begin_ = t + prefix.size();
      read_before_ = true;
    } else if (StartsWith(prefix, head)) {
      return false;
    }
  }
  phase_ = Phase::kContentStart;
  return true;
}

// Content starts at its first word where something was read out before it (else with the
// turn); a turn that may be the generic JSON call form, or a format whose calls may start
// anywhere, is said once complete.
bool StreamParser::StepContentStart() {
  const bool generic = tools_.is_array() && !tools_.empty();
  const bool unmarked_calls = format_.tools.native && anchor_.empty();
  size_t start = rest_begin_;
  if (generic || read_before_) {
    start = FirstNonSpace(text_, rest_begin_);
    if (start == kNpos) return false;
    if (generic && (text_[start] == '{' || text_[start] == '[' || text_[start] == '`')) {
      phase_ = Phase::kHeld;
      return true;
    }
    if (!read_before_) start = rest_begin_;
  }
  if (unmarked_calls) {
    phase_ = Phase::kHeld;
    return true;
  }
  content_sent_ = scan_ = start;
  phase_ = Phase::kContent;
  return true;
}

// Content up to the first place a call block may start (its marker, or <|python_tag|>).
bool StreamParser::StepContent(std::vector<Delta>* out) {
  size_t at = kNpos, hold = text_.size();
  bool python_tag = false;
  if (!anchor_.empty()) {
    at = text_.find(anchor_, scan_);
    if (at == kNpos) hold = std::min(hold, text_.size() - PartialSuffix(std::string_view(text_).substr(scan_), anchor_));
  }
  if (format_.python_tag) {
    const size_t tag = text_.find(kPythonTag, scan_);
    if (tag != kNpos && tag < at) at = tag, python_tag = true;
    if (tag == kNpos) hold = std::min(hold, text_.size() - PartialSuffix(std::string_view(text_).substr(scan_), kPythonTag));
  }
  if (at != kNpos) hold = at;
  Send(Delta::kContent, &content_sent_, TrimmedEnd(content_sent_, hold), out);
  if (at == kNpos) {
    size_t longest = anchor_.size();
    if (format_.python_tag) longest = std::max(longest, kPythonTag.size());
    scan_ = std::max(scan_, text_.size() - std::min(text_.size(), longest));
    return false;
  }
  if (python_tag || format_.python_tag) {
    // After the tag, or with a tag still possible later (it would make the block content),
    // the rest is said by Finish.
    phase_ = Phase::kHeld;
    return true;
  }
  call_pos_ = at;
  call_index_ = 0;
  phase_ = Phase::kCalls;
  return true;
}

// Calls of the block at call_pos_, one at a time (ReadCallAt): each sent once certain, its
// JSON arguments passed on as they arrive and not read again: once they end, only what follows
// them is (MatchCallAfterArgs). XML arguments: the call is re-read per piece and what the
// partial parse says of them (a prefix of the final arguments) is sent as it grows.
bool StreamParser::StepCalls(std::vector<Delta>* out) {
  if (call_index_ >= options_.max_calls) {
    phase_ = Phase::kHeld;  // later calls are dropped; what follows them is content (Finish)
    return true;
  }
  const std::string_view rest = std::string_view(text_).substr(rest_begin_);
  if (args_scanning_) {
    const size_t n = args_scan_.Feed(std::string_view(text_).substr(args_fed_));
    if (n == kNpos) {
      args_fed_ = text_.size();
      if (call_open_) SendArgs(text_.size(), out);
      return false;
    }
    args_fed_ += n;
    args_scanning_ = false;
    args_end_ = args_fed_;
  }
  if (args_end_ != kNpos) {
    CallScan scan;
    ToolCall call = pending_;
    const size_t e = MatchCallAfterArgs(rest, args_end_ - rest_begin_, format_.tools, tools_, &call, &scan);
    if (e == kNpos || (scan.cut && scan.ran_out)) return false;  // what follows the arguments is arriving
    call.arguments = text_.substr(args_begin_, args_end_ - args_begin_);
    return CloseCall(std::move(call), e, out);
  }
  CallRead r = ReadCallAt(rest, call_pos_ - rest_begin_, call_index_, format_, tools_);
  if (r.result == CallRead::kMismatch) {
    if (call_index_ == 0) {
      // Not a block here: the marker is content, and the search goes on after it.
      scan_ = call_pos_ + 1;
      phase_ = Phase::kContent;
    } else {
      phase_ = Phase::kHeld;  // the block ended: what follows is content (Finish)
    }
    return true;
  }
  if (r.begin != kNpos) call_begin_ = rest_begin_ + r.begin;
  if (r.result == CallRead::kComplete) return CloseCall(std::move(r.call), r.end, out);
  if (r.certain && !call_open_) OpenCall(r.call, out);
  if (r.args_begin == kNpos) {
    // Re-read with the next piece: a header is short; XML arguments are the current call's,
    // what can be said of them so far (a string value as it grows) sent as it grows.
    if (call_open_) SendArgsGrowth(r.call.arguments, out);
    return false;
  }
  pending_ = std::move(r.call);
  args_begin_ = args_sent_ = args_fed_ = rest_begin_ + r.args_begin;
  args_scan_ = JsonValueScanner();
  args_scanning_ = true;
  return true;  // feeds what has arrived of them
}

// The current call is complete (`end` relative to rest_begin_): sent whole or what was not yet.
bool StreamParser::CloseCall(ToolCall call, size_t end, std::vector<Delta>* out) {
  if (!call_open_) {
    std::string args = std::move(call.arguments);
    OpenCall(call, out);
    call.arguments = std::move(args);
  }
  SendArgsGrowth(call.arguments, out);
  call_pos_ = rest_begin_ + end;
  ++call_index_;
  call_open_ = false;
  args_begin_ = args_end_ = kNpos;
  return true;
}

// Sends the current call's id (derived from the text before it where the format writes none)
// and name; its arguments follow.
void StreamParser::OpenCall(const ToolCall& call, std::vector<Delta>* out) {
  ToolCall c{call.id, call.name, ""};
  if (c.id.empty()) c.id = DerivedId(std::string_view(text_).substr(rest_begin_, call_begin_ - rest_begin_), c.name, call_index_);
  out->push_back({Delta::kToolCall, call_index_, {}, c.id, c.name});
  message_.tool_calls.push_back(std::move(c));
  call_open_ = true;
}

void StreamParser::SendArgsGrowth(const std::string& now, std::vector<Delta>* out) {
  ToolCall& sent = message_.tool_calls.back();
  const std::string_view more = Growth(sent.arguments, now);
  if (more.empty()) return;
  out->push_back({Delta::kToolArgs, call_index_, std::string(more), {}, {}});
  sent.arguments.append(more);
}

void StreamParser::SendArgs(size_t to, std::vector<Delta>* out) {
  const std::string_view whole = WholeUtf8Prefix(std::string_view(text_).substr(args_sent_, to - args_sent_));
  if (whole.empty()) return;
  out->push_back({Delta::kToolArgs, call_index_, std::string(whole), {}, {}});
  message_.tool_calls.back().arguments.append(whole);
  args_sent_ += whole.size();
}

size_t StreamParser::TrimmedEnd(size_t from, size_t to) {
  if (from != trim_from_ || to < trim_to_) {
    trim_from_ = trim_to_ = trim_end_ = from;
  }
  for (; trim_to_ < to; ++trim_to_) {
    if (!IsSpace(text_[trim_to_])) trim_end_ = trim_to_ + 1;
  }
  return trim_end_;
}

void StreamParser::Send(Delta::Kind kind, size_t* sent, size_t to, std::vector<Delta>* out) {
  to = CharBoundary(text_, *sent, to);
  if (to <= *sent) return;
  std::string piece = text_.substr(*sent, to - *sent);
  (kind == Delta::kContent ? message_.content : message_.reasoning) += piece;
  out->push_back({kind, 0, std::move(piece), {}, {}});
  *sent = to;
}

void StreamParser::Finish(std::vector<Delta>* out) {
  if (phase_ == Phase::kDone) return;
  phase_ = Phase::kDone;
  // The whole turn read once: what the phases held back, and what only the end decides.
  ParsedMessage final_msg = ReadAssistant(text_, format_, tools_, options_);
  if (const std::string_view more = Growth(message_.reasoning, final_msg.reasoning); !more.empty()) {
    out->push_back({Delta::kReasoning, 0, std::string(more), {}, {}});
  }
  if (const std::string_view more = Growth(message_.content, final_msg.content); !more.empty()) {
    out->push_back({Delta::kContent, 0, std::string(more), {}, {}});
  }
  for (size_t k = 0; k < final_msg.tool_calls.size(); ++k) {
    const ToolCall& c = final_msg.tool_calls[k];
    if (k >= message_.tool_calls.size()) {
      out->push_back({Delta::kToolCall, k, {}, c.id, c.name});
      if (!c.arguments.empty()) out->push_back({Delta::kToolArgs, k, c.arguments, {}, {}});
    } else if (const std::string_view more = Growth(message_.tool_calls[k].arguments, c.arguments); !more.empty()) {
      out->push_back({Delta::kToolArgs, k, std::string(more), {}, {}});
    }
  }
  message_ = std::move(final_msg);
}

}  // namespace zf::chat

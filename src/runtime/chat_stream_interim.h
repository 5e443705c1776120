// INTERIM (removed when chat/stream_parser.h lands): a StreamParser with the same interface that
// re-parses the text so far after each piece (quadratic; what the server did).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/parser.h"

namespace zf::chat {

struct Delta {
  enum Kind { kContent, kReasoning, kToolCall, kToolArgs } kind = kContent;
  size_t index = 0;
  std::string text;
  std::string id, name;
};

struct ReadOptions {
  bool parse_tools = true;
  size_t max_calls = SIZE_MAX;
  bool split_reasoning = true;
};

class StreamParser {
 public:
  StreamParser(const ChatFormat& format, nlohmann::ordered_json tools, ReadOptions options)
      : format_(format), tools_(std::move(tools)), o_(options) {}
  void Push(std::string_view piece, std::vector<Delta>* out) {
    text_ += piece;
    Emit(Parse(true), out);
  }
  void Finish(std::vector<Delta>* out) { Emit(Parse(false), out); }
  const ParsedMessage& message() const { return sent_; }

 private:
  ParsedMessage Parse(bool partial) const {
    if (!o_.split_reasoning) {
      ParsedMessage m;
      m.content = text_;
      return m;
    }
    ParsedMessage m = ParseAssistant(text_, format_, o_.parse_tools ? tools_ : nlohmann::ordered_json(), partial);
    if (!o_.parse_tools && !m.tool_calls.empty()) {
      m.tool_calls.clear();
      if (!m.has_reasoning && !partial) m.content = text_;
    }
    if (m.tool_calls.size() > o_.max_calls) m.tool_calls.resize(o_.max_calls);
    return m;
  }
  static void Grow(Delta::Kind kind, size_t index, const std::string& now, std::string* sent, std::vector<Delta>* out) {
    if (now.size() > sent->size() && now.compare(0, sent->size(), *sent) == 0) {
      Delta d;
      d.kind = kind;
      d.index = index;
      d.text = now.substr(sent->size());
      *sent = now;
      out->push_back(std::move(d));
    }
  }
  void Emit(const ParsedMessage& m, std::vector<Delta>* out) {
    if (m.has_reasoning) sent_.has_reasoning = true;
    Grow(Delta::kReasoning, 0, m.reasoning, &sent_.reasoning, out);
    Grow(Delta::kContent, 0, m.content, &sent_.content, out);
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
      if (i == sent_.tool_calls.size()) {
        Delta d;
        d.kind = Delta::kToolCall;
        d.index = i;
        d.id = m.tool_calls[i].id;
        d.name = m.tool_calls[i].name;
        out->push_back(d);
        sent_.tool_calls.push_back({d.id, d.name, ""});
      }
      Grow(Delta::kToolArgs, i, m.tool_calls[i].arguments, &sent_.tool_calls[i].arguments, out);
    }
  }
  const ChatFormat format_;
  nlohmann::ordered_json tools_;
  ReadOptions o_;
  std::string text_;
  ParsedMessage sent_;
};

}  // namespace zf::chat

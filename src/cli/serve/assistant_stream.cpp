#include "assistant_stream.h"

#include "../common.h"

namespace cli::serve {

using json = nlohmann::json;

json AssistantStream::Parse(const std::string& text, bool partial) const {
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.flags = partial ? ZF_CHAT_PARSE_PARTIAL : 0;
  // Without tools to read, the parse still splits reasoning; tools are offered only when the
  // request allows calls, so that a model writing a call's format without being asked is content.
  p.tools_json = reading_.parse_tools && !reading_.tools_json.empty() ? reading_.tools_json.c_str() : nullptr;
  p.extra_json = reading_.extra_json.empty() ? nullptr : reading_.extra_json.c_str();
  p.template_text = reading_.template_text.empty() ? nullptr : reading_.template_text.c_str();
  std::string out;
  const zf_status st = FetchString(
      [&](char* buf, size_t cap, size_t* needed) { return zf_chat_parse(model_, text.data(), text.size(), &p, buf, cap, needed); },
      true, &out);
  json msg = st == ZF_OK ? json::parse(out, nullptr, false) : json();
  if (!msg.is_object()) msg = {{"role", "assistant"}, {"content", text}};  // never lose the text
  if (!reading_.parse_tools && msg.contains("tool_calls")) {
    // Calls the request did not allow are text: without reasoning, the turn as generated (a
    // partial parse keeps holding the call's text back until the turn is complete).
    msg.erase("tool_calls");
    if (!msg.contains("reasoning_content") && !partial) msg["content"] = text;
  }
  if (!reading_.parallel && msg.contains("tool_calls") && msg["tool_calls"].size() > 1) {
    msg["tool_calls"].erase(msg["tool_calls"].begin() + 1, msg["tool_calls"].end());
  }
  if (!reading_.split_reasoning && msg.contains("reasoning_content")) msg = {{"role", "assistant"}, {"content", text}};
  if (!msg.contains("tool_calls") && msg["content"].is_null()) msg["content"] = "";
  return msg;
}

std::vector<json> AssistantStream::Deltas(const json& msg) {
  std::vector<json> out;
  auto grow = [&](const char* field, const std::string& now, std::string* sent) {
    // Only growth at the end is sent (a field never shrinks in a partial parse); what the final
    // parse trims is simply not sent again.
    if (now.size() > sent->size() && now.compare(0, sent->size(), *sent) == 0) {
      out.push_back({{field, now.substr(sent->size())}});
      *sent = now;
    }
  };
  if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string()) {
    grow("reasoning_content", msg["reasoning_content"].get<std::string>(), &sent_reasoning_);
  }
  if (msg["content"].is_string()) grow("content", msg["content"].get<std::string>(), &sent_content_);
  if (msg.contains("tool_calls")) {
    const json& calls = msg["tool_calls"];
    for (size_t i = 0; i < calls.size(); ++i) {
      // A call opens with its id, type and name (arguments ""), as OpenAI streams it; its
      // arguments follow as fragments while the parse says more of them (a partial parse's
      // arguments are a prefix of the final ones, so the fragments add up to them).
      const json& fn = calls[i]["function"];
      if (i == sent_args_.size()) {
        out.push_back({{"tool_calls", json::array({{{"index", i}, {"id", calls[i]["id"]}, {"type", "function"},
                                                     {"function", {{"name", fn["name"]}, {"arguments", ""}}}}})}});
        sent_args_.emplace_back();
      }
      if (i >= sent_args_.size()) continue;
      const std::string args = fn["arguments"].get<std::string>();
      std::string& sent = sent_args_[i];
      if (args.size() > sent.size() && args.compare(0, sent.size(), sent) == 0) {
        out.push_back({{"tool_calls", json::array({{{"index", i}, {"function", {{"arguments", args.substr(sent.size())}}}}})}});
        sent = args;
      }
    }
  }
  return out;
}

std::vector<json> AssistantStream::Update(const std::string& text) { return Deltas(Parse(text, true)); }

std::vector<json> AssistantStream::Finish(const std::string& text, json* message) {
  *message = Parse(text, false);
  return Deltas(*message);
}

json AssistantStream::Message(const zf_model* model, const ChatReading& reading, const std::string& text) {
  AssistantStream s(model, reading);
  return s.Parse(text, false);
}

}  // namespace cli::serve

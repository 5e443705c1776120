// Anthropic's Messages API on the shared generation path: POST /v1/messages (whole or streamed
// as Anthropic's typed server-sent events) and /v1/messages/count_tokens. The body is translated
// by anthropic_request.cpp; here the turn's events and final message become Anthropic's blocks.
#include "anthropic_api.h"

#include <atomic>
#include <cstdio>
#include <memory>

#include "anthropic_request.h"
#include "model_text.h"

namespace cli::serve {

namespace {

// Anthropic's error types by HTTP status.
const char* ErrorType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

json ErrorJson(const ApiError& e) {
  return {{"type", "error"}, {"error", {{"type", ErrorType(e.status)}, {"message", e.message}}}};
}

std::string AnthropicError(const ApiError& e) { return Dump(ErrorJson(e)); }

// One server-sent event with Anthropic's framing: the event's type, then its JSON.
std::string Sse(const char* type, const json& data) {
  return std::string("event: ") + type + "\ndata: " + Dump(data) + "\n\n";
}

const char* StopReason(const TurnOutcome& out) {
  if (out.finish == ZF_FINISH_TOOL_CALLS) return "tool_use";
  if (out.finish == ZF_FINISH_LENGTH) return "max_tokens";
  if (out.stop_reason == ZF_STOP_STRING) return "stop_sequence";
  return "end_turn";
}

// The stop sequence that ended the answer. The turn says a stop string matched, not which one:
// named when the request had one; null when it had several.
json StopSequence(const TurnOutcome& out, const Request& r) {
  if (out.stop_reason != ZF_STOP_STRING || out.finish != ZF_FINISH_STOP || r.stop.size() != 1) return nullptr;
  return r.stop[0];
}

// Anthropic counts input without the cache reads: input + cache_read = the whole prompt.
json Usage(const TurnOutcome& out) {
  return {{"input_tokens", out.n_prompt - out.n_cached},
          {"output_tokens", out.n_generated},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", out.n_cached}};
}

// A call's arguments as tool_use input (an object; the turn's tool grammar makes them one).
json ToolInput(const std::string& args) {
  json in = json::parse(args, nullptr, false);
  return in.is_object() ? in : json::object();
}

// We have no signing key: thinking blocks carry an empty signature (the SDK takes any string;
// a thinking block sent back is read for its text only).
constexpr const char* kSignature = "";

class MessageWriter : public TurnWriter {
 public:
  MessageWriter(std::shared_ptr<const AnthropicRequest> a, AnswerHeader h) : a_(std::move(a)), h_(std::move(h)) {}

  json Whole(const TurnOutcome& out) override {
    json content = json::array();
    const json& m = out.message;
    auto text_of = [&](const char* key) {
      auto it = m.find(key);
      return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string reasoning = text_of("reasoning_content"), text = text_of("content");
    if (!reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", reasoning}, {"signature", kSignature}});
    if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
    auto calls = m.find("tool_calls");
    if (calls != m.end() && calls->is_array()) {
      for (const json& c : *calls) {
        const json fn = c.value("function", json::object());
        content.push_back({{"type", "tool_use"},
                           {"id", c.value("id", std::string())},
                           {"name", fn.value("name", std::string())},
                           {"input", ToolInput(fn.value("arguments", std::string("{}")))}});
      }
    }
    return {{"id", h_.id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", h_.model},
            {"content", std::move(content)},
            {"stop_reason", StopReason(out)},
            {"stop_sequence", StopSequence(out, a_->r)},
            {"usage", Usage(out)}};
  }

  // message_start (the usage is known at the end: message_delta carries it in full), then ping.
  std::string Open() override {
    json usage = {{"input_tokens", 0}, {"output_tokens", 0}, {"cache_creation_input_tokens", 0},
                  {"cache_read_input_tokens", 0}};
    json msg = {{"id", h_.id},           {"type", "message"},       {"role", "assistant"},
                {"model", h_.model},     {"content", json::array()}, {"stop_reason", nullptr},
                {"stop_sequence", nullptr}, {"usage", usage}};
    return Sse("message_start", {{"type", "message_start"}, {"message", msg}}) + Sse("ping", {{"type", "ping"}});
  }

  // Each kind of output is a block of its own: a new kind closes the open block; each call is
  // one tool_use block.
  std::string Event(const TurnDelta& d) override {
    switch (d.kind) {
      case ZF_TURN_REASONING:
        if (d.text.empty()) return "";
        return Then(Begin(kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", kSignature}}),
                    {{"type", "thinking_delta"}, {"thinking", d.text}});
      case ZF_TURN_CONTENT:
        if (d.text.empty()) return "";
        return Then(Begin(kText, {{"type", "text"}, {"text", ""}}), {{"type", "text_delta"}, {"text", d.text}});
      case ZF_TURN_TOOL_CALL: {
        std::string s = End();  // every call opens its own block
        return s + Begin(kTool, {{"type", "tool_use"}, {"id", d.id}, {"name", d.name}, {"input", json::object()}});
      }
      case ZF_TURN_TOOL_ARGS:
        if (d.text.empty() || open_ != kTool) return "";
        return Delta({{"type", "input_json_delta"}, {"partial_json", d.text}});
      default: return "";  // logprobs are not part of this API; DONE: Close
    }
  }

  std::string Close(const TurnOutcome& out) override {
    std::string s = End();
    s += Sse("message_delta", {{"type", "message_delta"},
                               {"delta", {{"stop_reason", StopReason(out)}, {"stop_sequence", StopSequence(out, a_->r)}}},
                               {"usage", Usage(out)}});
    return s + Sse("message_stop", {{"type", "message_stop"}});
  }

  std::string Fail(const ApiError& e) override { return Sse("error", ErrorJson(e)); }

 private:
  enum Kind { kNone, kThinking, kText, kTool };

  // Opens a block of `kind` unless one is open (closing another kind first).
  std::string Begin(Kind kind, const json& block) {
    if (open_ == kind) return "";
    std::string s = End();
    open_ = kind;
    ++index_;
    return s + Sse("content_block_start", {{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
  }

  // `opened` (Begin's events, already sequenced) followed by a delta of the open block.
  std::string Then(std::string opened, const json& delta) { return opened + Delta(delta); }

  std::string Delta(const json& delta) {
    return Sse("content_block_delta", {{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}});
  }

  // Closes the open block (a thinking block's signature comes last, as Anthropic sends it).
  std::string End() {
    if (index_ < 0 || closed_ == index_) return "";
    std::string s;
    if (open_ == kThinking) s = Delta({{"type", "signature_delta"}, {"signature", kSignature}});
    closed_ = index_;
    open_ = kNone;
    return s + Sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
  }

  std::shared_ptr<const AnthropicRequest> a_;
  AnswerHeader h_;
  Kind open_ = kNone;
  int index_ = -1, closed_ = -1;
};

// Server tools are not served here: a header on the answer, and a line in the log once.
void ReportIgnoredTools(const std::vector<std::string>& names, httplib::Response& res) {
  if (names.empty()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  res.set_header("X-Zerfoo-Ignored-Tools", list);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr, "zerfoo serve: /v1/messages: server tools are not served here and were left out: %s\n",
                 list.c_str());
  }
}

// Anthropic's "model": a name of this server picks that model, any other the default one.
const ModelPick kAnyName{nullptr, true, false};

void HandleMessages(FrontDoor& door, const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, AnthropicError, true, kAnyName);
  if (m == nullptr) return;
  auto a = ParseAdmitted<AnthropicRequest>(door, m, res, AnthropicError,
                                           [&](const RequestContext& c) { return ParseAnthropic(req.body, c); });
  if (a == nullptr) return;
  ReportIgnoredTools(a->ignored_tools, res);
  AnswerHeader h = door.Header(m, "msg_");
  // A name the server does not have is served by the default model (Claude Code asks for
  // claude-*): the answer names what the request asked for, as clients compare it with their
  // own setting.
  if (!a->model.empty()) h.model = a->model;
  std::shared_ptr<Request> r(a, &a->r);
  door.AnswerTurn(m, r, std::make_shared<MessageWriter>(a, h), AnthropicError, t0, res);
}

// The prompt the turn would evaluate, rendered and tokenized as the turn does.
void HandleCountTokens(FrontDoor& door, const httplib::Request& req, httplib::Response& res) {
  const ModelRef m = door.Admit(req, res, AnthropicError, true, kAnyName);
  if (m == nullptr) return;
  const RequestContext ctx = door.Context(m);
  try {
    const AnthropicRequest a = ParseAnthropic(req.body, ctx, true);
    const std::string prompt = TurnPrompt(ctx.model, a.r.turn_request, ctx.chat_template, a.r.mmproj);
    // The text's tokens and each image's positions (the prompt text holds only its markers).
    const size_t n = Tokenize(ctx.model, prompt, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL).size() +
                     size_t(a.r.n_images) * size_t(ImageTokens(a.r.mmproj));
    res.set_content(Dump(json{{"input_tokens", n}}), "application/json");
  } catch (const ApiError& e) {
    door.CountError(m);
    SendError(res, e, AnthropicError);
  }
}

}  // namespace

void AddAnthropicRoutes(FrontDoor& door) {
  door.Post("/v1/messages", AnthropicError,
            [&door](const httplib::Request& req, httplib::Response& res) { HandleMessages(door, req, res); });
  door.Post("/v1/messages/count_tokens", AnthropicError,
            [&door](const httplib::Request& req, httplib::Response& res) { HandleCountTokens(door, req, res); });
}

}  // namespace cli::serve

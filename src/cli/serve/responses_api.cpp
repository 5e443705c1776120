// OpenAI's Responses API on the shared generation path: POST /v1/responses (the Response object,
// or its typed SSE events), POST /v1/responses/input_tokens, and a bounded in-memory store of
// conversations for previous_response_id.
#include "responses_api.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>

#include "model_text.h"
#include "responses_request.h"

namespace cli::serve {

namespace {

// The latest responses' conversations (chat messages incl. the answer, without instructions),
// least recently used evicted first.
class ResponseStore {
 public:
  static constexpr size_t kCapacity = 256;

  void Put(const std::string& id, json messages) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it != index_.end()) lru_.erase(it->second);
    lru_.emplace_front(id, std::move(messages));
    index_[id] = lru_.begin();
    while (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }

  bool Get(const std::string& id, json* messages) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    lru_.splice(lru_.begin(), lru_, it->second);
    *messages = it->second->second;
    return true;
  }

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, json>> lru_;
  std::unordered_map<std::string, std::list<std::pair<std::string, json>>::iterator> index_;
};

// What the routes share: the store, and this process's id prefix (a restarted server never
// resolves an id a client kept from the previous one).
struct ResponsesState {
  ResponseStore store;
  std::string nonce;
};

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class ResponsesWriter : public TurnWriter {
 public:
  ResponsesWriter(const zf_model* model, std::shared_ptr<const ResponsesRequest> rr, AnswerHeader h,
                  std::shared_ptr<ResponsesState> state)
      : model_(model), rr_(std::move(rr)), h_(std::move(h)), state_(std::move(state)) {
    suffix_ = h_.id.substr(h_.id.find('_') + 1);
  }

  json Whole(const TurnOutcome& out) override {
    const json& m = out.message;
    const bool incomplete = out.finish == ZF_FINISH_LENGTH;
    const std::string reasoning = m.value("reasoning_content", json("")).is_string()
                                      ? m.value("reasoning_content", std::string()) : std::string();
    const std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    const json calls = m.contains("tool_calls") && m["tool_calls"].is_array() ? m["tool_calls"] : json::array();
    json items = json::array();
    if (!reasoning.empty()) items.push_back(Reasoning(NextId("rs_"), reasoning, "completed"));
    if (!content.empty() || (calls.empty() && reasoning.empty())) {
      items.push_back(Message(NextId("msg_"), content, incomplete ? "incomplete" : "completed"));
    }
    for (const json& c : calls) {
      const json fn = c.value("function", json::object());
      json item = Call(NextId("fc_"), c.value("id", std::string()), fn.value("name", std::string()),
                       incomplete ? "incomplete" : "completed");
      item["arguments"] = fn.value("arguments", std::string());
      items.push_back(std::move(item));
    }
    return Final(out, std::move(items));
  }

  std::string Open() override {
    opened_ = true;
    const json r = Skeleton("in_progress");
    std::string s = Event("response.created", {{"response", r}});
    return s + Event("response.in_progress", {{"response", r}});
  }

  std::string Event(const TurnDelta& d) override {
    std::string s;
    switch (d.kind) {
      case ZF_TURN_CONTENT:
        if (d.text.empty()) return "";
        if (kind_ != ZF_TURN_CONTENT) {
          s += EndItem("completed");
          s += StartMessage();
        }
        text_ += d.text;
        return s + Event("response.output_text.delta", {{"item_id", Cur()["id"]}, {"output_index", items_.size() - 1},
                                                        {"content_index", 0}, {"delta", d.text}, {"logprobs", json::array()}});
      case ZF_TURN_REASONING:
        if (d.text.empty()) return "";
        if (kind_ != ZF_TURN_REASONING) {
          s += EndItem("completed");
          s += StartReasoning();
        }
        text_ += d.text;
        return s + Event("response.reasoning_text.delta", {{"item_id", Cur()["id"]}, {"output_index", items_.size() - 1},
                                                           {"content_index", 0}, {"delta", d.text}});
      case ZF_TURN_TOOL_CALL:
        s += EndItem("completed");
        items_.push_back(Call(NextId("fc_"), d.id, d.name, "in_progress"));
        kind_ = ZF_TURN_TOOL_CALL;
        text_.clear();
        return s + Event("response.output_item.added", {{"output_index", items_.size() - 1}, {"item", Cur()}});
      case ZF_TURN_TOOL_ARGS:
        if (kind_ != ZF_TURN_TOOL_CALL || d.text.empty()) return "";
        text_ += d.text;
        return Event("response.function_call_arguments.delta",
                     {{"item_id", Cur()["id"]}, {"output_index", items_.size() - 1}, {"delta", d.text}});
      default:
        return "";  // logprobs are not served here; DONE comes to Close
    }
  }

  std::string Close(const TurnOutcome& out) override {
    const bool incomplete = out.finish == ZF_FINISH_LENGTH;
    std::string s = EndItem(incomplete ? "incomplete" : "completed");
    if (items_.empty()) {  // always an answer
      s += StartMessage();
      s += EndItem(incomplete ? "incomplete" : "completed");
    }
    const json r = Final(out, items_);
    return s + Event(incomplete ? "response.incomplete" : "response.completed", {{"response", r}});
  }

  std::string Fail(const ApiError& e) override {
    std::string s = opened_ ? "" : Open();
    s += EndItem("incomplete");
    json r = Skeleton("failed");
    r["output"] = items_;
    r["error"] = {{"code", e.status >= 500 ? "server_error" : "invalid_prompt"}, {"message", e.message}};
    return s + Event("response.failed", {{"response", r}});
  }

 private:
  std::string NextId(const char* prefix) { return prefix + suffix_ + "_" + std::to_string(n_items_++); }

  json& Cur() { return items_.back(); }

  json Message(const std::string& id, const std::string& text, const char* status) const {
    json c = json::array();
    if (!text.empty() || std::string(status) != "in_progress") c.push_back(TextPart(text));
    return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", c}};
  }
  static json TextPart(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
  }
  static json Reasoning(const std::string& id, const std::string& text, const char* status) {
    json c = json::array();
    if (std::string(status) != "in_progress") c.push_back({{"type", "reasoning_text"}, {"text", text}});
    return {{"id", id}, {"type", "reasoning"}, {"status", status}, {"summary", json::array()}, {"content", c}};
  }
  json Call(const std::string& id, const std::string& call_id, const std::string& name, const char* status) const {
    json item = {{"id", id}, {"type", "function_call"}, {"status", status}, {"call_id", call_id}, {"name", name},
                 {"arguments", ""}};
    auto ns = rr_->namespace_of.find(name);
    if (ns != rr_->namespace_of.end() && !ns->second.empty()) item["namespace"] = ns->second;
    return item;
  }

  std::string StartMessage() {
    items_.push_back(Message(NextId("msg_"), "", "in_progress"));
    kind_ = ZF_TURN_CONTENT;
    text_.clear();
    const size_t i = items_.size() - 1;
    std::string s = Event("response.output_item.added", {{"output_index", i}, {"item", Cur()}});
    return s + Event("response.content_part.added",
                     {{"item_id", Cur()["id"]}, {"output_index", i}, {"content_index", 0}, {"part", TextPart("")}});
  }

  std::string StartReasoning() {
    items_.push_back(Reasoning(NextId("rs_"), "", "in_progress"));
    kind_ = ZF_TURN_REASONING;
    text_.clear();
    const size_t i = items_.size() - 1;
    std::string s = Event("response.output_item.added", {{"output_index", i}, {"item", Cur()}});
    return s + Event("response.content_part.added", {{"item_id", Cur()["id"]}, {"output_index", i}, {"content_index", 0},
                                                     {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
  }

  // The open item's closing events; its final form stays in items_.
  std::string EndItem(const char* status) {
    if (kind_ == 0) return "";
    const size_t i = items_.size() - 1;
    json& it = Cur();
    const json id = it["id"];
    std::string s;
    if (kind_ == ZF_TURN_CONTENT) {
      const json part = TextPart(text_);
      s += Event("response.output_text.done", {{"item_id", id}, {"output_index", i}, {"content_index", 0}, {"text", text_},
                                               {"logprobs", json::array()}});
      s += Event("response.content_part.done", {{"item_id", id}, {"output_index", i}, {"content_index", 0}, {"part", part}});
      it["content"] = json::array({part});
      it["status"] = status;
    } else if (kind_ == ZF_TURN_REASONING) {
      const json part = {{"type", "reasoning_text"}, {"text", text_}};
      s += Event("response.reasoning_text.done", {{"item_id", id}, {"output_index", i}, {"content_index", 0}, {"text", text_}});
      s += Event("response.content_part.done", {{"item_id", id}, {"output_index", i}, {"content_index", 0}, {"part", part}});
      it["content"] = json::array({part});
      it["status"] = "completed";
    } else {
      it["arguments"] = text_;
      it["status"] = status;
      s += Event("response.function_call_arguments.done",
                 {{"item_id", id}, {"output_index", i}, {"name", it["name"]}, {"arguments", text_}});
    }
    s += Event("response.output_item.done", {{"output_index", i}, {"item", it}});
    kind_ = 0;
    text_.clear();
    return s;
  }

  std::string Event(const char* type, json j) {
    j["type"] = type;
    j["sequence_number"] = seq_++;
    return std::string("event: ") + type + "\ndata: " + Dump(j) + "\n\n";
  }

  // The Response object: the request's echo and the state.
  json Skeleton(const char* status) const {
    json r = rr_->echo;
    r["id"] = h_.id;
    r["object"] = "response";
    r["created_at"] = h_.created;
    r["status"] = status;
    r["background"] = false;
    r["error"] = nullptr;
    r["incomplete_details"] = nullptr;
    r["model"] = h_.model;
    r["output"] = json::array();
    r["usage"] = nullptr;
    return r;
  }

  // The finished Response; stored for previous_response_id unless store is false.
  json Final(const TurnOutcome& out, json items) {
    json r = Skeleton(out.finish == ZF_FINISH_LENGTH ? "incomplete" : "completed");
    if (out.finish == ZF_FINISH_LENGTH) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["completed_at"] = NowSeconds();
    int64_t reasoning_tokens = 0;
    for (const json& it : items) {
      if (it.value("type", std::string()) != "reasoning") continue;
      for (const json& c : it["content"]) {
        try {
          reasoning_tokens += int64_t(Tokenize(model_, c.value("text", std::string()), 0).size());
        } catch (const ApiError&) {
        }
      }
    }
    r["usage"] = {{"input_tokens", out.n_prompt},
                  {"input_tokens_details", {{"cached_tokens", out.n_cached},
                                            {"cache_write_tokens", std::max(0, out.n_prompt - out.n_cached)}}},
                  {"output_tokens", out.n_generated},
                  {"output_tokens_details", {{"reasoning_tokens", std::min<int64_t>(reasoning_tokens, out.n_generated)}}},
                  {"total_tokens", out.n_prompt + out.n_generated}};
    r["output"] = std::move(items);
    if (rr_->store) {
      json conv = rr_->history;
      conv.push_back(out.message);
      state_->store.Put(h_.id, std::move(conv));
    }
    return r;
  }

  const zf_model* model_;
  std::shared_ptr<const ResponsesRequest> rr_;
  AnswerHeader h_;
  std::shared_ptr<ResponsesState> state_;
  std::string suffix_;  // the response id's, shared by its items' ids
  int n_items_ = 0;
  int64_t seq_ = 0;
  bool opened_ = false;
  json items_ = json::array();
  int32_t kind_ = 0;  // the open item: ZF_TURN_CONTENT / _REASONING / _TOOL_CALL, 0 = none
  std::string text_;  // the open item's text (or arguments) so far
};

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    if (s.find(x) != std::string::npos) continue;
    s += (s.empty() ? "" : ", ") + x;
  }
  return s;
}

ResponsesRequest Parse(const std::shared_ptr<ResponsesState>& state, const httplib::Request& req,
                       const RequestContext& ctx) {
  return ParseResponses(req.body, ctx, [&state](const std::string& id, json* messages) {
    return state->store.Get(id, messages);
  });
}

void HandleResponses(FrontDoor& door, const std::shared_ptr<ResponsesState>& state, const httplib::Request& req,
                     httplib::Response& res) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, ErrorBody, true);
  if (m == nullptr) return;
  const RequestContext ctx = door.Context(m);
  auto rr = ParseAdmitted<ResponsesRequest>(door, m, res, ErrorBody,
                                            [&](const RequestContext& c) { return Parse(state, req, c); });
  if (rr == nullptr) return;
  // Tools and items of types this server does not run: skipped, and said so.
  if (!rr->ignored_tools.empty()) res.set_header("X-Zerfoo-Ignored-Tools", Joined(rr->ignored_tools));
  if (!rr->ignored_items.empty()) res.set_header("X-Zerfoo-Ignored-Items", Joined(rr->ignored_items));
  auto r = std::make_shared<Request>(rr->req);
  const AnswerHeader h = door.Header(m, "resp_" + state->nonce);
  door.AnswerTurn(m, r, std::make_shared<ResponsesWriter>(ctx.model, rr, h, state), ErrorBody, t0, res);
}

// The prompt's tokens, as the turn would render and tokenize it; nothing is evaluated.
void HandleInputTokens(FrontDoor& door, const std::shared_ptr<ResponsesState>& state, const httplib::Request& req,
                       httplib::Response& res) {
  const ModelRef m = door.Admit(req, res, ErrorBody, true);
  if (m == nullptr) return;
  const RequestContext ctx = door.Context(m);
  try {
    const ResponsesRequest rr = Parse(state, req, ctx);
    const std::string prompt = TurnPrompt(ctx.model, rr.req.turn_request, rr.req.chat_template, rr.req.mmproj);
    // The text's tokens and each image's positions (the prompt text holds only its markers).
    const size_t n = Tokenize(ctx.model, prompt, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL).size() +
                     size_t(rr.req.n_images) * size_t(ImageTokens(rr.req.mmproj));
    res.set_content(Dump({{"object", "response.input_tokens"}, {"input_tokens", n}}), "application/json");
  } catch (const ApiError& e) {
    door.CountError(m);
    SendError(res, e);
  }
}

}  // namespace

void AddResponsesRoutes(FrontDoor& door) {
  auto state = std::make_shared<ResponsesState>();
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", unsigned(rd()));
  state->nonce = std::string(buf) + "-";
  for (const char* path : {"/v1/responses", "/responses"}) {
    door.Post(path, ErrorBody, [&door, state](const httplib::Request& req, httplib::Response& res) {
      HandleResponses(door, state, req, res);
    });
  }
  for (const char* path : {"/v1/responses/input_tokens", "/responses/input_tokens"}) {
    door.Post(path, ErrorBody, [&door, state](const httplib::Request& req, httplib::Response& res) {
      HandleInputTokens(door, state, req, res);
    });
  }
}

}  // namespace cli::serve

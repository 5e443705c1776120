// OpenAI Chat Completions and Completions on the shared generation path.
#include "openai_api.h"

#include <memory>

#include "streaming.h"

namespace cli::serve {

namespace {

std::string Sse(const json& j) { return SseEvent(Dump(j)); }

// What both OpenAI writers hold: the model, the request, its chunk builder and the answer's
// header; a stream that fails ends with the error's event and [DONE].
template <typename Writer>
class OpenAiWriter : public Writer {
 public:
  OpenAiWriter(const zf_model* model, std::shared_ptr<const Request> r, const AnswerHeader& h)
      : model_(model), r_(std::move(r)), chunks_(model, *r_, h), h_(h) {}
  std::string Fail(const ApiError& e) override { return SseEvent(ErrorBody(e)) + SseEvent("[DONE]"); }

 protected:
  const zf_model* model_;
  std::shared_ptr<const Request> r_;
  ChunkBuilder chunks_;
  AnswerHeader h_;
};

// A chat completion: chat.completion, or chat.completion.chunk events ending with [DONE].
class ChatWriter : public OpenAiWriter<TurnWriter> {
 public:
  using OpenAiWriter::OpenAiWriter;
  json Whole(const TurnOutcome& out) override { return ChatCompletionJson(model_, *r_, h_, out); }
  std::string Open() override { return Sse(chunks_.Start()); }
  std::string Event(const TurnDelta& d) override {
    if (d.kind != ZF_TURN_DONE) return Sse(chunks_.Event(d));
    // The held-back text's log-probabilities come with the end of the turn.
    if (d.logprobs.empty()) return "";
    return Sse(chunks_.Event(TurnDelta{ZF_TURN_LOGPROBS, "", -1, "", "", d.logprobs}));
  }
  std::string Close(const TurnOutcome& out) override {
    std::string s = Sse(chunks_.Finish(out.finish));
    if (r_->include_usage) s += Sse(chunks_.Usage(TurnUsageJson(out)));
    return s + SseEvent("[DONE]");
  }
};

// A text completion: text_completion, or its chunks ending with [DONE].
class CompletionWriter : public OpenAiWriter<TextWriter> {
 public:
  using OpenAiWriter::OpenAiWriter;
  json Whole(const Outcome& out) override { return CompletionJson(model_, *r_, h_, out); }
  std::string Open() override { return ""; }
  std::string Piece(const std::string& text, const std::vector<TokenLogprobs>& lps) override {
    std::string s;
    for (const json& c : chunks_.Piece(text, lps)) s += Sse(c);
    return s;
  }
  std::string Close(const Outcome& out) override {
    std::string s;
    for (const json& c : chunks_.End(out.stop_reason)) s += Sse(c);
    if (r_->include_usage) s += Sse(chunks_.Usage(UsageJson(out)));
    return s + SseEvent("[DONE]");
  }
};

void HandleCompletion(FrontDoor& door, const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, ErrorBody, true);
  if (m == nullptr) return;
  const RequestContext ctx = door.Context(m);
  auto r = ParseAdmitted<Request>(door, m, res, ErrorBody,
                                  [&](const RequestContext& c) { return ParseCompletion(req.body, chat, c); });
  if (r == nullptr) return;
  const AnswerHeader h = door.Header(m, chat ? "chatcmpl-" : "cmpl-");
  if (chat) {
    door.AnswerTurn(m, r, std::make_shared<ChatWriter>(ctx.model, r, h), ErrorBody, t0, res);
  } else {
    door.AnswerText(m, r, std::make_shared<CompletionWriter>(ctx.model, r, h), ErrorBody, t0, res);
  }
}

}  // namespace

void AddOpenAiRoutes(FrontDoor& door) {
  for (const char* path : {"/v1/chat/completions", "/chat/completions"}) {
    door.Post(path, ErrorBody, [&door](const httplib::Request& req, httplib::Response& res) {
      HandleCompletion(door, req, res, true);
    });
  }
  for (const char* path : {"/v1/completions", "/completions"}) {
    door.Post(path, ErrorBody, [&door](const httplib::Request& req, httplib::Response& res) {
      HandleCompletion(door, req, res, false);
    });
  }
}

}  // namespace cli::serve

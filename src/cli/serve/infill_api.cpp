// llama-server's POST /infill on the shared generation path: its body becomes the FIM token
// sequence (infill_request.h) and the answer is llama-server's completion shape ({"content",
// "stop", "stop_type", "tokens_predicted", ...}), streamed as SSE `data: {...}` events.
#include "infill_api.h"

#include <memory>

#include "infill_request.h"
#include "streaming.h"

namespace cli::serve {

namespace {

// llama-server's stop_type: "eos" (an end token), "limit" (n_predict or the context), "word" (a
// stop string), "none" (cut short).
const char* StopType(int32_t stop) {
  switch (stop) {
    case ZF_STOP_EOS: return "eos";
    case ZF_STOP_MAX_TOKENS:
    case ZF_STOP_CONTEXT_FULL: return "limit";
    case ZF_STOP_STRING: return "word";
    default: return "none";
  }
}

class InfillWriter : public TextWriter {
 public:
  InfillWriter(std::shared_ptr<const Request> r, AnswerHeader h) : r_(std::move(r)), h_(std::move(h)) {}

  json Whole(const Outcome& out) override { return Final(out, out.text); }
  std::string Open() override { return ""; }
  std::string Piece(const std::string& text, const std::vector<TokenLogprobs>&) override {
    ++n_pieces_;
    return SseEvent(Dump(json{{"index", 0},
                              {"content", text},
                              {"tokens", json::array()},
                              {"stop", false},
                              {"id_slot", 0},
                              {"tokens_predicted", n_pieces_},
                              {"tokens_evaluated", r_->prompt.size()}}));
  }
  // As llama-server: the last event carries the final fields with empty content.
  std::string Close(const Outcome& out) override { return SseEvent(Dump(Final(out, ""))); }
  std::string Fail(const ApiError& e) override { return SseEvent(ErrorBody(e)); }

 private:
  json Final(const Outcome& out, const std::string& content) const {
    // The stop string that ended the answer is not reported by the generation; with one it is
    // that one.
    const std::string word = out.stop_reason == ZF_STOP_STRING && r_->stop.size() == 1 ? r_->stop[0] : "";
    return json{{"index", 0},
                {"content", content},
                {"tokens", json::array()},
                {"id_slot", 0},
                {"stop", true},
                {"model", h_.model},
                {"tokens_predicted", out.n_generated},
                {"tokens_evaluated", out.n_prompt},
                {"has_new_line", out.text.find('\n') != std::string::npos},
                {"truncated", false},
                {"stop_type", StopType(out.stop_reason)},
                {"stopping_word", word},
                {"tokens_cached", out.n_prompt + out.n_generated},
                {"timings", {{"prompt_n", out.n_prompt}, {"predicted_n", out.n_generated}}}};
  }

  std::shared_ptr<const Request> r_;
  AnswerHeader h_;
  int64_t n_pieces_ = 0;
};

void HandleInfill(FrontDoor& door, const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, ErrorBody, true);
  if (m == nullptr) return;
  auto r = ParseAdmitted<Request>(door, m, res, ErrorBody,
                                  [&](const RequestContext& c) { return ParseInfill(req.body, c); });
  if (r == nullptr) return;
  door.AnswerText(m, r, std::make_shared<InfillWriter>(r, door.Header(m, "cmpl-")), ErrorBody, t0, res);
}

}  // namespace

void AddInfillRoutes(FrontDoor& door) {
  door.Post("/infill", ErrorBody, [&door](const httplib::Request& req, httplib::Response& res) {
    HandleInfill(door, req, res);
  });
}

}  // namespace cli::serve

// What an API module (OpenAI, Anthropic Messages, OpenAI Responses, Ollama, fill-in-the-middle)
// gets from the server: its routes, admission, and the ONE generation path. A module only
// translates: its request body into a Request (the chat turn's request JSON, sampling, stops,
// constraint), and the turn's events or a completion's pieces into its own wire format. The
// slot, the prefix cache, the sampler, the constraint and the chat parser are the same for every
// front door, so the APIs cannot drift apart.
#ifndef ZERFOO_CLI_SERVE_FRONT_DOOR_H
#define ZERFOO_CLI_SERVE_FRONT_DOOR_H

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api_error.h"
#include "embeddings.h"
#include "generate.h"
#include "request.h"
#include "turn.h"
#include "zerfoo.h"

namespace cli::serve {

// An API's error body: OpenAI's {"error": {...}} (ErrorBody), Anthropic's
// {"type": "error", "error": {...}}, Ollama's {"error": "..."}.
using ErrorFormat = std::string (*)(const ApiError&);

// How one API writes a chat turn's answer: whole, or as a stream of its own events. Open() is
// written before the first event; "" from any method writes nothing.
class TurnWriter {
 public:
  virtual ~TurnWriter() = default;
  virtual json Whole(const TurnOutcome& out) = 0;
  virtual const char* StreamType() const { return "text/event-stream"; }
  virtual std::string Open() = 0;
  virtual std::string Event(const TurnDelta& d) = 0;
  virtual std::string Close(const TurnOutcome& out) = 0;
  // The turn failed after the stream began: the stream's error event and its end.
  virtual std::string Fail(const ApiError& e) = 0;
};

// How one API writes a text completion's answer (tokens in, text out).
class TextWriter {
 public:
  virtual ~TextWriter() = default;
  virtual json Whole(const Outcome& out) = 0;
  virtual const char* StreamType() const { return "text/event-stream"; }
  virtual std::string Open() = 0;
  virtual std::string Piece(const std::string& text, const std::vector<TokenLogprobs>& lps) = 0;
  virtual std::string Close(const Outcome& out) = 0;
  virtual std::string Fail(const ApiError& e) = 0;
};

// A served model, for listings (/v1/models, Ollama's /api/tags, /api/show, /api/ps).
struct ServedInfo {
  std::string alias;  // the name requests use
  std::string path;   // the GGUF file
  bool loaded = false;
  bool embed_only = false;  // an encoder: embeddings and rerank only
  int n_ctx = 0;            // the context of a slot
  int slots = 0;
  zf_model_summary summary{};  // valid when loaded
  // Loaded: seconds it stays loaded once idle (< 0: for good), counted from idle_since when
  // no request is running (running: from now).
  double keep_alive = -1;
  bool running = false;
  std::chrono::system_clock::time_point idle_since;
};

// The model a request runs on (loaded_model.h): held until the last copy goes, so it is never
// unloaded under the request (a streaming answer keeps its copy until the stream ends).
struct LoadedModel;
using ModelRef = std::shared_ptr<LoadedModel>;

// How a front door's request names its model ("model" in the body; Ollama's /api/show also
// "name"): equal to an alias unless `matches` says otherwise (Ollama's "alias:latest"). Unknown
// names are a 404 model_not_found, or the default model with `unknown_is_default` (Anthropic:
// Claude Code asks for claude-*). No name: the default model (the first -m).
struct ModelPick {
  bool (*matches)(const std::string& asked, const std::string& alias) = nullptr;
  bool unknown_is_default = false;
  bool ollama = false;  // also "name", and the body's keep_alive (Ollama's semantics)
};

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

class FrontDoor {
 public:
  virtual ~FrontDoor() = default;
  // A POST route (the body read under --max-body-mb; too large is a 413 in `fmt`), a GET route.
  virtual void Post(const std::string& path, ErrorFormat fmt, Handler h) = 0;
  virtual void Get(const std::string& path, Handler h) = 0;
  // The API key (Authorization: Bearer, or x-api-key) and the model the body names (`pick`),
  // loaded (a request for an unloaded model loads it; a failed load is a 500 with the loader's
  // message); otherwise answers in `fmt` and returns nullptr. `generate`: also a model that can
  // generate (an encoder answers 501).
  virtual ModelRef Admit(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt, bool generate,
                         const ModelPick& pick = {}) = 0;
  // The API key only (listings); answers in `fmt` and returns false without it.
  virtual bool Authorized(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt) = 0;
  // What a request is parsed against (the model, the alias, the context, the defaults).
  virtual RequestContext Context(const ModelRef& m) const = 0;
  virtual ServedInfo Info(const ModelRef& m) const = 0;
  // Every model the server can serve, loaded or not, the default first.
  virtual std::vector<ServedInfo> Models() const = 0;
  // A fresh answer id with the API's prefix ("chatcmpl-", "msg_", "resp_", ...), and the time.
  virtual AnswerHeader Header(const ModelRef& m, const std::string& prefix) = 0;
  // The one generation path. A chat turn: a slot chosen by r->turn_messages, the turn begun
  // before anything is answered (a refusal is a plain error in `fmt`), then w's whole answer or
  // stream (r->stream). t0: the request's arrival.
  virtual void AnswerTurn(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TurnWriter> w, ErrorFormat fmt,
                          Clock::time_point t0, httplib::Response& res) = 0;
  // A text completion of r->prompt (tokens), the same way.
  virtual void AnswerText(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TextWriter> w, ErrorFormat fmt,
                          Clock::time_point t0, httplib::Response& res) = 0;
  // Embeddings in OpenAI's answer shape, on a slot as /v1/embeddings runs them; throws ApiError.
  virtual json Embed(const ModelRef& m, const EmbedRequest& r) = 0;
  // A request that failed before it reached a slot: counted in its model's metrics.
  virtual void CountError(const ModelRef& m) = 0;
};

// An admitted request's body parsed by parse(door.Context(m)) into a new T; a parse error is
// counted against the model and answered in `fmt` (nullptr then). Every API's handlers start so.
template <typename T, typename Parse>
std::shared_ptr<T> ParseAdmitted(FrontDoor& door, const ModelRef& m, httplib::Response& res, ErrorFormat fmt,
                                 Parse&& parse) {
  auto out = std::make_shared<T>();
  try {
    *out = parse(door.Context(m));
  } catch (const ApiError& e) {
    door.CountError(m);
    SendError(res, e, fmt);
    return nullptr;
  }
  return out;
}

// Each API module adds its routes (openai_api.h, anthropic_api.h, responses_api.h, ollama_api.h,
// infill_api.h).

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_FRONT_DOOR_H

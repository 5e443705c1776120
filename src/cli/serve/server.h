// The HTTP server of `zerfoo serve`: loads the model into --parallel slots, serves the OpenAI
// routes, /health, /metrics and the llama-server extras, and drains on SIGTERM/SIGINT.
#ifndef ZERFOO_CLI_SERVE_SERVER_H
#define ZERFOO_CLI_SERVE_SERVER_H

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "../common.h"
#include "metrics.h"
#include "options.h"
#include "request.h"
#include "slots.h"
#include "front_door.h"

namespace cli::serve {

// SIGPIPE ignored (a client that goes away is seen by the write); SIGTERM/SIGINT start the
// drain, or stop a load in progress.
void InstallSignalHandlers();

class Server : public FrontDoor {
 public:
  explicit Server(const ServeOptions& o) : o_(o), slots_(o.queue) {}

  // Listens at once (/health says "loading"), loads the model, serves until a signal, drains;
  // returns the exit code.
  int Run();

  // FrontDoor: what the API modules (openai_api.h, anthropic_api.h, ...) build on.
  void Post(const std::string& path, ErrorFormat fmt, Handler handler) override;
  void Get(const std::string& path, Handler handler) override;
  bool Admit(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt, bool generate) override;
  RequestContext Context() const override;
  ServedInfo Info() const override;
  AnswerHeader Header(const std::string& prefix) override;
  void AnswerTurn(std::shared_ptr<Request> r, std::shared_ptr<TurnWriter> w, ErrorFormat fmt, Clock::time_point t0,
                  httplib::Response& res) override;
  void AnswerText(std::shared_ptr<Request> r, std::shared_ptr<TextWriter> w, ErrorFormat fmt, Clock::time_point t0,
                  httplib::Response& res) override;
  json Embed(const EmbedRequest& r) override;
  void CountError() override { ++metrics_.n_requests_err; }

 private:
  zf_status Load();
  void Routes();
  bool Authorized(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt);
  bool Ready(httplib::Response& res, ErrorFormat fmt);
  // A slot for the request (by its conversation or its prompt), with --n-predict applied to its
  // output limit; nullptr after answering 503.
  Slot* TakeSlot(Request* r, ErrorFormat fmt, httplib::Response& res);

  void Finished(zf_status st, std::chrono::steady_clock::time_point t0);
  static void StreamHeaders(httplib::Response& res);
  static bool Write(httplib::DataSink& sink, const std::string& bytes);
  // On the HTTP worker thread, without a slot (the library's embedding calls are thread-safe).
  void HandleEmbeddings(const httplib::Request& req, httplib::Response& res);
  void HandleRerank(const httplib::Request& req, httplib::Response& res);
  std::string Metrics();
  // The longest embedding input / rerank pair: the server's context, at most the model's
  // training context (the library's bound).
  int32_t EmbedLimit() const {
    return info_.n_ctx_train > 0 ? std::min<int32_t>(n_ctx_, info_.n_ctx_train) : n_ctx_;
  }
  // The paths routed so far with their methods, for a 405 with Allow on a known path.
  void Routed(const std::string& path, const char* method);

  ServeOptions o_;
  httplib::Server svr_;
  ModelPtr model_;
  zf_model_summary info_{};
  int n_ctx_ = 0;
  std::atomic<bool> loaded_{false};
  bool embed_only_ = false;  // the model cannot generate (no sessions): completions answer 501
  SlotPool slots_;
  ServeMetrics metrics_;
  std::atomic<uint64_t> id_counter_{0};
  std::map<std::string, std::string> methods_;  // path -> "GET, HEAD" / "POST"
};

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_SERVER_H

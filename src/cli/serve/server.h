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
#include <string>

#include "../common.h"
#include "metrics.h"
#include "options.h"
#include "request.h"
#include "slots.h"
#include "streaming.h"

namespace cli::serve {

// SIGPIPE ignored (a client that goes away is seen by the write); SIGTERM/SIGINT start the
// drain, or stop a load in progress.
void InstallSignalHandlers();

class Server {
 public:
  explicit Server(const ServeOptions& o) : o_(o), slots_(o.queue) {}

  // Listens at once (/health says "loading"), loads the model, serves until a signal, drains;
  // returns the exit code.
  int Run();

 private:
  zf_status Load();
  void Routes();
  // A POST route whose handler sees the request with its body (read under --max-body-mb).
  void Post(const char* path, std::function<void(const httplib::Request&, httplib::Response&)> handler);
  bool Authorized(const httplib::Request& req, httplib::Response& res);
  bool Ready(httplib::Response& res);
  RequestContext Context() const;

  void HandleCompletion(const httplib::Request& req, httplib::Response& res, bool chat);
  void Finished(zf_status st, std::chrono::steady_clock::time_point t0);
  static void StreamHeaders(httplib::Response& res);
  static bool SendEvent(httplib::DataSink& sink, const json& j);
  // An error as the stream's last event, and the end of a stream ([DONE]).
  static void SendStreamError(httplib::DataSink& sink, const ApiError& e);
  static void EndStream(httplib::DataSink& sink);
  // A chat completion on its slot: one library chat turn, answered whole or streamed.
  void AnswerChat(std::shared_ptr<Request> r, Slot* slot, std::shared_ptr<SlotLease> lease, AnswerHeader header,
                  std::chrono::steady_clock::time_point t0, httplib::Response& res);
  // On the HTTP worker thread, without a slot (the library's embedding calls are thread-safe).
  void HandleEmbeddings(const httplib::Request& req, httplib::Response& res);
  void HandleRerank(const httplib::Request& req, httplib::Response& res);
  std::string Metrics();
  // The longest embedding input / rerank pair: the server's context, at most the model's
  // training context (the library's bound).
  int32_t EmbedLimit() const {
    return info_.n_ctx_train > 0 ? std::min<int32_t>(n_ctx_, info_.n_ctx_train) : n_ctx_;
  }

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
};

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_SERVER_H

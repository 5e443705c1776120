// The HTTP server of `zerfoo serve`: its models (model_registry.h: one, or several picked by the
// request's "model"), the front doors' routes, /health, /metrics, the llama-server extras and
// router routes, and the drain on SIGTERM/SIGINT.
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
#include "model_registry.h"
#include "slots.h"
#include "speech_models.h"
#include "front_door.h"

namespace cli::serve {

// SIGPIPE ignored (a client that goes away is seen by the write); SIGTERM/SIGINT start the
// drain, or stop a load in progress.
void InstallSignalHandlers();

class Server : public FrontDoor {
 public:
  explicit Server(const ServeOptions& o) : o_(o) {}

  // Listens at once (/health says "loading"), loads the default model (the first -m), serves
  // until a signal, drains; returns the exit code. The other models load on demand.
  int Run();

  // FrontDoor: what the API modules (openai_api.h, anthropic_api.h, ...) build on.
  void Post(const std::string& path, ErrorFormat fmt, Handler handler) override;
  void Get(const std::string& path, Handler handler) override;
  ModelRef Admit(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt, bool generate,
                 const ModelPick& pick = {}) override;
  bool Authorized(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt) override;
  RequestContext Context(const ModelRef& m) const override;
  ServedInfo Info(const ModelRef& m) const override;
  std::vector<ServedInfo> Models() const override;
  AnswerHeader Header(const ModelRef& m, const std::string& prefix) override;
  void AnswerTurn(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TurnWriter> w, ErrorFormat fmt,
                  Clock::time_point t0, httplib::Response& res) override;
  void AnswerText(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TextWriter> w, ErrorFormat fmt,
                  Clock::time_point t0, httplib::Response& res) override;
  json Embed(const ModelRef& m, const EmbedRequest& r) override;
  void CountError(const ModelRef& m) override;

 private:
  void Routes();
  void ModelRoutes();  // /v1/models, /models/load, /models/unload
  // A slot for the request (by its conversation or its prompt), with --n-predict applied to its
  // output limit; nullptr after answering 503.
  zf_status ApplyLoras(LoadedModel& m, const Request& r, Slot* slot);
  Slot* TakeSlot(LoadedModel& m, Request* r, ErrorFormat fmt, httplib::Response& res);

  static void Finished(LoadedModel& m, zf_status st, std::chrono::steady_clock::time_point t0);
  static void StreamHeaders(httplib::Response& res);
  static bool Write(httplib::DataSink& sink, const std::string& bytes);
  // On the HTTP worker thread, on a slot (the library's embedding calls are thread-safe).
  void HandleEmbeddings(const httplib::Request& req, httplib::Response& res);
  void HandleRerank(const httplib::Request& req, httplib::Response& res);
  std::string Metrics();
  // The paths routed so far with their methods, for a 405 with Allow on a known path.
  void Routed(const std::string& path, const char* method);

  ServeOptions o_;
  httplib::Server svr_;
  std::unique_ptr<ModelRegistry> models_;
  std::unique_ptr<SpeechModels> speech_;  // /v1/audio/*: --whisper-model, --models-dir's .bin files
  std::atomic<bool> started_{false};   // the default model's startup load is over
  std::atomic<bool> draining_{false};
  ServeMetrics unrouted_;  // several models: requests that named no model the server has
  std::atomic<uint64_t> id_counter_{0};
  std::map<std::string, std::string> methods_;  // path -> "GET, HEAD" / "POST"
};

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_SERVER_H

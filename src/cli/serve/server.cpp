// The Server: model load into slots, routes, the completion handler (plain and SSE), /metrics
// gauges, and the listen / drain cycle.
#include "server.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "api_error.h"
#include "embeddings.h"
#include "generate.h"
#include "model_text.h"
#include "anthropic_api.h"
#include "infill_api.h"
#include "ollama_api.h"
#include "openai_api.h"
#include "responses_api.h"

namespace cli::serve {

namespace {

volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }

// A SIGTERM during the load aborts it (the load then fails with ZF_ERR_CANCELLED).
int32_t LoadProgress(void*, int32_t) { return g_stop_signal != 0 ? 1 : 0; }

// httplib's stop() is a no-op until listen has started running: wait for that first (or for the
// listener thread to have ended on its own).
void StopListener(httplib::Server& svr, const std::atomic<bool>& listener_done) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (!svr.is_running() && !listener_done && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  svr.stop();
}

// Bytes of memory available for new allocations (MemAvailable), 0 when unknown.
uint64_t AvailableMemory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib) {
    std::getline(f, unit);
    if (key == "MemAvailable:") return kib << 10;
  }
  return 0;
}

// --parallel's default, before the load: kAutoSlotsMax at most, one per CPU core.
int SlotsForCores() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::max(1, std::min(kAutoSlotsMax, cores == 0 ? 1 : int(cores)));
}

// ... and after it: no more slots than hold a full context each in half the available memory
// (a session commits its KV rows as it fills them; 16-bit K and V per layer and KV head).
int SlotsForMemory(const zf_model_summary& info, int n_ctx, int slots) {
  const uint64_t head_dim = info.n_head > 0 ? uint64_t(info.n_embd / info.n_head) : 0;
  const uint64_t per_slot = uint64_t(n_ctx) * 2 * uint64_t(std::max(info.n_layer, 0)) *
                            uint64_t(std::max(info.n_head_kv, 0)) * head_dim * 2;
  const uint64_t avail = AvailableMemory();
  if (per_slot == 0 || avail == 0) return slots;
  return int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(slots), avail / 2 / per_slot)));
}

}  // namespace

void InstallSignalHandlers() {
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// A request is answered: counted as ok or failed, its end-to-end time observed.
void Server::Finished(zf_status st, Clock::time_point t0) {
  if (st == ZF_OK) ++metrics_.n_requests_ok;
  else ++metrics_.n_requests_err;
  metrics_.e2e.Observe(std::chrono::duration<double>(Clock::now() - t0).count());
}

// An SSE answer: not cached, not buffered by proxies.
void Server::StreamHeaders(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
}

bool Server::Write(httplib::DataSink& sink, const std::string& bytes) {
  return bytes.empty() || sink.write(bytes.data(), bytes.size());
}

zf_status Server::Load() {
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.device = o_.device;
  mp.n_threads = o_.threads;
  mp.prefix_cache_mib = o_.prefix_cache_mib;
  mp.progress = &LoadProgress;
  // Continuous batching: every slot's decode steps coalesced by the library (at most 64 a step).
  const bool auto_slots = o_.parallel == 0;
  if (auto_slots) o_.parallel = SlotsForCores();
  if (o_.batch && o_.parallel > 1) mp.max_batch = std::min(o_.parallel, 64);
  zf_model* m = nullptr;
  zf_status st = zf_model_load(o_.model.c_str(), &mp, &m);
  if (st != ZF_OK) return st;
  model_.reset(m);
  info_.struct_size = sizeof info_;
  st = zf_model_info(m, &info_);
  if (st != ZF_OK) return st;
  // The ABI has no getter for a session's context; this mirrors zf_session_params' rule.
  n_ctx_ = o_.ctx > 0 ? o_.ctx : std::min(info_.n_ctx_train > 0 ? info_.n_ctx_train : 4096, 4096);
  if (auto_slots) o_.parallel = SlotsForMemory(info_, n_ctx_, o_.parallel);
  // The draft model (-md): one load, a draft session per slot; each slot's session holds a
  // reference, so the handle is dropped once they have theirs.
  ModelPtr draft;
  // Slots that share decode steps verify drafts inside the steps (runtime/batcher.h).
  if (!o_.model_draft.empty()) {
    zf_model_params dp;
    zf_model_params_init(&dp, sizeof dp);
    dp.device = o_.device;
    dp.n_threads = o_.threads;
    zf_model* d = nullptr;
    st = zf_model_load(o_.model_draft.c_str(), &dp, &d);
    if (st != ZF_OK) return st;
    draft.reset(d);
  }
  for (int i = 0; i < o_.parallel; ++i) {
    zf_session_params sp;
    zf_session_params_init(&sp, sizeof sp);
    sp.n_threads = o_.threads;
    sp.n_ctx = n_ctx_;
    if (o_.fast_prefill) sp.flags |= ZF_SESSION_FAST_PREFILL;
    zf_session* s = nullptr;
    st = zf_session_create(m, &sp, &s);
    if (st == ZF_ERR_UNSUPPORTED && i == 0) {  // an encoder (BERT): embeddings and rerank only
      embed_only_ = true;
      // Slots without sessions: embedding requests still take one (--parallel, --queue, drain).
      for (int j = 0; j < o_.parallel; ++j) {
        auto slot = std::make_unique<Slot>();
        slot->id = j;
        slots_.Add(std::move(slot));
      }
      break;
    }
    if (st != ZF_OK) return st;
    if (draft != nullptr && (st = zf_session_set_draft_model(s, draft.get())) != ZF_OK) {
      zf_session_free(s);
      return st;
    }
    auto slot = std::make_unique<Slot>();
    slot->id = i;
    slot->session.reset(s);
    slots_.Add(std::move(slot));
  }
  return ZF_OK;
}

// The API key as OpenAI clients send it (Authorization: Bearer) or Anthropic's (x-api-key).
bool Server::Authorized(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt) {
  if (o_.api_key.empty()) return true;
  if (req.get_header_value("Authorization") == "Bearer " + o_.api_key) return true;
  if (req.has_header("x-api-key") && req.get_header_value("x-api-key") == o_.api_key) return true;
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, {401, "authentication_error", "invalid_api_key", "missing or invalid API key"}, fmt);
  return false;
}

bool Server::Ready(httplib::Response& res, ErrorFormat fmt) {
  if (loaded_.load()) return true;
  SendError(res, {503, "server_error", "loading", "the model is still loading"}, fmt);
  return false;
}

bool Server::Admit(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt, bool generate) {
  if (!Authorized(req, res, fmt) || !Ready(res, fmt)) return false;
  if (generate && embed_only_) {
    ++metrics_.n_requests_err;
    SendError(res,
              {501, "not_supported_error", "not_supported",
               "model '" + o_.alias + "' is an embedding model: it cannot generate (use /v1/embeddings or /v1/rerank)"},
              fmt);
    return false;
  }
  return true;
}

RequestContext Server::Context() const {
  return RequestContext{model_.get(), o_.alias, o_.cache_prompt, info_.n_vocab, n_ctx_, o_.chat_template, o_.draft_max};
}

ServedInfo Server::Info() const {
  ServedInfo i;
  i.alias = o_.alias;
  i.path = o_.model;
  i.loaded = loaded_;
  i.embed_only = embed_only_;
  i.n_ctx = n_ctx_;
  i.slots = o_.parallel;
  if (i.loaded) i.summary = info_;
  return i;
}

AnswerHeader Server::Header(const std::string& prefix) {
  AnswerHeader h;
  h.id = prefix + std::to_string(++id_counter_);
  h.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = o_.alias;
  return h;
}

Slot* Server::TakeSlot(Request* r, ErrorFormat fmt, httplib::Response& res) {
  // --n-predict: every front door's default and cap of the output, applied here once.
  if (o_.n_predict > 0 && (r->gp.max_tokens < 0 || r->gp.max_tokens > o_.n_predict)) r->gp.max_tokens = o_.n_predict;
  const Request& rr = *r;
  ApiError err;
  Slot* slot = slots_.Acquire(rr.prompt, rr.chat ? rr.turn_messages.dump() : std::string(), &err);
  if (slot == nullptr) {
    ++metrics_.n_rejected;
    SendError(res, err, fmt);
  }
  return slot;
}

void Server::AnswerText(std::shared_ptr<Request> r, std::shared_ptr<TextWriter> w, ErrorFormat fmt,
                        Clock::time_point t0, httplib::Response& res) {
  Slot* slot = TakeSlot(r.get(), fmt, res);
  if (slot == nullptr) return;
  auto lease = std::shared_ptr<SlotLease>(new SlotLease{&slots_, slot});
  const GenerateLimits limits{info_.n_vocab, n_ctx_};
  auto finish = [this, t0](zf_status st) { Finished(st, t0); };
  if (o_.verbose) {
    std::fprintf(stderr, "zerfoo serve: completion on slot %d, %zu prompt tokens\n", slot->id, r->prompt.size());
  }
  if (!r->stream) {
    Outcome out;
    const zf_status st = Generate(
        slot, *r, [](const std::string&, const std::vector<TokenLogprobs>&) { return true; }, t0, limits, &metrics_,
        &out);
    finish(st);
    if (st != ZF_OK) {
      SendError(res, GenerateError(st), fmt);
      return;
    }
    res.set_content(Dump(w->Whole(out)), "application/json");
    return;
  }
  // Streaming: the whole generation runs inside the content provider, on this worker thread.
  StreamHeaders(res);
  res.set_chunked_content_provider(
      w->StreamType(), [this, r, w, slot, lease, limits, t0, finish](size_t, httplib::DataSink& sink) {
        try {
          bool ok = Write(sink, w->Open());
          Outcome out;
          zf_status st = ZF_OK;
          if (ok) {
            st = Generate(
                slot, *r,
                [&](const std::string& piece, const std::vector<TokenLogprobs>& lps) {
                  return Write(sink, w->Piece(piece, lps));
                },
                t0, limits, &metrics_, &out);
          }
          if (!ok || out.client_gone) {
            ++metrics_.n_cancelled;
            finish(ZF_OK);
            sink.done();
            return false;
          }
          finish(st);
          Write(sink, st != ZF_OK ? w->Fail(GenerateError(st)) : w->Close(out));
          sink.done();
          return true;
        } catch (const std::exception& e) {  // e.g. bad_alloc: end this stream, keep serving
          std::fprintf(stderr, "zerfoo serve: stream failed: %s\n", e.what());
          return false;
        }
      });
}

void Server::AnswerTurn(std::shared_ptr<Request> r, std::shared_ptr<TurnWriter> w, ErrorFormat fmt,
                        Clock::time_point t0, httplib::Response& res) {
  Slot* slot = TakeSlot(r.get(), fmt, res);
  if (slot == nullptr) return;
  auto finish = [this, t0](zf_status st) { Finished(st, t0); };
  if (o_.verbose) std::fprintf(stderr, "zerfoo serve: chat turn on slot %d\n", slot->id);
  // The turn begins here, before anything is answered: a request the library refuses (its chat
  // fields, the constraint, a prompt past the context) is a plain error answer.
  // The turn goes before the slot is given back (members are destroyed in reverse order).
  struct TurnLease {
    std::shared_ptr<SlotLease> lease;
    TurnPtr turn{nullptr, &zf_chat_turn_free};
    zf_turn* get() const { return turn.get(); }
    void reset() { turn.reset(); }
  };
  auto turn = std::make_shared<TurnLease>();
  turn->lease = std::shared_ptr<SlotLease>(new SlotLease{&slots_, slot});
  if (const zf_status st = BeginTurn(slot, *r, &turn->turn); st != ZF_OK) {
    finish(st);
    SendError(res, TurnError(st), fmt);
    return;
  }
  if (!r->stream) {
    TurnOutcome out;
    const zf_status st = DriveTurn(turn->get(), slot, *r, [](const TurnDelta&) { return true; }, t0, &metrics_, &out);
    turn->reset();
    finish(st);
    if (st != ZF_OK) {
      SendError(res, TurnError(st), fmt);
      return;
    }
    res.set_content(Dump(w->Whole(out)), "application/json");
    return;
  }
  // Streaming: the turn runs inside the content provider, on this worker thread.
  StreamHeaders(res);
  res.set_chunked_content_provider(
      w->StreamType(), [this, r, w, slot, turn, t0, finish](size_t, httplib::DataSink& sink) {
        try {
          bool started = false, ok = true;
          TurnOutcome out;
          const zf_status st = DriveTurn(
              turn->get(), slot, *r,
              [&](const TurnDelta& d) {
                if (!started) ok = Write(sink, w->Open()), started = true;
                return ok && Write(sink, w->Event(d));
              },
              t0, &metrics_, &out);
          turn->reset();  // before the slot goes back (the lease is released with the provider)
          if (out.client_gone) {
            ++metrics_.n_cancelled;
            finish(ZF_OK);
            sink.done();
            return false;
          }
          finish(st);
          if (!started && st == ZF_OK) Write(sink, w->Open());
          Write(sink, st != ZF_OK ? w->Fail(TurnError(st)) : w->Close(out));
          sink.done();
          return true;
        } catch (const std::exception& e) {  // e.g. bad_alloc: end this stream, keep serving
          std::fprintf(stderr, "zerfoo serve: stream failed: %s\n", e.what());
          return false;
        }
      });
}

json Server::Embed(const EmbedRequest& r) {
  // A slot while it runs, as a completion takes one: --parallel bounds all the work on the
  // model's threads, and a full queue or a drain answers 503 here too.
  ApiError busy;
  Slot* slot = slots_.Acquire({}, std::string(), &busy);
  if (slot == nullptr) throw busy;
  SlotLease lease{&slots_, slot};
  uint64_t n_tokens = 0;
  json answer = cli::serve::Embed(EmbedContext{model_.get(), o_.alias, EmbedLimit()}, r, &n_tokens);
  ++metrics_.n_requests_ok;
  ++metrics_.n_embed_requests;
  metrics_.n_embed_inputs += r.tokens.empty() ? r.texts.size() : r.tokens.size();
  metrics_.n_embed_tokens += n_tokens;
  return answer;
}

void Server::HandleEmbeddings(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, ErrorBody, false)) return;
  try {
    res.set_content(Dump(Embed(ParseEmbedRequest(req.body, info_.n_vocab, size_t(o_.max_inputs)))), "application/json");
  } catch (const ApiError& e) {
    ++metrics_.n_requests_err;
    SendError(res, e);
  }
}

void Server::HandleRerank(const httplib::Request& req, httplib::Response& res) {
  if (!Admit(req, res, ErrorBody, false)) return;
  try {
    const RerankRequest r = ParseRerankRequest(req.body, size_t(o_.max_documents));
    ApiError busy;  // a slot while it runs, as for embeddings
    Slot* slot = slots_.Acquire({}, std::string(), &busy);
    if (slot == nullptr) throw busy;
    SlotLease lease{&slots_, slot};
    uint64_t n_tokens = 0;
    const json answer = cli::serve::Rerank(EmbedContext{model_.get(), o_.alias, EmbedLimit()}, r, &n_tokens);
    ++metrics_.n_requests_ok;
    ++metrics_.n_rerank_requests;
    metrics_.n_rerank_documents += r.documents.size();
    res.set_content(Dump(answer), "application/json");
  } catch (const ApiError& e) {
    ++metrics_.n_requests_err;
    SendError(res, e);
  }
}

std::string Server::Metrics() {
  // KV utilization counts the positions of running requests only: an idle slot's cached
  // prompt is reusable but free to overwrite, so it is no load for a router.
  const SlotPool::Load load = slots_.CurrentLoad();
  const bool loaded = loaded_;
  ServeGauges g;
  g.waiting = load.waiting;
  g.running = load.running;
  g.kv_frac = loaded ? load.kv_tokens / (double(n_ctx_) * double(o_.parallel)) : 0.0;
  g.slots_total = loaded ? double(slots_.size()) : 0.0;
  g.queue_capacity = o_.queue;
  g.ready = loaded && !slots_.draining();
  if (loaded) {
    g.prefix_cache.struct_size = sizeof g.prefix_cache;
    if (zf_model_cache_info(model_.get(), &g.prefix_cache) != ZF_OK) g.prefix_cache = zf_cache_info{};
  }
  return PrometheusText(metrics_, g);
}

void Server::Routed(const std::string& path, const char* method) {
  std::string& m = methods_[path];
  m += (m.empty() ? "" : ", ") + std::string(method);
}

void Server::Get(const std::string& path, Handler handler) {
  Routed(path, "GET, HEAD");
  svr_.Get(path, std::move(handler));
}

void Server::Post(const std::string& path, ErrorFormat fmt, Handler handler) {
  Routed(path, "POST");
  // The body read here, under --max-body-mb whether it comes with a Content-Length (httplib
  // answers 413 itself) or chunked (httplib would read any length).
  svr_.Post(path, [this, fmt, handler](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& reader) {
    httplib::Request with_body = req;
    bool too_large = false;
    const bool ok = reader([&](const char* data, size_t len) {
      if (with_body.body.size() + len > o_.max_body) {
        too_large = true;
        return false;
      }
      with_body.body.append(data, len);
      return true;
    });
    if (too_large || res.status == 413) {
      res.set_header("Connection", "close");  // the rest of the body is not read
      SendError(res, {413, "invalid_request_error", "request_too_large",
                      "the request body is larger than this server's limit of " + std::to_string(o_.max_body >> 20) +
                          " MiB (--max-body-mb)"}, fmt);
      return;
    }
    if (!ok) {
      SendError(res, BadRequest("invalid_body", "the request body could not be read"), fmt);
      return;
    }
    handler(with_body, res);
  });
}

void Server::Routes() {
  Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!loaded_) {
      SendError(res, {503, "server_error", "loading", "the model is still loading"});
    } else if (slots_.draining()) {
      SendError(res, {503, "server_error", "shutting_down", "the server is shutting down"});
    } else {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    }
  });
  Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Metrics(), "text/plain; version=0.0.4");
  });
  Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res, ErrorBody)) return;
    json m = {{"id", o_.alias}, {"object", "model"}, {"created", 0}, {"owned_by", "zerfoo"}};
    if (loaded_) {
      m["meta"] = {{"n_ctx", n_ctx_},         {"n_ctx_train", info_.n_ctx_train}, {"n_vocab", info_.n_vocab},
                   {"n_params", info_.n_params}, {"architecture", info_.architecture}, {"slots", o_.parallel}};
    }
    res.set_content(Dump(json{{"object", "list"}, {"data", json::array({m})}}), "application/json");
  });
  // The front doors: one module per API, all on the one generation path (front_door.h).
  AddOpenAiRoutes(*this);
  AddAnthropicRoutes(*this);
  AddResponsesRoutes(*this);
  AddOllamaRoutes(*this);
  AddInfillRoutes(*this);
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    Post(path, ErrorBody, [this](const httplib::Request& req, httplib::Response& res) { HandleEmbeddings(req, res); });
  }
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"}) {  // llama-server's aliases
    Post(path, ErrorBody, [this](const httplib::Request& req, httplib::Response& res) { HandleRerank(req, res); });
  }

  Post("/tokenize", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, ErrorBody, false)) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("content") || !body["content"].is_string()) {
        throw BadRequest("invalid_type", "'content' must be a string");
      }
      const bool add_special = body.value("add_special", false);
      const bool parse_special = body.value("parse_special", true);
      const std::vector<int32_t> toks =
          Tokenize(model_.get(), body["content"].get<std::string>(),
                   (add_special ? ZF_TOKENIZE_ADD_SPECIAL : 0u) | (parse_special ? ZF_TOKENIZE_PARSE_SPECIAL : 0u));
      res.set_content(Dump(json{{"tokens", toks}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    } catch (const json::exception& e) {
      SendError(res, BadRequest("invalid_type", e.what()));
    }
  });
  Post("/detokenize", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, ErrorBody, false)) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("tokens") || !body["tokens"].is_array()) {
        throw BadRequest("invalid_type", "'tokens' must be an array of token ids");
      }
      std::vector<int32_t> toks;
      for (const json& t : body["tokens"]) {
        if (!t.is_number_integer()) throw BadRequest("invalid_type", "'tokens' must be an array of token ids");
        const int64_t v = t.get<int64_t>();
        if (v < 0 || v >= info_.n_vocab) throw BadRequest("invalid_value", "token id outside the vocabulary");
        toks.push_back(int32_t(v));
      }
      std::string text;
      const zf_status st = FetchString(
          [&](char* buf, size_t cap, size_t* needed) {
            return zf_detokenize(model_.get(), toks.data(), toks.size(), 0, buf, cap, needed);
          },
          true, &text);
      if (st != ZF_OK) throw ServerError(st);
      res.set_content(Dump(json{{"content", text}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  Post("/apply-template", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, ErrorBody, false)) return;
    try {
      const std::string request = TurnRequestJson(ParseObject(req.body));
      res.set_content(Dump(json{{"prompt", TurnPrompt(model_.get(), request, o_.chat_template)}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  svr_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {  // a known path with another method: 405 with the methods it takes
      if (const auto it = methods_.find(req.path); it != methods_.end()) {
        res.status = 405;
        res.set_header("Allow", it->second);
        res.set_content(ErrorBody({405, "invalid_request_error", "method_not_allowed",
                                   req.method + " is not allowed on " + req.path + " (allowed: " + it->second + ")"}),
                        "application/json");
        return;
      }
    }
    if (res.status == 413) {
      res.set_content(ErrorBody({413, "invalid_request_error", "request_too_large",
                                 "the request body is larger than this server's limit of " +
                                     std::to_string(o_.max_body >> 20) + " MiB (--max-body-mb)"}),
                      "application/json");
      return;
    }
    const std::string code = res.status == 404 ? "not_found" : "http_" + std::to_string(res.status);
    res.set_content(ErrorBody({res.status, "invalid_request_error", code,
                               res.status == 404 ? "no such endpoint" : "the request could not be read"}),
                    "application/json");
  });
  svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendError(res, {500, "server_error", "internal_error", what});
  });
}

int Server::Run() {
  Routes();
  // A worker per connection (httplib): enough for every slot, the whole queue, and kSpareWorkers
  // more, so the 503 decision is made by a handler instead of connections piling up in the pool,
  // and clients that connect and stall (half a request, an idle keep-alive) cannot take every
  // worker: /health stays answered. The workers mostly wait, on a socket or for a slot; a
  // stalled connection is dropped after --timeout seconds of silence, an idle keep-alive after 5.
  constexpr int kSpareWorkers = 64;
  const size_t workers = size_t((o_.parallel > 0 ? o_.parallel : kAutoSlotsMax) + o_.queue + kSpareWorkers);
  svr_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  svr_.set_keep_alive_timeout(5);
  svr_.set_read_timeout(o_.timeout);
  svr_.set_write_timeout(o_.timeout);
  svr_.set_payload_max_length(o_.max_body);

  int port = o_.port;
  if (port == 0) {
    port = svr_.bind_to_any_port(o_.host);
    if (port < 0) {
      std::fprintf(stderr, "zerfoo: error: cannot listen on %s\n", o_.host.c_str());
      return kExitRuntime;
    }
  } else if (!svr_.bind_to_port(o_.host, port)) {
    std::fprintf(stderr, "zerfoo: error: cannot listen on %s:%d\n", o_.host.c_str(), port);
    return kExitRuntime;
  }
  std::fprintf(stderr, "zerfoo serve: listening on http://%s:%d (model loading)\n", o_.host.c_str(), port);

  std::atomic<bool> listener_done{false};
  std::thread http([this, &listener_done] {
    svr_.listen_after_bind();
    listener_done = true;
  });

  const zf_status st = Load();
  if (st != ZF_OK) {
    const bool by_signal = st == ZF_ERR_CANCELLED && g_stop_signal != 0;
    if (by_signal) std::fprintf(stderr, "zerfoo serve: signal during the load: stopped\n");
    else ReportError(st);
    StopListener(svr_, listener_done);
    http.join();
    return by_signal ? kExitOk : kExitRuntime;
  }
  loaded_ = true;
  if (embed_only_) {
    std::fprintf(stderr, "zerfoo serve: model '%s' ready: embedding model, /v1/embeddings and /v1/rerank only\n",
                 o_.alias.c_str());
  } else {
    std::fprintf(stderr, "zerfoo serve: model '%s' ready: %d slot(s), context %d, queue %d\n", o_.alias.c_str(),
                 o_.parallel, n_ctx_, o_.queue);
  }

  // Wait for SIGTERM/SIGINT, then drain.
  while (g_stop_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "zerfoo serve: signal %d: draining (grace %d s)\n", int(g_stop_signal), o_.grace);
  slots_.StopAccepting();
  StopListener(svr_, listener_done);  // closes the listening socket; the listener returns once workers finish
  std::atomic<bool> drained{false};
  std::thread grace([this, &drained] {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(o_.grace);
    while (!drained && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (drained) return;
    std::fprintf(stderr, "zerfoo serve: grace period over: cancelling running requests\n");
    slots_.CancelAll();
  });
  http.join();
  drained = true;
  grace.join();
  std::fprintf(stderr, "zerfoo serve: stopped\n");
  return kExitOk;
}

}  // namespace cli::serve

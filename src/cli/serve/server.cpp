// The Server: the request's model picked and held (model_registry.h), routes, the completion
// handler (plain and SSE), /metrics per model, the router routes, and the listen / drain cycle.
#include "server.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "audio_api.h"
#include "infill_api.h"
#include "lora_api.h"
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

// Ollama's keep_alive: seconds as a number, or a duration ("5m", "1h30m", "90s", "-1"); < 0
// keeps the model loaded. False for text that is neither.
bool ParseKeepAlive(const json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return std::isfinite(*out);
  }
  if (!v.is_string()) return false;
  const std::string t = v.get<std::string>();
  if (t.empty()) return false;
  size_t i = 0;
  double total = 0;
  const bool negative = t[0] == '-';
  if (negative) ++i;
  if (i == t.size()) return false;
  while (i < t.size()) {
    size_t used = 0;
    double n = 0;
    try {
      n = std::stod(t.substr(i), &used);
    } catch (const std::exception&) {
      return false;
    }
    if (used == 0 || t[i] == '-' || t[i] == '+') return false;
    i += used;
    double unit = 1;  // a bare number: seconds
    if (t.compare(i, 2, "ms") == 0) unit = 0.001, i += 2;
    else if (i < t.size() && t[i] == 'h') unit = 3600, ++i;
    else if (i < t.size() && t[i] == 'm') unit = 60, ++i;
    else if (i < t.size() && t[i] == 's') ++i;
    else if (i < t.size()) return false;
    total += n * unit;
  }
  *out = negative ? -total : total;
  return std::isfinite(*out);
}

std::string Quoted(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 10; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 10) s += ", ...";
  return s;
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
void Server::Finished(LoadedModel& m, zf_status st, Clock::time_point t0) {
  if (st == ZF_OK) ++m.metrics->n_requests_ok;
  else ++m.metrics->n_requests_err;
  m.metrics->e2e.Observe(std::chrono::duration<double>(Clock::now() - t0).count());
}

// An SSE answer: not cached, not buffered by proxies.
void Server::StreamHeaders(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
}

bool Server::Write(httplib::DataSink& sink, const std::string& bytes) {
  return bytes.empty() || sink.write(bytes.data(), bytes.size());
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

ModelRef Server::Admit(const httplib::Request& req, httplib::Response& res, ErrorFormat fmt, bool generate,
                       const ModelPick& pick) {
  if (!Authorized(req, res, fmt)) return nullptr;
  if (!started_) {
    SendError(res, {503, "server_error", "loading", "the model is still loading"}, fmt);
    return nullptr;
  }
  // The name (and Ollama's keep_alive) from the body; a body that is not a JSON object picks
  // the default model, and its parser answers the 400.
  std::string name;
  bool keep = false;
  double keep_s = 0;
  if (!req.body.empty()) {
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_object()) {
      auto it = body.find("model");
      if (pick.ollama && (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty())) {
        it = body.find("name");
      }
      if (it != body.end() && it->is_string()) name = it->get<std::string>();
      const auto ka = body.find("keep_alive");
      if (pick.ollama && ka != body.end() && !ka->is_null()) {
        if (!ParseKeepAlive(*ka, &keep_s)) {
          CountError(nullptr);
          SendError(res, BadRequest("invalid_value", "'keep_alive' must be a duration such as \"5m\", seconds, or -1"),
                    fmt);
          return nullptr;
        }
        keep = true;
      }
    }
  }
  int i = 0;
  if (!name.empty()) {
    i = models_->Find(name, pick.matches);
    if (i < 0 && pick.unknown_is_default) i = 0;
    if (i < 0) {
      CountError(nullptr);
      std::vector<std::string> names;
      for (size_t j = 0; j < models_->size(); ++j) names.push_back(models_->Alias(j));
      SendError(res,
                {404, "invalid_request_error", "model_not_found",
                 "model '" + name + "' not found: this server serves " + Quoted(names)},
                fmt);
      return nullptr;
    }
  }
  ModelRef m;
  try {
    m = models_->Use(size_t(i));
  } catch (const ApiError& e) {
    CountError(nullptr);
    SendError(res, e, fmt);
    return nullptr;
  }
  if (keep) models_->KeepAlive(size_t(i), keep_s);
  if (generate && m->embed_only) {
    ++m->metrics->n_requests_err;
    SendError(res,
              {501, "not_supported_error", "not_supported",
               "model '" + m->o.alias + "' is an embedding model: it cannot generate (use /v1/embeddings or /v1/rerank)"},
              fmt);
    return nullptr;
  }
  return m;
}

void Server::CountError(const ModelRef& m) {
  // Unknown names and failed loads: with one model they count as its errors, as they always have.
  if (m != nullptr) ++m->metrics->n_requests_err;
  else if (models_->size() == 1) ++models_->List()[0].metrics->n_requests_err;
  else ++unrouted_.n_requests_err;
}

RequestContext Server::Context(const ModelRef& m) const {
  return RequestContext{m->model.get(), m->o.alias,      m->o.cache_prompt, m->info.n_vocab,
                        m->n_ctx,        m->o.chat_template, m->o.draft_max,   int32_t(m->loras.size()),
                        m->images};
}

ServedInfo Server::Info(const ModelRef& m) const {
  ServedInfo i;
  i.alias = m->o.alias;
  i.path = m->o.model;
  i.loaded = true;
  i.embed_only = m->embed_only;
  i.n_ctx = m->n_ctx;
  i.slots = m->o.parallel;
  i.summary = m->info;
  return i;
}

std::vector<ServedInfo> Server::Models() const {
  std::vector<ServedInfo> out;
  const auto sys_now = std::chrono::system_clock::now();
  const auto now = Clock::now();
  for (const ModelRegistry::Status& s : models_->List()) {
    ServedInfo i;
    i.alias = s.alias;
    i.path = s.path;
    i.loaded = s.loaded != nullptr;
    i.keep_alive = s.keep_alive;
    i.running = s.in_flight > 0;
    i.idle_since = sys_now - std::chrono::duration_cast<std::chrono::system_clock::duration>(now - s.idle_since);
    if (i.loaded) {
      i.embed_only = s.loaded->embed_only;
      i.n_ctx = s.loaded->n_ctx;
      i.slots = s.loaded->o.parallel;
      i.summary = s.loaded->info;
    }
    out.push_back(i);
  }
  return out;
}

AnswerHeader Server::Header(const ModelRef& m, const std::string& prefix) {
  AnswerHeader h;
  h.id = prefix + std::to_string(++id_counter_);
  h.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = m->o.alias;
  return h;
}

Slot* Server::TakeSlot(LoadedModel& m, Request* r, ErrorFormat fmt, httplib::Response& res) {
  // --n-predict: every front door's default and cap of the output, applied here once.
  const int n_predict = m.o.n_predict;
  if (n_predict > 0 && (r->gp.max_tokens < 0 || r->gp.max_tokens > n_predict)) r->gp.max_tokens = n_predict;
  const Request& rr = *r;
  ApiError err;
  Slot* slot = m.slots.Acquire(rr.prompt, rr.chat ? rr.turn_messages.dump() : std::string(), &err);
  if (slot == nullptr) {
    ++m.metrics->n_rejected;
    SendError(res, err, fmt);
    return nullptr;
  }
  if (const zf_status st = ApplyLoras(m, rr, slot); st != ZF_OK) {
    const ApiError e = ServerError(st);
    m.slots.Release(slot);
    ++m.metrics->n_requests_err;
    SendError(res, e, fmt);
    return nullptr;
  }
  return slot;
}

// The request's LoRA scales (its "lora", else the model's current ones) on the slot's session.
// A change empties the session: its KV rows were computed under the old set (llama-server
// clears the slot's cache alike); the model's prefix cache keys its blocks by the set.
zf_status Server::ApplyLoras(LoadedModel& m, const Request& r, Slot* slot) {
  if (slot->session == nullptr || (m.loras.empty() && slot->lora.empty())) return ZF_OK;
  std::vector<float> want;
  if (r.lora_set) {
    want.assign(m.loras.size(), 0.0f);
    for (const auto& [id, scale] : r.lora) want[size_t(id)] = scale;
  } else {
    std::lock_guard<std::mutex> lock(m.lora_mu);
    want = m.lora_scales;
  }
  if (std::all_of(want.begin(), want.end(), [](float s) { return s == 0.0f; })) want.clear();
  if (want == slot->lora) return ZF_OK;
  std::vector<const zf_lora_adapter*> adapters;
  std::vector<float> scales;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0.0f) continue;
    adapters.push_back(m.loras[i].adapter.get());
    scales.push_back(want[i]);
  }
  const zf_status st = zf_session_set_loras(slot->session.get(), adapters.data(), scales.data(), adapters.size());
  if (st != ZF_OK) return st;
  zf_session_reset(slot->session.get());
  slot->history.clear();
  slot->known = true;
  slot->chat_key.clear();
  slot->lora = std::move(want);
  return ZF_OK;
}

void Server::AnswerText(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TextWriter> w, ErrorFormat fmt,
                        Clock::time_point t0, httplib::Response& res) {
  Slot* slot = TakeSlot(*m, r.get(), fmt, res);
  if (slot == nullptr) return;
  // The slot goes back before the model is let go (the lease holds the model).
  struct Lease {
    ModelRef model;
    SlotLease slot;
  };
  auto lease = std::shared_ptr<Lease>(new Lease{m, SlotLease{&m->slots, slot}});
  const GenerateLimits limits{m->info.n_vocab, m->n_ctx};
  ServeMetrics* metrics = m->metrics;
  auto finish = [m = m.get(), t0](zf_status st) { Finished(*m, st, t0); };
  if (o_.verbose) {
    std::fprintf(stderr, "zerfoo serve: completion on slot %d, %zu prompt tokens\n", slot->id, r->prompt.size());
  }
  if (!r->stream) {
    Outcome out;
    const zf_status st = Generate(
        slot, *r, [](const std::string&, const std::vector<TokenLogprobs>&) { return true; }, t0, limits, metrics,
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
      w->StreamType(), [r, w, slot, lease, limits, metrics, t0, finish](size_t, httplib::DataSink& sink) {
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
                t0, limits, metrics, &out);
          }
          if (!ok || out.client_gone) {
            ++metrics->n_cancelled;
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

void Server::AnswerTurn(ModelRef m, std::shared_ptr<Request> r, std::shared_ptr<TurnWriter> w, ErrorFormat fmt,
                        Clock::time_point t0, httplib::Response& res) {
  Slot* slot = TakeSlot(*m, r.get(), fmt, res);
  if (slot == nullptr) return;
  ServeMetrics* metrics = m->metrics;
  auto finish = [m = m.get(), t0](zf_status st) { Finished(*m, st, t0); };
  if (o_.verbose) std::fprintf(stderr, "zerfoo serve: chat turn on slot %d\n", slot->id);
  // The turn begins here, before anything is answered: a request the library refuses (its chat
  // fields, the constraint, a prompt past the context) is a plain error answer.
  // The turn goes before the slot is given back (members are destroyed in reverse order).
  struct TurnLease {
    ModelRef model;  // let go last: the model outlives its slot and the turn
    std::shared_ptr<SlotLease> lease;
    TurnPtr turn{nullptr, &zf_chat_turn_free};
    zf_turn* get() const { return turn.get(); }
    void reset() { turn.reset(); }
  };
  auto turn = std::make_shared<TurnLease>();
  turn->model = m;
  turn->lease = std::shared_ptr<SlotLease>(new SlotLease{&m->slots, slot});
  if (const zf_status st = BeginTurn(slot, *r, &turn->turn); st != ZF_OK) {
    finish(st);
    SendError(res, TurnError(st), fmt);
    return;
  }
  if (!r->stream) {
    TurnOutcome out;
    const zf_status st = DriveTurn(turn->get(), slot, *r, [](const TurnDelta&) { return true; }, t0, metrics, &out);
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
      w->StreamType(), [r, w, slot, turn, metrics, t0, finish](size_t, httplib::DataSink& sink) {
        try {
          bool started = false, ok = true;
          TurnOutcome out;
          const zf_status st = DriveTurn(
              turn->get(), slot, *r,
              [&](const TurnDelta& d) {
                if (!started) ok = Write(sink, w->Open()), started = true;
                return ok && Write(sink, w->Event(d));
              },
              t0, metrics, &out);
          turn->reset();  // before the slot goes back (the lease is released with the provider)
          if (out.client_gone) {
            ++metrics->n_cancelled;
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

json Server::Embed(const ModelRef& m, const EmbedRequest& r) {
  // A slot while it runs, as a completion takes one: --parallel bounds all the work on the
  // model's threads, and a full queue or a drain answers 503 here too.
  ApiError busy;
  Slot* slot = m->slots.Acquire({}, std::string(), &busy);
  if (slot == nullptr) throw busy;
  SlotLease lease{&m->slots, slot};
  uint64_t n_tokens = 0;
  json answer = cli::serve::Embed(EmbedContext{m->model.get(), m->o.alias, m->o.pooling, m->EmbedLimit()}, r, &n_tokens);
  ServeMetrics& mx = *m->metrics;
  ++mx.n_requests_ok;
  ++mx.n_embed_requests;
  mx.n_embed_inputs += r.tokens.empty() ? r.texts.size() : r.tokens.size();
  mx.n_embed_tokens += n_tokens;
  return answer;
}

void Server::HandleEmbeddings(const httplib::Request& req, httplib::Response& res) {
  const ModelRef m = Admit(req, res, ErrorBody, false);
  if (m == nullptr) return;
  try {
    res.set_content(Dump(Embed(m, ParseEmbedRequest(req.body, m->info.n_vocab, size_t(o_.max_inputs)))),
                    "application/json");
  } catch (const ApiError& e) {
    ++m->metrics->n_requests_err;
    SendError(res, e);
  }
}

void Server::HandleRerank(const httplib::Request& req, httplib::Response& res) {
  const ModelRef m = Admit(req, res, ErrorBody, false);
  if (m == nullptr) return;
  try {
    const RerankRequest r = ParseRerankRequest(req.body, size_t(o_.max_documents));
    ApiError busy;  // a slot while it runs, as for embeddings
    Slot* slot = m->slots.Acquire({}, std::string(), &busy);
    if (slot == nullptr) throw busy;
    SlotLease lease{&m->slots, slot};
    uint64_t n_tokens = 0;
    const json answer = cli::serve::Rerank(EmbedContext{m->model.get(), m->o.alias, m->o.pooling, m->EmbedLimit()}, r, &n_tokens);
    ++m->metrics->n_requests_ok;
    ++m->metrics->n_rerank_requests;
    m->metrics->n_rerank_documents += r.documents.size();
    res.set_content(Dump(answer), "application/json");
  } catch (const ApiError& e) {
    ++m->metrics->n_requests_err;
    SendError(res, e);
  }
}

std::string Server::Metrics() {
  // One series per model, labelled model="alias" when the server has several (one model: the
  // names and values as they always were).
  std::vector<ModelSeries> series;
  const bool many = models_->size() > 1;
  for (const ModelRegistry::Status& st : models_->List()) {
    ModelSeries s;
    s.label = many ? "model=\"" + st.alias + "\"" : "";
    s.metrics = st.metrics;
    ServeGauges& g = s.gauges;
    g.queue_capacity = st.loaded != nullptr ? st.loaded->o.queue : o_.queue;
    if (const std::shared_ptr<const LoadedModel>& m = st.loaded) {
      // KV utilization counts the positions of running requests only: an idle slot's cached
      // prompt is reusable but free to overwrite, so it is no load for a router.
      LoadedModel& lm = const_cast<LoadedModel&>(*m);
      const SlotPool::Load load = lm.slots.CurrentLoad();
      g.waiting = load.waiting;
      g.running = load.running;
      g.kv_frac = load.kv_tokens / (double(lm.n_ctx) * double(std::max(lm.o.parallel, 1)));
      g.slots_total = double(lm.slots.size());
      g.ready = !lm.slots.draining();
      g.prefix_cache.struct_size = sizeof g.prefix_cache;
      if (zf_model_cache_info(lm.model.get(), &g.prefix_cache) != ZF_OK) g.prefix_cache = zf_cache_info{};
    }
    series.push_back(std::move(s));
  }
  std::string text = PrometheusText(series);
  if (many) {
    text += "# HELP zerfoo:requests_unrouted_total Requests that named no model of this server, or whose model "
            "failed to load.\n# TYPE zerfoo:requests_unrouted_total counter\nzerfoo:requests_unrouted_total " +
            std::to_string(unrouted_.n_requests_err.load()) + "\n";
  }
  return text;
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
    bool ok = false;
    if (req.is_multipart_form_data()) {
      // Form parts (OpenAI's audio uploads) into with_body.files, under the same limit.
      size_t total = 0;
      auto part = with_body.files.end();
      ok = reader(
          [&](const httplib::MultipartFormData& header) {
            part = with_body.files.emplace(header.name, header);
            return true;
          },
          [&](const char* data, size_t len) {
            total += len;
            if (total > o_.max_body) {
              too_large = true;
              return false;
            }
            if (part != with_body.files.end()) part->second.content.append(data, len);
            return true;
          });
    } else {
      ok = reader([&](const char* data, size_t len) {
        if (with_body.body.size() + len > o_.max_body) {
          too_large = true;
          return false;
        }
        with_body.body.append(data, len);
        return true;
      });
    }
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
  // The server's health: 200 once the default model's startup load is over, while other models
  // load (a request for one waits for its load).
  Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!started_) {
      SendError(res, {503, "server_error", "loading", "the model is still loading"});
    } else if (draining_) {
      SendError(res, {503, "server_error", "shutting_down", "the server is shutting down"});
    } else {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    }
  });
  Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Metrics(), "text/plain; version=0.0.4");
  });
  ModelRoutes();
  // The front doors: one module per API, all on the one generation path (front_door.h).
  AddOpenAiRoutes(*this);
  AddAnthropicRoutes(*this);
  AddResponsesRoutes(*this);
  AddOllamaRoutes(*this);
  AddInfillRoutes(*this);
  AddLoraRoutes(*this);
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    Post(path, ErrorBody, [this](const httplib::Request& req, httplib::Response& res) { HandleEmbeddings(req, res); });
  }
  for (const char* path : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"}) {  // llama-server's aliases
    Post(path, ErrorBody, [this](const httplib::Request& req, httplib::Response& res) { HandleRerank(req, res); });
  }

  Post("/tokenize", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = Admit(req, res, ErrorBody, false);
    if (m == nullptr) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("content") || !body["content"].is_string()) {
        throw BadRequest("invalid_type", "'content' must be a string");
      }
      const bool add_special = body.value("add_special", false);
      const bool parse_special = body.value("parse_special", true);
      const std::vector<int32_t> toks =
          Tokenize(m->model.get(), body["content"].get<std::string>(),
                   (add_special ? ZF_TOKENIZE_ADD_SPECIAL : 0u) | (parse_special ? ZF_TOKENIZE_PARSE_SPECIAL : 0u));
      res.set_content(Dump(json{{"tokens", toks}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    } catch (const json::exception& e) {
      SendError(res, BadRequest("invalid_type", e.what()));
    }
  });
  Post("/detokenize", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = Admit(req, res, ErrorBody, false);
    if (m == nullptr) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("tokens") || !body["tokens"].is_array()) {
        throw BadRequest("invalid_type", "'tokens' must be an array of token ids");
      }
      std::vector<int32_t> toks;
      for (const json& t : body["tokens"]) {
        if (!t.is_number_integer()) throw BadRequest("invalid_type", "'tokens' must be an array of token ids");
        const int64_t v = t.get<int64_t>();
        if (v < 0 || v >= m->info.n_vocab) throw BadRequest("invalid_value", "token id outside the vocabulary");
        toks.push_back(int32_t(v));
      }
      std::string text;
      const zf_status st = FetchString(
          [&](char* buf, size_t cap, size_t* needed) {
            return zf_detokenize(m->model.get(), toks.data(), toks.size(), 0, buf, cap, needed);
          },
          true, &text);
      if (st != ZF_OK) throw ServerError(st);
      res.set_content(Dump(json{{"content", text}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  Post("/apply-template", ErrorBody, [this](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = Admit(req, res, ErrorBody, false);
    if (m == nullptr) return;
    try {
      const std::string request = TurnRequestJson(ParseObject(req.body));
      res.set_content(Dump(json{{"prompt", TurnPrompt(m->model.get(), request, m->o.chat_template)}}), "application/json");
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
  // The models (a bad preset or directory is a usage error, before anything listens).
  ModelRegistry::Limits limits;
  limits.max_loaded = o_.models_max;
  limits.mem_budget = o_.models_mem_gib > 0 ? uint64_t(o_.models_mem_gib * double(uint64_t(1) << 30)) : AvailableMemory();
  limits.sleep_idle = o_.sleep_idle;
  std::vector<ModelSpec> specs = ModelList(o_);
  // A model with a projector takes images of up to --image-max-mb, base64 in the body (4/3).
  for (const ModelSpec& s : specs) {
    if (!s.o.mmproj.empty()) o_.max_body = std::max(o_.max_body, s.o.image_max_bytes / 3 * 4 + (size_t(1) << 20));
  }
  models_ = std::make_unique<ModelRegistry>(std::move(specs), limits, &LoadProgress);
  Routes();
  // Speech to text: --whisper-model files loaded before listening, --models-dir's .bin files on
  // first use; kept for the server's life.
  speech_ = std::make_unique<SpeechModels>(o_.whisper_models, o_.models_dir);
  if (std::string error; !speech_->LoadGiven(&error)) {
    std::fprintf(stderr, "zerfoo: error: --whisper-model: %s\n", error.c_str());
    return kExitRuntime;
  }
  if (speech_->size() > 0) {
    // OpenAI's audio limit is 25 MB: the body (the file and the form around it) may be that large.
    o_.max_body = std::max(o_.max_body, kMaxAudioBytes + (size_t(1) << 20));
  }
  AddAudioRoutes(*this, speech_.get(), o_.threads, o_.parallel > 0 ? o_.parallel : SlotsForCores());
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
  std::fprintf(stderr, "zerfoo serve: listening on http://%s:%d (%s)\n", o_.host.c_str(), port,
               o_.model.empty() ? "models load on demand" : "model loading");

  std::atomic<bool> listener_done{false};
  std::thread http([this, &listener_done] {
    svr_.listen_after_bind();
    listener_done = true;
  });

  // The default model (the first -m) is loaded before /health says ok, as with one model; the
  // others on their first request. A failure here ends the server.
  if (!o_.model.empty()) {
    try {
      models_->Use(0);
    } catch (const ApiError& e) {
      const bool by_signal = g_stop_signal != 0;
      if (by_signal) std::fprintf(stderr, "zerfoo serve: signal during the load: stopped\n");
      else std::fprintf(stderr, "zerfoo: error: %s\n", e.message.c_str());
      StopListener(svr_, listener_done);
      http.join();
      return by_signal ? kExitOk : kExitRuntime;
    }
  }
  started_ = true;

  // Wait for SIGTERM/SIGINT, then drain.
  while (g_stop_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "zerfoo serve: signal %d: draining (grace %d s)\n", int(g_stop_signal), o_.grace);
  draining_ = true;
  models_->StopAccepting();
  StopListener(svr_, listener_done);  // closes the listening socket; the listener returns once workers finish
  std::atomic<bool> drained{false};
  std::thread grace([this, &drained] {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(o_.grace);
    while (!drained && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (drained) return;
    std::fprintf(stderr, "zerfoo serve: grace period over: cancelling running requests\n");
    models_->CancelAll();
  });
  http.join();
  drained = true;
  grace.join();
  std::fprintf(stderr, "zerfoo serve: stopped\n");
  return kExitOk;
}

}  // namespace cli::serve

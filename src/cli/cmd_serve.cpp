// `zerfoo serve`: an OpenAI-compatible HTTP server (cpp-httplib + nlohmann-json) over the public
// C ABI only. --parallel N sessions ("slots") are created at start; each request runs its whole
// generation on its HTTP worker thread through the pull-style API (zf_generate_begin /
// zf_generation_next), so SSE chunks go out as pieces arrive and a client that goes away stops
// its generation at the next piece. Requests beyond the slots wait in a bounded queue; beyond
// that they get 503 + Retry-After.
//
// Prompt caching: each slot remembers its session's conversation (zf_session_tokens). A request
// takes the idle slot sharing the longest token prefix with its prompt; zf_session_truncate keeps
// that prefix and only the rest is evaluated (zf_session_eval), then zf_generate_begin with an
// empty prompt samples from those logits.
#include "commands.h"

#if ZF_CLI_HAVE_HTTPLIB

#include <signal.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "common.h"

namespace cli {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ServeOptions {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 1;
  int ctx = 0;
  int threads = 0;
  int queue = -1;  // -1: 4 * parallel
  int grace = 30;
  int device = ZF_DEVICE_AUTO;
  std::string api_key;
  std::string alias;
  bool verbose = false;
  bool help = false;
  bool cache_prompt = false;
  bool batch = true;  // the slots share decode steps (zf_model_params.max_batch = parallel)
};

constexpr const char* kServeHelp =
    "usage: zerfoo serve -m MODEL [options]\n\n"
    "OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions (SSE with\n"
    "\"stream\": true), GET /v1/models, /health, /metrics (Prometheus), POST /tokenize,\n"
    "/detokenize, /apply-template. SIGTERM/SIGINT drain: stop accepting, let running requests\n"
    "finish for --grace seconds, then cancel them, exit 0.\n\n"
    "options:\n"
    "  -m, --model FILE          GGUF model file (required)\n"
    "      --host ADDR           address to listen on (default 127.0.0.1)\n"
    "      --port N              TCP port (default 8080; 0 = any free port, printed on stderr)\n"
    "  -np, --parallel N         sessions (slots) generating at once (default 1)\n"
    "  -c, --ctx-size N          context length per slot (0 = min(training, 4096))\n"
    "  -t, --threads N           CPU threads per session and for the batched steps\n"
    "                            (0 = physical cores)\n"
    "      --no-batch            slots decode one at a time instead of sharing each decode\n"
    "                            step (continuous batching, on by default with -np > 1)\n"
    "      --queue N             requests that may wait for a slot (default 4 * parallel);\n"
    "                            beyond that: 503 with Retry-After\n"
    "      --grace SECONDS       drain time on SIGTERM before running requests are cancelled\n"
    "                            (default 30)\n"
    "      --api-key KEY         require 'Authorization: Bearer KEY' on /v1, /tokenize, ...\n"
    "      --alias NAME          model name reported by /v1/models (default: the file name)\n"
    "      --cache-prompt        reuse a slot's KV cache for the prefix a prompt shares with its\n"
    "                            conversation (a request's \"cache_prompt\" overrides). Off by\n"
    "                            default: the shorter prefill rounds differently, so greedy\n"
    "                            output may differ from a full prefill (see README)\n"
    "      --device DEV          auto, cpu or cuda (default auto)\n"
    "  -v, --verbose             log requests and library INFO messages\n"
    "  -h, --help                show this help\n";

ServeOptions ParseServeArgs(int argc, char** argv, int first) {
  ServeOptions o;
  for (int i = first; i < argc; ++i) {
    std::string name = argv[i], value;
    bool has_inline = false;
    const size_t eq = name.find('=');
    if (name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    auto val = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw UsageError("option '" + name + "' needs a value");
      return argv[++i];
    };
    if (name == "-h" || name == "--help") o.help = true;
    else if (name == "-v" || name == "--verbose") o.verbose = true;
    else if (name == "--cache-prompt") o.cache_prompt = true;
    else if (name == "--no-cache-prompt") o.cache_prompt = false;
    else if (name == "--no-batch") o.batch = false;
    else if (name == "-m" || name == "--model") o.model = val();
    else if (name == "--host") o.host = val();
    else if (name == "--port") o.port = int(ParseInt(name, val(), 0, 65535));
    else if (name == "-np" || name == "--parallel") o.parallel = int(ParseInt(name, val(), 1, 256));
    else if (name == "-c" || name == "--ctx-size" || name == "--ctx") o.ctx = int(ParseInt(name, val(), 0, 1 << 24));
    else if (name == "-t" || name == "--threads") o.threads = int(ParseInt(name, val(), 0, 1024));
    else if (name == "--queue") o.queue = int(ParseInt(name, val(), 0, 1 << 16));
    else if (name == "--grace") o.grace = int(ParseInt(name, val(), 0, 86400));
    else if (name == "--api-key") o.api_key = val();
    else if (name == "--alias") o.alias = val();
    else if (name == "--device") {
      const std::string v = val();
      if (v == "auto") o.device = ZF_DEVICE_AUTO;
      else if (v == "cpu") o.device = ZF_DEVICE_CPU;
      else if (v == "cuda") o.device = ZF_DEVICE_CUDA;
      else throw UsageError("--device: expected auto, cpu or cuda, got '" + v + "'");
    } else {
      throw UsageError(name[0] == '-' ? "unknown option '" + name + "'" : "unexpected argument '" + name + "'");
    }
  }
  if (!o.help && o.model.empty()) throw UsageError("missing -m MODEL");
  if (o.queue < 0) o.queue = 4 * o.parallel;
  if (o.alias.empty()) {
    std::string base = o.model.substr(o.model.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0) base.resize(base.size() - 5);
    o.alias = base;
  }
  return o;
}

// ---- errors -------------------------------------------------------------------------------

// A request-level failure: HTTP status + OpenAI error object.
struct ApiError {
  int status;
  std::string type;
  std::string code;
  std::string message;
};

ApiError BadRequest(const std::string& code, const std::string& msg) {
  return {400, "invalid_request_error", code, msg};
}

// A request body that must be a JSON object (every POST endpoint takes one).
json ParseObject(const std::string& text) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw BadRequest("invalid_json", std::string("request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) throw BadRequest("invalid_json", "request body must be a JSON object");
  return body;
}

std::string ErrorBody(const ApiError& e) {
  json j = {{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(ErrorBody(e), "application/json");
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// ---- metrics ------------------------------------------------------------------------------

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void Observe(double v) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++n_;
  }
  void Write(std::string* out, const std::string& name, const std::string& help) const {
    std::lock_guard<std::mutex> lock(mu_);
    *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    uint64_t cum = 0;
    char buf[64];
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cum += counts_[i];
      std::snprintf(buf, sizeof buf, "%g", bounds_[i]);
      *out += name + "_bucket{le=\"" + buf + "\"} " + std::to_string(cum) + "\n";
    }
    cum += counts_.back();
    *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
    std::snprintf(buf, sizeof buf, "%.6f", sum_);
    *out += name + "_sum " + buf + "\n" + name + "_count " + std::to_string(n_) + "\n";
  }

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t n_ = 0;
};

// ---- slots --------------------------------------------------------------------------------

struct Slot {
  int id = 0;
  SessionPtr session;
  std::vector<int32_t> history;   // tokens in the KV cache + pending; valid when `known`
  bool known = true;
  bool busy = false;
  uint64_t last_used = 0;         // Acquire() order, for least-recently-used eviction
  std::atomic<int32_t> kv_tokens{0};  // for the KV utilization gauge
  std::atomic<bool> cancel{false};    // set by drain after the grace period
};

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Parsed sampling/request parameters of one completion request.
struct Request {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool cache_prompt = true;
  std::vector<int32_t> prompt;
  std::string model_name;
  std::vector<std::string> stop;
  zf_generate_params gp{};
  // Token log-probabilities: chat `logprobs: true` (+ `top_logprobs`), completions `logprobs: n`
  // (legacy format). gp.n_logprobs is max(1, top) when on: the ABI reports alternatives only
  // with the chosen token, and top == 0 still asks for the chosen token's logprob.
  bool logprobs = false;
  int32_t top_logprobs = 0;
};

// One generated token's log-probability and its alternatives, as zf_session_logprobs gives them.
struct TokenLogprobs {
  zf_token_logprob chosen;
  std::vector<zf_token_logprob> top;
};

class Server {
 public:
  explicit Server(const ServeOptions& o)
      : o_(o),
        ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
        itl_({0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5}),
        e2e_({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160}) {}

  int Run();

 private:
  // Setup.
  zf_status Load();
  void Routes();
  bool Authorized(const httplib::Request& req, httplib::Response& res);
  bool Ready(httplib::Response& res);

  // Request parsing (throws ApiError).
  Request ParseCompletion(const std::string& body, bool chat);
  std::vector<int32_t> Tokenize(const std::string& text, uint32_t flags);
  std::string RenderChat(const json& messages);

  // Slot scheduling.
  Slot* Acquire(const std::vector<int32_t>& prompt, ApiError* err);
  void Release(Slot* s);
  // Gives the slot back when the last owner (the handler, or the streaming response's content
  // provider, which httplib destroys with the response) lets go, on every path.
  struct Lease {
    Server* server;
    Slot* slot;
    ~Lease() { server->Release(slot); }
  };

  // Runs one completion on `slot`; `emit(text)` returns false if the client is gone.
  struct Outcome {
    std::string text;
    std::vector<TokenLogprobs> logprobs;
    int32_t stop_reason = ZF_STOP_EOS;
    int32_t n_prompt = 0;
    int32_t n_generated = 0;
    bool client_gone = false;
  };
  // `emit(text, logprobs)`: the piece and its tokens' log-probabilities (empty unless asked).
  using EmitFn = std::function<bool(const std::string&, const std::vector<TokenLogprobs>&)>;
  zf_status Generate(Slot* slot, const Request& r, const EmitFn& emit, Clock::time_point t_arrival, Outcome* out);
  // The OpenAI JSON for a piece's log-probabilities: chat's {"content": [...]} or the legacy
  // completions {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (offsets from
  // `text_offset` on, advanced past each token's text).
  json LogprobsJson(const Request& r, const std::vector<TokenLogprobs>& lps, size_t* text_offset);
  std::string TokenText(int32_t token);

  void HandleCompletion(const httplib::Request& req, httplib::Response& res, bool chat);
  std::string Metrics();

  ServeOptions o_;
  httplib::Server svr_;
  ModelPtr model_;
  zf_model_summary info_{};
  int n_ctx_ = 0;
  std::atomic<bool> loaded_{false};
  std::atomic<bool> draining_{false};
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  int running_ = 0;
  bool draining_cancel_ = false;
  uint64_t use_counter_ = 0;  // grace period over: queued requests give up (under mu_)

  std::atomic<uint64_t> n_requests_ok_{0}, n_requests_err_{0}, n_rejected_{0}, n_cancelled_{0};
  std::atomic<uint64_t> n_prompt_tokens_{0}, n_gen_tokens_{0}, n_prompt_cached_{0};
  Histogram ttft_, itl_, e2e_;
  std::atomic<uint64_t> id_counter_{0};
};

volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }

// A SIGTERM during the load aborts it (the load then fails with ZF_ERR_CANCELLED).
int32_t LoadProgress(void*, int32_t) { return g_stop_signal != 0 ? 1 : 0; }

zf_status Server::Load() {
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.device = o_.device;
  mp.n_threads = o_.threads;
  mp.progress = &LoadProgress;
  // Continuous batching: every slot's decode steps coalesced by the library (at most 64 a step).
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
  for (int i = 0; i < o_.parallel; ++i) {
    zf_session_params sp;
    zf_session_params_init(&sp, sizeof sp);
    sp.n_threads = o_.threads;
    sp.n_ctx = n_ctx_;
    zf_session* s = nullptr;
    st = zf_session_create(m, &sp, &s);
    if (st != ZF_OK) return st;
    auto slot = std::make_unique<Slot>();
    slot->id = i;
    slot->session.reset(s);
    slots_.push_back(std::move(slot));
  }
  return ZF_OK;
}

bool Server::Authorized(const httplib::Request& req, httplib::Response& res) {
  if (o_.api_key.empty()) return true;
  if (req.get_header_value("Authorization") == "Bearer " + o_.api_key) return true;
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, {401, "invalid_request_error", "invalid_api_key", "missing or invalid API key"});
  return false;
}

bool Server::Ready(httplib::Response& res) {
  if (loaded_.load()) return true;
  SendError(res, {503, "server_error", "loading", "the model is still loading"});
  return false;
}

std::vector<int32_t> Server::Tokenize(const std::string& text, uint32_t flags) {
  std::vector<int32_t> toks(text.size() + 8);
  size_t n = 0;
  zf_status st = zf_tokenize(model_.get(), text.data(), text.size(), flags, toks.data(), toks.size(), &n);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    toks.resize(n);
    st = zf_tokenize(model_.get(), text.data(), text.size(), flags, toks.data(), toks.size(), &n);
  }
  if (st == ZF_ERR_INVALID_UTF8) throw BadRequest("invalid_utf8", "the text is not valid UTF-8");
  if (st != ZF_OK) throw ApiError{500, "server_error", zf_status_string(st), zf_last_error()};
  toks.resize(n);
  return toks;
}

std::string Server::RenderChat(const json& messages) {
  if (!messages.is_array() || messages.empty()) {
    throw BadRequest("invalid_type", "'messages' must be a non-empty array");
  }
  std::vector<std::string> roles, contents;
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      throw BadRequest("invalid_type", "each message needs a string 'role'");
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer") {
      throw BadRequest("invalid_value", "unsupported message role '" + role + "'");
    }
    std::string content;
    const json c = m.value("content", json());
    if (c.is_string()) {
      content = c.get<std::string>();
    } else if (c.is_array()) {  // [{"type": "text", "text": ...}, ...]
      for (const json& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          throw BadRequest("invalid_type", "only text content parts are supported");
        }
        content += part["text"].get<std::string>();
      }
    } else if (!c.is_null()) {
      throw BadRequest("invalid_type", "message 'content' must be a string or an array of text parts");
    }
    roles.push_back(role == "developer" ? "system" : role);
    contents.push_back(std::move(content));
  }
  std::vector<zf_chat_message> msgs;
  for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
  std::string out;
  const zf_status st = FetchString(
      [&](char* buf, size_t cap, size_t* needed) {
        return zf_chat_apply_template(model_.get(), msgs.data(), msgs.size(), ZF_CHAT_ADD_ASSISTANT, buf, cap, needed);
      },
      true, &out);
  if (st == ZF_ERR_INVALID_UTF8) throw BadRequest("invalid_utf8", "a message is not valid UTF-8");
  if (st != ZF_OK) throw ApiError{500, "server_error", zf_status_string(st), zf_last_error()};
  return out;
}

// Reads an optional number field; throws a 400 on a wrong type.
template <class T>
bool GetNumber(const json& body, const char* key, T* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_number()) throw BadRequest("invalid_type", std::string("'") + key + "' must be a number");
  if (std::is_integral<T>::value && !it->is_number_integer() && !it->is_number_unsigned()) {
    throw BadRequest("invalid_type", std::string("'") + key + "' must be an integer");
  }
  *out = it->get<T>();
  return true;
}

Request Server::ParseCompletion(const std::string& text, bool chat) {
  json body = ParseObject(text);
  Request r;
  r.chat = chat;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) throw BadRequest("invalid_type", "'model' must be a string");
    r.model_name = body["model"].get<std::string>();
    if (!r.model_name.empty() && r.model_name != o_.alias) {
      throw ApiError{404, "invalid_request_error", "model_not_found",
                     "the model '" + r.model_name + "' does not exist; this server serves '" + o_.alias + "'"};
    }
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) throw BadRequest("invalid_type", "'stream' must be a boolean");
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) throw BadRequest("invalid_type", "'stream_options' must be an object");
    if (so.contains("include_usage")) {
      if (!so["include_usage"].is_boolean()) throw BadRequest("invalid_type", "'include_usage' must be a boolean");
      r.include_usage = so["include_usage"].get<bool>();
    }
  }

  zf_generate_params_init(&r.gp, sizeof r.gp);
  r.gp.max_tokens = -1;  // OpenAI: up to the context unless max_tokens says otherwise
  int64_t max_tokens = 0;
  if (GetNumber(body, "max_completion_tokens", &max_tokens) || GetNumber(body, "max_tokens", &max_tokens) ||
      GetNumber(body, "n_predict", &max_tokens)) {
    if (max_tokens < 1 || max_tokens > INT32_MAX) {
      throw BadRequest("invalid_value", "'max_tokens' must be at least 1");
    }
    r.gp.max_tokens = int32_t(max_tokens);
  }
  double f = 0;
  if (GetNumber(body, "temperature", &f)) {
    if (f < 0 || f > 100) throw BadRequest("invalid_value", "'temperature' must be in [0, 100]");
    r.gp.temperature = float(f);
  }
  if (GetNumber(body, "top_p", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'top_p' must be in [0, 1]");
    r.gp.top_p = float(f);
  }
  if (GetNumber(body, "min_p", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'min_p' must be in [0, 1]");
    r.gp.min_p = float(f);
  }
  if (GetNumber(body, "repeat_penalty", &f)) {
    if (f < 0 || f > 100) throw BadRequest("invalid_value", "'repeat_penalty' must be in [0, 100]");
    r.gp.repeat_penalty = float(f);
  }
  int64_t k = 0;
  if (GetNumber(body, "top_k", &k)) {
    if (k < 0 || k > INT32_MAX) throw BadRequest("invalid_value", "'top_k' must be >= 0");
    r.gp.top_k = int32_t(k);
  }
  if (GetNumber(body, "seed", &k)) r.gp.seed = uint64_t(k);
  if (body.contains("ignore_eos") && !body["ignore_eos"].is_null()) {  // llama-server's extension
    if (!body["ignore_eos"].is_boolean()) throw BadRequest("invalid_type", "'ignore_eos' must be a boolean");
    if (body["ignore_eos"].get<bool>()) r.gp.flags |= ZF_GENERATE_IGNORE_EOS;
  }
  r.cache_prompt = o_.cache_prompt;
  if (body.contains("cache_prompt") && !body["cache_prompt"].is_null()) {  // llama-server's extension
    if (!body["cache_prompt"].is_boolean()) throw BadRequest("invalid_type", "'cache_prompt' must be a boolean");
    r.cache_prompt = body["cache_prompt"].get<bool>();
  }
  if (chat) {
    if (body.contains("logprobs") && !body["logprobs"].is_null()) {
      if (!body["logprobs"].is_boolean()) throw BadRequest("invalid_type", "'logprobs' must be a boolean");
      r.logprobs = body["logprobs"].get<bool>();
    }
    if (GetNumber(body, "top_logprobs", &k)) {
      if (k < 0 || k > ZF_MAX_LOGPROBS) {
        throw BadRequest("invalid_value", "'top_logprobs' must be in [0, " + std::to_string(ZF_MAX_LOGPROBS) + "]");
      }
      if (!r.logprobs && k > 0) throw BadRequest("invalid_value", "'top_logprobs' requires 'logprobs': true");
      r.top_logprobs = int32_t(k);
    }
  } else if (GetNumber(body, "logprobs", &k)) {  // legacy completions: the number of alternatives
    if (k < 0 || k > ZF_MAX_LOGPROBS) {
      throw BadRequest("invalid_value", "'logprobs' must be in [0, " + std::to_string(ZF_MAX_LOGPROBS) + "]");
    }
    r.logprobs = true;
    r.top_logprobs = int32_t(k);
  }
  if (r.logprobs) r.gp.n_logprobs = std::max<int32_t>(1, r.top_logprobs);
  if (body.contains("n") && !body["n"].is_null() && body["n"] != 1) {
    throw BadRequest("invalid_value", "only n = 1 is supported");
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const json& e : s) {
        if (!e.is_string()) throw BadRequest("invalid_type", "'stop' must be a string or a list of strings");
        r.stop.push_back(e.get<std::string>());
      }
    } else {
      throw BadRequest("invalid_type", "'stop' must be a string or a list of strings");
    }
    r.stop.erase(std::remove(r.stop.begin(), r.stop.end(), std::string()), r.stop.end());
  }

  // The prompt, tokenized as `zerfoo generate` does (BOS per the model, special-token text as
  // tokens), so greedy outputs equal the CLI's.
  const uint32_t tflags = ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL;
  if (chat) {
    if (!body.contains("messages")) throw BadRequest("missing_field", "'messages' is required");
    r.prompt = Tokenize(RenderChat(body["messages"]), tflags);
  } else {
    if (!body.contains("prompt")) throw BadRequest("missing_field", "'prompt' is required");
    const json& p = body["prompt"];
    if (p.is_string()) {
      r.prompt = Tokenize(p.get<std::string>(), tflags);
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = Tokenize(p[0].get<std::string>(), tflags);
    } else if (p.is_array() && !p.empty() && std::all_of(p.begin(), p.end(), [](const json& e) {
                 return e.is_number_integer();
               })) {
      for (const json& e : p) {
        const int64_t t = e.get<int64_t>();
        if (t < 0 || t >= info_.n_vocab) throw BadRequest("invalid_value", "token id outside the vocabulary");
        r.prompt.push_back(int32_t(t));
      }
    } else {
      throw BadRequest("invalid_type", "'prompt' must be a string or an array of token ids");
    }
  }
  if (r.prompt.empty()) throw BadRequest("invalid_value", "the prompt is empty");
  if (int64_t(r.prompt.size()) + 1 > n_ctx_) {
    throw BadRequest("context_length_exceeded", "the prompt has " + std::to_string(r.prompt.size()) +
                                                    " tokens; this server's context is " + std::to_string(n_ctx_) +
                                                    " tokens per request");
  }
  return r;
}

Slot* Server::Acquire(const std::vector<int32_t>& prompt, ApiError* err) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [&] {
    for (auto& s : slots_) {
      if (!s->busy) return true;
    }
    return false;
  };
  if (draining_) {
    *err = {503, "server_error", "shutting_down", "the server is shutting down"};
    return nullptr;
  }
  if (!idle()) {
    if (waiting_ >= o_.queue) {
      *err = {503, "server_error", "server_busy", "all slots are busy and the queue is full; retry later"};
      return nullptr;
    }
    ++waiting_;
    cv_.wait(lock, [&] { return idle() || draining_cancel_; });
    --waiting_;
    if (!idle()) {
      *err = {503, "server_error", "shutting_down", "the server is shutting down"};
      return nullptr;
    }
  }
  // The idle slot whose conversation shares the longest prefix with the prompt (that much is
  // not evaluated again); on a tie the least recently used.
  Slot* best = nullptr;
  size_t best_len = 0;
  for (auto& s : slots_) {
    if (s->busy) continue;
    const size_t len = s->known ? CommonPrefix(s->history, prompt) : 0;
    if (best == nullptr || len > best_len || (len == best_len && s->last_used < best->last_used)) {
      best = s.get();
      best_len = len;
    }
  }
  best->busy = true;
  best->last_used = ++use_counter_;
  ++running_;
  return best;
}

void Server::Release(Slot* s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->busy = false;
    --running_;
  }
  cv_.notify_all();
}

zf_status Server::Generate(Slot* slot, const Request& r, const EmitFn& emit, Clock::time_point t_arrival,
                           Outcome* out) {
  zf_session* s = slot->session.get();
  // Keep the longest prefix the slot's conversation shares with the prompt (zf_session_truncate
  // drops the rest of its KV cache) and evaluate only the remainder. At least one prompt token
  // is evaluated: its logits start the generation.
  size_t reuse = 0;
  if (r.cache_prompt && slot->known) {
    reuse = std::min(CommonPrefix(slot->history, r.prompt), r.prompt.size() - 1);
  }
  slot->known = false;  // until the session's tokens are read back below
  zf_status st = zf_session_truncate(s, reuse);  // 0: reset
  if (st != ZF_OK) return st;
  n_prompt_cached_ += reuse;
  std::vector<float> logits(size_t(info_.n_vocab));
  st = zf_session_eval(s, r.prompt.data() + reuse, r.prompt.size() - reuse, logits.data(), logits.size());
  if (st != ZF_OK) return st;
  slot->kv_tokens = int32_t(r.prompt.size());
  out->n_prompt = int32_t(r.prompt.size());

  std::vector<const char*> stops;
  for (const std::string& x : r.stop) stops.push_back(x.c_str());
  zf_generate_params gp = r.gp;
  gp.stop = stops.empty() ? nullptr : stops.data();
  gp.n_stop = stops.size();
  zf_generation* g = nullptr;
  st = zf_generate_begin(s, nullptr, 0, &gp, &g);
  if (st != ZF_OK) return st;
  std::unique_ptr<zf_generation, void (*)(zf_generation*)> gen(g, &zf_generation_free);

  size_t n_pieces = 0;
  std::string buf(256, '\0');
  std::vector<zf_token_logprob> lp_buf(64);
  std::vector<TokenLogprobs> piece_lps;
  Clock::time_point last = t_arrival;
  bool first = true;
  for (;;) {
    if (slot->cancel.load()) zf_session_cancel(s);
    size_t len = 0;
    int32_t token = -1, done = 0;
    st = zf_generation_next(gen.get(), buf.data(), buf.size(), &len, &token, &done);
    if (st == ZF_ERR_BUFFER_TOO_SMALL) {
      buf.resize(len);
      continue;
    }
    if (st != ZF_OK) return st;
    if (done) break;
    ++n_pieces;
    slot->kv_tokens = int32_t(r.prompt.size() + n_pieces);
    const Clock::time_point now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    if (first) ttft_.Observe(dt);
    else itl_.Observe(dt);
    first = false;
    last = now;
    const std::string piece(buf.data(), len);
    out->text += piece;
    piece_lps.clear();
    if (r.logprobs) {
      size_t n = 0, stride = 0;
      st = zf_session_logprobs(s, lp_buf.data(), lp_buf.size(), &n, &stride);
      if (st == ZF_ERR_BUFFER_TOO_SMALL) {
        lp_buf.resize(n);
        st = zf_session_logprobs(s, lp_buf.data(), lp_buf.size(), &n, &stride);
      }
      if (st != ZF_OK) return st;
      for (size_t i = 0; stride > 0 && i + stride <= n; i += stride) {
        TokenLogprobs t{lp_buf[i], {}};
        const size_t k = std::min(stride - 1, size_t(r.top_logprobs));
        t.top.assign(lp_buf.begin() + long(i + 1), lp_buf.begin() + long(i + 1 + k));
        piece_lps.push_back(std::move(t));
      }
      out->logprobs.insert(out->logprobs.end(), piece_lps.begin(), piece_lps.end());
    }
    if (!emit(piece, piece_lps)) {  // the client went away: stop now (the piece's token stays pending)
      out->client_gone = true;
      break;
    }
  }
  zf_generate_result res{};
  res.struct_size = sizeof res;
  zf_generation_result(gen.get(), &res);
  gen.reset();
  out->stop_reason = out->client_gone ? ZF_STOP_CALLBACK : res.stop_reason;
  out->n_generated = res.n_generated;
  n_gen_tokens_ += uint64_t(res.n_generated);
  n_prompt_tokens_ += r.prompt.size();
  // What the session now holds (KV cache + a pending token), for the next request's choice.
  size_t n_hist = 0;
  std::vector<int32_t> hist(size_t(n_ctx_) + 1);
  if (zf_session_tokens(s, hist.data(), hist.size(), &n_hist) == ZF_OK) {
    hist.resize(n_hist);
    slot->history.swap(hist);
    slot->known = true;
  }
  return ZF_OK;
}

std::string Server::TokenText(int32_t token) {
  std::string text(32, '\0');
  size_t needed = 0;
  zf_status st = zf_token_to_piece(model_.get(), token, ZF_DETOKENIZE_RENDER_SPECIAL, text.data(), text.size(), &needed);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    text.resize(needed);
    st = zf_token_to_piece(model_.get(), token, ZF_DETOKENIZE_RENDER_SPECIAL, text.data(), text.size(), &needed);
  }
  if (st != ZF_OK) return std::string();
  text.resize(needed);
  return text;
}

json Server::LogprobsJson(const Request& r, const std::vector<TokenLogprobs>& lps, size_t* text_offset) {
  // -inf (a token the model rules out) has no JSON form: OpenAI clients get a very small number.
  auto num = [](float v) { return std::isfinite(v) ? double(v) : -9999.0; };
  if (r.chat) {
    auto entry = [&](const zf_token_logprob& t) {
      const std::string text = TokenText(t.token);
      json bytes = json::array();
      for (unsigned char c : text) bytes.push_back(int(c));
      return json{{"token", text}, {"logprob", num(t.logprob)}, {"bytes", bytes}};
    };
    json content = json::array();
    for (const TokenLogprobs& t : lps) {
      json e = entry(t.chosen);
      e["top_logprobs"] = json::array();
      for (const zf_token_logprob& a : t.top) e["top_logprobs"].push_back(entry(a));
      content.push_back(std::move(e));
    }
    return json{{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprobs& t : lps) {
    const std::string text = TokenText(t.chosen.token);
    tokens.push_back(text);
    token_logprobs.push_back(num(t.chosen.logprob));
    json alts = json::object();
    for (const zf_token_logprob& a : t.top) {
      const std::string at = TokenText(a.token);
      if (!alts.contains(at)) alts[at] = num(a.logprob);  // two ids may render alike: keep the likelier
    }
    top.push_back(std::move(alts));
    offsets.push_back(*text_offset);
    *text_offset += text.size();
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top)},
              {"text_offset", std::move(offsets)}};
}

// The error answer for a failed Generate(); call it right after the failure (zf_last_error).
ApiError GenerateError(zf_status st) {
  if (st == ZF_ERR_CONTEXT_FULL) return BadRequest("context_length_exceeded", zf_last_error());
  if (st == ZF_ERR_CANCELLED) {  // the drain's grace period ended during the prefill
    return {503, "server_error", "shutting_down", "the server is shutting down"};
  }
  return {500, "server_error", zf_status_string(st), zf_last_error()};
}

const char* FinishReason(int32_t stop) {
  switch (stop) {
    case ZF_STOP_MAX_TOKENS:
    case ZF_STOP_CONTEXT_FULL: return "length";
    default: return "stop";
  }
}

void Server::HandleCompletion(const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point t0 = Clock::now();
  if (!Authorized(req, res) || !Ready(res)) return;
  auto r = std::make_shared<Request>();
  try {
    *r = ParseCompletion(req.body, chat);
  } catch (const ApiError& e) {
    ++n_requests_err_;
    SendError(res, e);
    return;
  }
  ApiError err;
  Slot* slot = Acquire(r->prompt, &err);
  if (slot == nullptr) {
    ++n_rejected_;
    SendError(res, err);
    return;
  }
  auto lease = std::shared_ptr<Lease>(new Lease{this, slot});
  const std::string id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(++id_counter_);
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const std::string object = chat ? "chat.completion" : "text_completion";
  auto usage = [](const Outcome& o) {
    return json{{"prompt_tokens", o.n_prompt},
                {"completion_tokens", o.n_generated},
                {"total_tokens", o.n_prompt + o.n_generated}};
  };
  auto finish = [this, t0](zf_status st) {
    if (st == ZF_OK) ++n_requests_ok_;
    else ++n_requests_err_;
    e2e_.Observe(std::chrono::duration<double>(Clock::now() - t0).count());
  };
  if (o_.verbose) std::fprintf(stderr, "zerfoo serve: %s on slot %d, %zu prompt tokens\n", id.c_str(), slot->id, r->prompt.size());

  if (!r->stream) {
    Outcome out;
    const zf_status st =
        Generate(slot, *r, [](const std::string&, const std::vector<TokenLogprobs>&) { return true; }, t0, &out);
    if (st != ZF_OK) {
      const ApiError e = GenerateError(st);
      finish(st);
      SendError(res, e);
      return;
    }
    finish(st);
    json choice = {{"index", 0}, {"finish_reason", FinishReason(out.stop_reason)}};
    size_t offset = 0;
    const json lp = r->logprobs ? LogprobsJson(*r, out.logprobs, &offset) : json(nullptr);
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", out.text}};
      if (r->logprobs) choice["logprobs"] = lp;
    } else {
      choice["text"] = out.text;
      choice["logprobs"] = lp;
    }
    json body = {{"id", id},          {"object", object},        {"created", created},
                 {"model", o_.alias}, {"choices", json::array({choice})}, {"usage", usage(out)}};
    res.set_content(Dump(body), "application/json");
    return;
  }

  // Streaming: the whole generation runs inside the content provider, on this worker thread.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, r, slot, lease, id, created, chunk_object, chat, t0, usage, finish](size_t, httplib::DataSink& sink) {
        try {
          auto send = [&sink](const json& j) {
            const std::string line = "data: " + Dump(j) + "\n\n";
            return sink.write(line.data(), line.size());
          };
          size_t text_offset = 0;
          auto chunk = [&](const json& delta_or_text, const json& finish_reason,
                           const std::vector<TokenLogprobs>* lps = nullptr) {
            json choice = {{"index", 0}, {"finish_reason", finish_reason}};
            const json lp = lps != nullptr ? LogprobsJson(*r, *lps, &text_offset) : json(nullptr);
            if (chat) {
              choice["delta"] = delta_or_text;
              if (lps != nullptr) choice["logprobs"] = lp;
            } else {
              choice["text"] = delta_or_text;
              choice["logprobs"] = lp;
            }
            json j = {{"id", id}, {"object", chunk_object}, {"created", created}, {"model", o_.alias},
                      {"choices", json::array({choice})}};
            if (r->include_usage) j["usage"] = nullptr;
            return j;
          };
          bool ok = true;
          if (chat) ok = send(chunk(json{{"role", "assistant"}, {"content", ""}}, nullptr));
          Outcome out;
          zf_status st = ZF_OK;
          if (ok) {
            st = Generate(
                slot, *r,
                [&](const std::string& piece, const std::vector<TokenLogprobs>& lps) {
                  return send(chunk(chat ? json{{"content", piece}} : json(piece), nullptr,
                                    r->logprobs ? &lps : nullptr));
                },
                t0, &out);
          } else {
            out.client_gone = true;
          }
          if (out.client_gone || !ok) {
            ++n_cancelled_;
            finish(ZF_OK);
            sink.done();
            return false;
          }
          if (st != ZF_OK) {
            const ApiError e = GenerateError(st);
            finish(st);
            const std::string line = "data: " + ErrorBody(e) + "\n\n";
            sink.write(line.data(), line.size());
          } else {
            finish(st);
            send(chunk(chat ? json::object() : json(""), FinishReason(out.stop_reason)));
            if (r->include_usage) {
              send(json{{"id", id}, {"object", chunk_object}, {"created", created}, {"model", o_.alias},
                        {"choices", json::array()}, {"usage", usage(out)}});
            }
          }
          const std::string done = "data: [DONE]\n\n";
          sink.write(done.data(), done.size());
          sink.done();
          return true;
        } catch (const std::exception& e) {  // e.g. bad_alloc: end this stream, keep serving
          std::fprintf(stderr, "zerfoo serve: stream failed: %s\n", e.what());
          return false;
        }
      });
}

std::string Server::Metrics() {
  std::string m;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " + buf + "\n";
  };
  auto counter = [&](const std::string& name, const std::string& help, uint64_t v) {
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " + std::to_string(v) + "\n";
  };
  // KV utilization counts the positions of running requests only: an idle slot's cached
  // prompt is reusable but free to overwrite, so it is no load for a router.
  int waiting = 0, running = 0;
  double kv = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting = waiting_;
    running = running_;
    if (loaded_) {  // slots_ is filled by the loading thread before loaded_ is set
      for (auto& s : slots_) {
        if (s->busy) kv += s->kv_tokens.load();
      }
    }
  }
  const double cap = loaded_ ? double(n_ctx_) * double(o_.parallel) : 1.0;
  const double kv_frac = loaded_ ? kv / cap : 0.0;
  // Gateway API Inference Extension, model server protocol (vLLM names).
  gauge("vllm:num_requests_waiting", "Requests waiting for a slot.", waiting);
  gauge("vllm:num_requests_running", "Requests generating on a slot.", running);
  gauge("vllm:kv_cache_usage_perc", "KV positions used by running requests / all slots' positions (0..1).", kv_frac);
  gauge("vllm:gpu_cache_usage_perc", "Same as vllm:kv_cache_usage_perc (older name).", kv_frac);
  // llama-server's names for the same gauges.
  gauge("llamacpp:requests_processing", "Requests generating on a slot.", running);
  gauge("llamacpp:requests_deferred", "Requests waiting for a slot.", waiting);
  gauge("zerfoo:slots_total", "Slots (sessions) of the server.", loaded_ ? double(slots_.size()) : 0.0);
  gauge("zerfoo:queue_capacity", "Requests that may wait for a slot.", o_.queue);
  gauge("zerfoo:ready", "1 once the model is loaded and the server is not draining.",
        loaded_ && !draining_ ? 1.0 : 0.0);
  counter("zerfoo:generation_tokens_total", "Tokens generated.", n_gen_tokens_.load());
  counter("zerfoo:prompt_tokens_total", "Prompt tokens of completed requests.", n_prompt_tokens_.load());
  counter("zerfoo:prompt_tokens_cached_total", "Prompt tokens reused from a slot's cache.", n_prompt_cached_.load());
  m += "# HELP zerfoo:requests_total Completion requests by outcome.\n# TYPE zerfoo:requests_total counter\n";
  m += "zerfoo:requests_total{outcome=\"ok\"} " + std::to_string(n_requests_ok_.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"error\"} " + std::to_string(n_requests_err_.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"rejected\"} " + std::to_string(n_rejected_.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"disconnected\"} " + std::to_string(n_cancelled_.load()) + "\n";
  ttft_.Write(&m, "zerfoo:time_to_first_token_seconds", "Time from request arrival to the first piece.");
  itl_.Write(&m, "zerfoo:inter_token_latency_seconds", "Time between consecutive pieces of a stream.");
  e2e_.Write(&m, "zerfoo:e2e_request_latency_seconds", "Time from request arrival to the end of the answer.");
  return m;
}

void Server::Routes() {
  svr_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!loaded_) {
      SendError(res, {503, "server_error", "loading", "the model is still loading"});
    } else if (draining_) {
      SendError(res, {503, "server_error", "shutting_down", "the server is shutting down"});
    } else {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    }
  });
  svr_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Metrics(), "text/plain; version=0.0.4");
  });
  svr_.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    json m = {{"id", o_.alias}, {"object", "model"}, {"created", 0}, {"owned_by", "zerfoo"}};
    if (loaded_) {
      m["meta"] = {{"n_ctx", n_ctx_},         {"n_ctx_train", info_.n_ctx_train}, {"n_vocab", info_.n_vocab},
                   {"n_params", info_.n_params}, {"architecture", info_.architecture}, {"slots", o_.parallel}};
    }
    res.set_content(Dump(json{{"object", "list"}, {"data", json::array({m})}}), "application/json");
  });
  svr_.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { HandleCompletion(req, res, true); });
  svr_.Post("/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { HandleCompletion(req, res, true); });
  svr_.Post("/v1/completions",
            [this](const httplib::Request& req, httplib::Response& res) { HandleCompletion(req, res, false); });
  svr_.Post("/completions",
            [this](const httplib::Request& req, httplib::Response& res) { HandleCompletion(req, res, false); });

  svr_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res) || !Ready(res)) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("content") || !body["content"].is_string()) {
        throw BadRequest("invalid_type", "'content' must be a string");
      }
      const bool add_special = body.value("add_special", false);
      const bool parse_special = body.value("parse_special", true);
      const std::vector<int32_t> toks =
          Tokenize(body["content"].get<std::string>(),
                   (add_special ? ZF_TOKENIZE_ADD_SPECIAL : 0u) | (parse_special ? ZF_TOKENIZE_PARSE_SPECIAL : 0u));
      res.set_content(Dump(json{{"tokens", toks}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    } catch (const json::exception& e) {
      SendError(res, BadRequest("invalid_type", e.what()));
    }
  });
  svr_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res) || !Ready(res)) return;
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
      if (st != ZF_OK) throw ApiError{500, "server_error", zf_status_string(st), zf_last_error()};
      res.set_content(Dump(json{{"content", text}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  svr_.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res) || !Ready(res)) return;
    try {
      const json body = ParseObject(req.body);
      if (!body.contains("messages")) throw BadRequest("missing_field", "'messages' is required");
      res.set_content(Dump(json{{"prompt", RenderChat(body["messages"])}}), "application/json");
    } catch (const ApiError& e) {
      SendError(res, e);
    }
  });
  svr_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string code = res.status == 404 ? "not_found" : "http_" + std::to_string(res.status);
    res.set_content(ErrorBody({res.status, "invalid_request_error", code, "no such endpoint or method"}),
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

// httplib's stop() is a no-op until listen has started running: wait for that first (or for the
// listener thread to have ended on its own).
void StopListener(httplib::Server& svr, const std::atomic<bool>& listener_done) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (!svr.is_running() && !listener_done && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  svr.stop();
}

int Server::Run() {
  Routes();
  // Enough workers for every slot, the whole queue, and a few for /health and /metrics, so the
  // 503 decision is made by a handler instead of connections piling up in the pool.
  const size_t workers = size_t(o_.parallel + o_.queue + 4);
  svr_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  svr_.set_keep_alive_timeout(2);
  svr_.set_read_timeout(30);
  svr_.set_write_timeout(30);
  svr_.set_payload_max_length(size_t(64) << 20);

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
  std::fprintf(stderr, "zerfoo serve: model '%s' ready: %d slot(s), context %d, queue %d\n", o_.alias.c_str(),
               o_.parallel, n_ctx_, o_.queue);

  // Wait for SIGTERM/SIGINT, then drain.
  while (g_stop_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "zerfoo serve: signal %d: draining (grace %d s)\n", int(g_stop_signal), o_.grace);
  draining_ = true;
  StopListener(svr_, listener_done);  // closes the listening socket; the listener returns once workers finish
  std::atomic<bool> drained{false};
  std::thread grace([this, &drained] {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(o_.grace);
    while (!drained && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (drained) return;
    std::fprintf(stderr, "zerfoo serve: grace period over: cancelling running requests\n");
    {
      std::lock_guard<std::mutex> lock(mu_);
      draining_cancel_ = true;
    }
    cv_.notify_all();
    for (auto& s : slots_) {
      s->cancel = true;
      zf_session_cancel(s->session.get());
    }
  });
  http.join();
  drained = true;
  grace.join();
  std::fprintf(stderr, "zerfoo serve: stopped\n");
  return kExitOk;
}

}  // namespace

int RunServe(int argc, char** argv, int first) {
  const ServeOptions o = ParseServeArgs(argc, argv, first);
  if (o.help) {
    std::fputs(kServeHelp, stdout);
    return kExitOk;
  }
  if (o.verbose) zf_set_log_level(ZF_LOG_INFO);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  Server server(o);
  return server.Run();
}

}  // namespace cli

#else  // !ZF_CLI_HAVE_HTTPLIB

#include <cstdio>

#include "common.h"

namespace cli {
int RunServe(int, char**, int) {
  std::fputs("zerfoo: error: this build has no HTTP server (configured with -DZF_CLI_SERVE=OFF or without cpp-httplib)\n", stderr);
  return kExitRuntime;
}
}  // namespace cli

#endif

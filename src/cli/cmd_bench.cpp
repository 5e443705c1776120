// `zerfoo bench`: prompt-processing (ppN) and text-generation (tgN) throughput, measured the way
// llama-bench measures it, with its flags (-m -t -p -n -d -r -o), so rows line up one for one:
// ppN evaluates N tokens in one call; tgN evaluates N tokens one call each; with -d D the context
// already holds D tokens (random, evaluated once per test, untimed; each repetition truncates back
// to them); every test runs once to warm up, then -r times; t/s is mean +- sample stddev over reps.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "json.h"

namespace cli {
namespace {

struct BenchArgs {
  std::vector<std::string> models;
  std::vector<int32_t> threads = {static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()))};
  std::vector<int32_t> n_prompt = {512};
  std::vector<int32_t> n_gen = {128};
  std::vector<int32_t> n_depth = {0};
  int32_t reps = 5;
  std::string output = "md";
  bool mmap = true;
  bool fast_prefill = false;
  int32_t device = ZF_DEVICE_AUTO;
  int32_t kv_type = ZF_KV_F16, kv_type_v = ZF_KV_SAME;  // -ctk / -ctv
};

// Reads bench's flags (llama-bench's, lists comma-separated) from the shared option table.
BenchArgs ParseBench(int argc, char** argv, int first, bool* help) {
  const ParsedArgs p = ParseCommandLine("bench", argc, argv, first);
  BenchArgs a;
  *help = p.Has("--help");
  if (*help) return a;
  if (!p.positional.empty()) throw UsageError("unexpected argument '" + p.positional[0] + "'");
  auto i32_list = [&](const char* key, const std::vector<int32_t>& fallback) {
    if (!p.Has(key)) return fallback;
    std::vector<int32_t> out;
    for (int64_t v : p.IntList(key, {})) out.push_back(static_cast<int32_t>(v));
    return out;
  };
  a.models = p.Strings("--model");
  a.threads = i32_list("--threads", a.threads);
  a.n_prompt = i32_list("--n-prompt", a.n_prompt);
  a.n_gen = i32_list("--n-gen", a.n_gen);
  a.n_depth = i32_list("--n-depth", a.n_depth);
  a.reps = static_cast<int32_t>(p.Int("--repetitions", a.reps));
  a.output = p.String("--output", a.output);
  a.mmap = p.Int("--mmap", 1) != 0;
  a.fast_prefill = p.Int("--fast-prefill", 0) != 0;
  a.device = DeviceOption(p);
  a.kv_type = static_cast<int32_t>(p.Int("--cache-type-k", ZF_KV_F16));
  a.kv_type_v = static_cast<int32_t>(p.Int("--cache-type-v", ZF_KV_SAME));
  if (a.models.empty()) throw UsageError("missing -m MODEL");
  return a;
}

struct Result {
  std::string model;
  std::string quant;
  double size_mib = 0;
  double params_m = 0;
  int32_t threads = 0;
  const char* backend = "CPU";  // the engine the model was loaded on (llama-bench's column)
  int32_t n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> ts;  // tokens/s per repetition
  double Mean() const {
    double s = 0;
    for (double x : ts) s += x;
    return ts.empty() ? 0 : s / double(ts.size());
  }
  double Stddev() const {
    if (ts.size() < 2) return 0;
    const double m = Mean();
    double s = 0;
    for (double x : ts) s += (x - m) * (x - m);
    return std::sqrt(s / double(ts.size() - 1));
  }
};

// A test's session: room for the depth, the prompt and the generated tokens, the depth's random
// tokens evaluated (untimed; with -d the fill uses the fast prefill kernels, what the test
// measures is unchanged: tgN is one-token steps either way, ppN uses -fp's kernels).
zf_status DepthSession(zf_model* model, int32_t threads, int32_t n_depth, int32_t n_prompt, int32_t n_gen,
                       const BenchArgs& a, int32_t n_vocab, std::mt19937* rng, SessionPtr* out) {
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  if (a.fast_prefill || (n_depth > 0 && n_prompt == 0)) sp.flags |= ZF_SESSION_FAST_PREFILL;
  sp.kv_type = a.kv_type;
  sp.kv_type_v = a.kv_type_v;
  sp.n_threads = threads;
  sp.n_ctx = n_depth + n_prompt + n_gen + 1;
  zf_session* raw = nullptr;
  zf_status st = zf_session_create(model, &sp, &raw);
  if (st != ZF_OK) return st;
  out->reset(raw);
  if (n_depth == 0) return ZF_OK;
  std::uniform_int_distribution<int32_t> tok(0, n_vocab - 1);
  std::vector<int32_t> fill(static_cast<size_t>(n_depth));
  for (int32_t& t : fill) t = tok(*rng);
  return zf_session_eval(out->get(), fill.data(), fill.size(), nullptr, 0);
}

// Seconds for one repetition of a test: on a fresh session, or on `session` truncated back to
// its depth.
zf_status RunOnce(zf_model* model, zf_session* depth_session, int32_t n_depth, int32_t threads, int32_t n_prompt,
                  int32_t n_gen, const BenchArgs& a, int32_t n_vocab, std::mt19937* rng, double* seconds) {
  SessionPtr fresh;
  zf_session* session = depth_session;
  zf_status st = ZF_OK;
  if (session == nullptr) {
    if ((st = DepthSession(model, threads, 0, n_prompt, n_gen, a, n_vocab, rng, &fresh)) != ZF_OK) return st;
    session = fresh.get();
  } else if ((st = zf_session_truncate(session, size_t(n_depth))) != ZF_OK) {
    return st;
  }
  std::uniform_int_distribution<int32_t> tok(0, n_vocab - 1);
  // The session computes the full logits either way; like llama-bench, which never reads them
  // back, the bench does not copy them out (1 MiB per token for Gemma 3's vocabulary).
  using Clock = std::chrono::steady_clock;
  if (n_prompt > 0) {
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int32_t& t : prompt) t = tok(*rng);
    const auto t0 = Clock::now();
    st = zf_session_eval(session, prompt.data(), prompt.size(), nullptr, 0);
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return st;
  }
  int32_t t = tok(*rng);
  const auto t0 = Clock::now();
  for (int32_t i = 0; i < n_gen; ++i) {
    st = zf_session_eval(session, &t, 1, nullptr, 0);
    if (st != ZF_OK) return st;
    t = tok(*rng);
  }
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return ZF_OK;
}

std::string Basename(const std::string& p) {
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

void PrintMarkdownHeader() {
  std::printf("| model | size | params | backend | threads | test | t/s |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
}

void PrintMarkdownRow(const Result& r) {
  std::string test = r.n_prompt > 0 ? "pp" + std::to_string(r.n_prompt) : "tg" + std::to_string(r.n_gen);
  if (r.n_depth > 0) test += " @ d" + std::to_string(r.n_depth);
  std::printf("| %s %s | %.2f MiB | %.2f M | %s | %d | %s | %.2f ± %.2f |\n", r.model.c_str(),
              r.quant.c_str(), r.size_mib, r.params_m, r.backend, r.threads, test.c_str(), r.Mean(), r.Stddev());
  std::fflush(stdout);
}

std::string JsonRow(const Result& r) {
  std::string ts = "[";
  for (size_t i = 0; i < r.ts.size(); ++i) ts += (i ? ", " : "") + std::to_string(r.ts[i]);
  ts += "]";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"model_filename\": %s, \"model_type\": %s, \"model_size\": %.0f, "
                "\"model_n_params\": %.0f, \"backends\": \"%s\", \"n_threads\": %d, "
                "\"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, ",
                json::Quote(r.model).c_str(), json::Quote(r.quant).c_str(), r.size_mib * 1048576.0,
                r.params_m * 1e6, r.backend, r.threads, r.n_prompt, r.n_gen, r.n_depth, r.Mean(), r.Stddev());
  return std::string(buf) + "\"samples_ts\": " + ts + "}";
}

}  // namespace

int RunBench(int argc, char** argv, int first) {
  bool help = false;
  BenchArgs a = ParseBench(argc, argv, first, &help);
  if (help) {
    std::fputs(CommandHelp("bench").c_str(), stdout);
    return kExitOk;
  }
  std::mt19937 rng(1234);
  std::vector<std::string> rows;
  if (a.output == "md") PrintMarkdownHeader();
  for (const std::string& path : a.models) {
    zf_model_params mp;
    zf_model_params_init(&mp, sizeof mp);
    if (!a.mmap) mp.flags |= ZF_MODEL_NO_MMAP;
    mp.prefix_cache_mib = -1;  // like llama-bench: every repetition computes its whole prompt
    mp.device = a.device;
    zf_model* raw = nullptr;
    zf_status st = zf_model_load(path.c_str(), &mp, &raw);
    if (st != ZF_OK) return ReportError(st);
    ModelPtr model(raw);
    zf_model_summary info;
    info.struct_size = sizeof info;
    if ((st = zf_model_info(model.get(), &info)) != ZF_OK) return ReportError(st);
    std::vector<std::pair<int32_t, int32_t>> tests;
    for (int32_t p : a.n_prompt) if (p > 0) tests.push_back({p, 0});
    for (int32_t n : a.n_gen) if (n > 0) tests.push_back({0, n});
    for (int32_t threads : a.threads) {
      for (int32_t depth : a.n_depth) {
      for (const auto& test : tests) {
        Result r;
        r.model = Basename(path);
        r.quant = info.quant;
        r.size_mib = double(info.file_size) / 1048576.0;
        r.params_m = double(info.n_params) / 1e6;
        r.threads = threads;
        r.backend = info.backend == ZF_DEVICE_CUDA ? "CUDA" : "CPU";
        r.n_prompt = test.first;
        r.n_gen = test.second;
        r.n_depth = depth;
        SessionPtr at_depth;  // with -d: one session filled once, truncated back before each repetition
        if (depth > 0) {
          st = DepthSession(model.get(), threads, depth, test.first, test.second, a, info.n_vocab, &rng, &at_depth);
          if (st != ZF_OK) return ReportError(st);
        }
        for (int32_t rep = -1; rep < a.reps; ++rep) {  // rep -1: warm-up
          double seconds = 0;
          st = RunOnce(model.get(), at_depth.get(), depth, threads, test.first, test.second, a, info.n_vocab, &rng,
                       &seconds);
          if (st != ZF_OK) return ReportError(st);
          if (rep >= 0) r.ts.push_back(double(test.first + test.second) / seconds);
        }
        if (a.output == "md") PrintMarkdownRow(r);
        else rows.push_back(JsonRow(r));
      }
      }
    }
  }
  if (a.output == "json") {
    std::printf("[\n");
    for (size_t i = 0; i < rows.size(); ++i) std::printf("  %s%s\n", rows[i].c_str(), i + 1 < rows.size() ? "," : "");
    std::printf("]\n");
  }
  return kExitOk;
}

}  // namespace cli

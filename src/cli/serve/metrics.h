// The server's counters and latency histograms, and their Prometheus text (/metrics). The
// gauges that describe the slots are read by the server and handed in as a snapshot.
#ifndef ZERFOO_CLI_SERVE_METRICS_H
#define ZERFOO_CLI_SERVE_METRICS_H

#include <atomic>
#include <chrono>

#include "zerfoo.h"
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cli::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends the histogram's samples in Prometheus text format; `label` (e.g. model="x", or "")
  // goes into every sample's labels. The HELP / TYPE lines are the caller's.
  void Write(std::string* out, const std::string& name, const std::string& label) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t n_ = 0;
};

// What requests and generations count; shared by all HTTP worker threads.
struct ServeMetrics {
  ServeMetrics();
  std::atomic<uint64_t> n_requests_ok{0}, n_requests_err{0}, n_rejected{0}, n_cancelled{0};
  std::atomic<uint64_t> n_prompt_tokens{0}, n_gen_tokens{0}, n_prompt_cached{0};
  std::atomic<uint64_t> n_drafted{0}, n_draft_accepted{0};
  // /v1/embeddings and /v1/rerank (successful requests; their failures count in n_requests_err).
  std::atomic<uint64_t> n_embed_requests{0}, n_embed_inputs{0}, n_embed_tokens{0};
  std::atomic<uint64_t> n_rerank_requests{0}, n_rerank_documents{0};
  Histogram ttft, itl, e2e;

  // Output arriving: the first observation of a request is its time to first token (from
  // *last = its arrival), each later one an inter-token latency.
  void ObserveOutput(std::chrono::steady_clock::time_point* last, bool* first) {
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - *last).count();
    (*first ? ttft : itl).Observe(dt);
    *first = false;
    *last = now;
  }
};

// The gauges of one /metrics scrape, read by the server under its locks.
struct ServeGauges {
  int waiting = 0;
  int running = 0;
  double kv_frac = 0;  // KV positions of running requests / all slots' positions
  double slots_total = 0;
  int queue_capacity = 0;
  bool ready = false;  // loaded and not draining
  zf_cache_info prefix_cache{};  // the model's prefix cache (zeros when off or not loaded)
};

// One model's series: its counters, its gauges, and its label ("" with one model: the names as
// they always were; model="alias" with several).
struct ModelSeries {
  std::string label;
  const ServeMetrics* metrics = nullptr;
  ServeGauges gauges;
};

// The /metrics body (Prometheus text format 0.0.4): each metric's HELP and TYPE once, then a
// sample per model.
std::string PrometheusText(const std::vector<ModelSeries>& models);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_METRICS_H

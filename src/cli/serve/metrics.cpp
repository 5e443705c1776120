// Histograms and the Prometheus text of /metrics.
#include "metrics.h"

#include <cstdio>

namespace cli::serve {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++n_;
}

void Histogram::Write(std::string* out, const std::string& name, const std::string& label) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string pre = label.empty() ? "" : label + ",";
  const std::string braces = label.empty() ? "" : "{" + label + "}";
  uint64_t cum = 0;
  char buf[64];
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    std::snprintf(buf, sizeof buf, "%g", bounds_[i]);
    *out += name + "_bucket{" + pre + "le=\"" + buf + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  *out += name + "_bucket{" + pre + "le=\"+Inf\"} " + std::to_string(cum) + "\n";
  std::snprintf(buf, sizeof buf, "%.6f", sum_);
  *out += name + "_sum" + braces + " " + buf + "\n" + name + "_count" + braces + " " + std::to_string(n_) + "\n";
}

ServeMetrics::ServeMetrics()
    : ttft({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl({0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5}),
      e2e({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160}) {}

std::string PrometheusText(const std::vector<ModelSeries>& models) {
  std::string m;
  auto head = [&](const std::string& name, const std::string& help, const char* type) {
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto sample = [&](const std::string& name, const std::string& label, const std::string& value) {
    m += name + (label.empty() ? "" : "{" + label + "}") + " " + value + "\n";
  };
  auto gauge = [&](const std::string& name, const std::string& help, double (*get)(const ModelSeries&)) {
    head(name, help, "gauge");
    for (const ModelSeries& s : models) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", get(s));
      sample(name, s.label, buf);
    }
  };
  auto counter = [&](const std::string& name, const std::string& help, uint64_t (*get)(const ModelSeries&)) {
    head(name, help, "counter");
    for (const ModelSeries& s : models) sample(name, s.label, std::to_string(get(s)));
  };
  using S = const ModelSeries&;
  // Gateway API Inference Extension, model server protocol (vLLM names).
  gauge("vllm:num_requests_waiting", "Requests waiting for a slot.", [](S s) { return double(s.gauges.waiting); });
  gauge("vllm:num_requests_running", "Requests generating on a slot.", [](S s) { return double(s.gauges.running); });
  gauge("vllm:kv_cache_usage_perc", "KV positions used by running requests / all slots' positions (0..1).",
        [](S s) { return s.gauges.kv_frac; });
  gauge("vllm:gpu_cache_usage_perc", "Same as vllm:kv_cache_usage_perc (older name).", [](S s) { return s.gauges.kv_frac; });
  // llama-server's names for the same gauges.
  gauge("llamacpp:requests_processing", "Requests generating on a slot.", [](S s) { return double(s.gauges.running); });
  gauge("llamacpp:requests_deferred", "Requests waiting for a slot.", [](S s) { return double(s.gauges.waiting); });
  gauge("zerfoo:slots_total", "Slots (sessions) of the server.", [](S s) { return s.gauges.slots_total; });
  gauge("zerfoo:queue_capacity", "Requests that may wait for a slot.", [](S s) { return double(s.gauges.queue_capacity); });
  gauge("zerfoo:ready", "1 once the model is loaded and the server is not draining.",
        [](S s) { return s.gauges.ready ? 1.0 : 0.0; });
  counter("zerfoo:generation_tokens_total", "Tokens generated.", [](S s) { return s.metrics->n_gen_tokens.load(); });
  counter("zerfoo:prompt_tokens_total", "Prompt tokens of completed requests.",
          [](S s) { return s.metrics->n_prompt_tokens.load(); });
  counter("zerfoo:prompt_tokens_cached_total", "Prompt tokens reused from a slot's cache.",
          [](S s) { return s.metrics->n_prompt_cached.load(); });
  counter("zerfoo:draft_tokens_total", "Tokens drafted by speculative decoding (--lookup).",
          [](S s) { return s.metrics->n_drafted.load(); });
  counter("zerfoo:draft_accepted_tokens_total", "Drafted tokens kept (each spared a decode step).",
          [](S s) { return s.metrics->n_draft_accepted.load(); });
  counter("zerfoo:embedding_requests_total", "Successful /v1/embeddings requests.",
          [](S s) { return s.metrics->n_embed_requests.load(); });
  counter("zerfoo:embedding_inputs_total", "Inputs embedded (vectors returned).",
          [](S s) { return s.metrics->n_embed_inputs.load(); });
  counter("zerfoo:embedding_tokens_total", "Tokens of the embedded inputs.",
          [](S s) { return s.metrics->n_embed_tokens.load(); });
  counter("zerfoo:rerank_requests_total", "Successful /v1/rerank requests.",
          [](S s) { return s.metrics->n_rerank_requests.load(); });
  counter("zerfoo:rerank_documents_total", "Documents scored by /v1/rerank.",
          [](S s) { return s.metrics->n_rerank_documents.load(); });
  counter("zerfoo:prefix_cache_hit_tokens_total", "Prompt tokens copied from the model's prefix cache.",
          [](S s) { return uint64_t(s.gauges.prefix_cache.hit_tokens); });
  counter("zerfoo:prefix_cache_evicted_blocks_total", "Prefix cache blocks dropped for its bound.",
          [](S s) { return uint64_t(s.gauges.prefix_cache.evicted_blocks); });
  gauge("zerfoo:prefix_cache_bytes", "KV bytes held by the model's prefix cache.",
        [](S s) { return double(s.gauges.prefix_cache.bytes); });
  gauge("zerfoo:prefix_cache_blocks", "Blocks held by the model's prefix cache.",
        [](S s) { return double(s.gauges.prefix_cache.blocks); });
  gauge("zerfoo:prefix_cache_capacity_bytes", "The prefix cache's bound.",
        [](S s) { return double(s.gauges.prefix_cache.capacity_bytes); });
  gauge("zerfoo:prefix_cache_mapped_blocks",
        "Cached blocks read in place by slots' sessions (shared pages, not copies); n slots count n.",
        [](S s) { return double(s.gauges.prefix_cache.mapped_blocks); });
  head("zerfoo:requests_total", "Completion, embedding and rerank requests by outcome.", "counter");
  for (const ModelSeries& s : models) {
    const std::string pre = s.label.empty() ? "" : s.label + ",";
    const ServeMetrics& c = *s.metrics;
    m += "zerfoo:requests_total{" + pre + "outcome=\"ok\"} " + std::to_string(c.n_requests_ok.load()) + "\n";
    m += "zerfoo:requests_total{" + pre + "outcome=\"error\"} " + std::to_string(c.n_requests_err.load()) + "\n";
    m += "zerfoo:requests_total{" + pre + "outcome=\"rejected\"} " + std::to_string(c.n_rejected.load()) + "\n";
    m += "zerfoo:requests_total{" + pre + "outcome=\"disconnected\"} " + std::to_string(c.n_cancelled.load()) + "\n";
  }
  auto histogram = [&](const std::string& name, const std::string& help, const Histogram ServeMetrics::*h) {
    head(name, help, "histogram");
    for (const ModelSeries& s : models) (s.metrics->*h).Write(&m, name, s.label);
  };
  histogram("zerfoo:time_to_first_token_seconds", "Time from request arrival to the first piece.", &ServeMetrics::ttft);
  histogram("zerfoo:inter_token_latency_seconds", "Time between consecutive pieces of a stream.", &ServeMetrics::itl);
  histogram("zerfoo:e2e_request_latency_seconds", "Time from request arrival to the end of the answer.",
            &ServeMetrics::e2e);
  return m;
}

}  // namespace cli::serve

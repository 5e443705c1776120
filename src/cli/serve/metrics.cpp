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

void Histogram::Write(std::string* out, const std::string& name, const std::string& help) const {
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

ServeMetrics::ServeMetrics()
    : ttft({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl({0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5}),
      e2e({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160}) {}

std::string PrometheusText(const ServeMetrics& c, const ServeGauges& g) {
  std::string m;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " + buf + "\n";
  };
  auto counter = [&](const std::string& name, const std::string& help, uint64_t v) {
    m += "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " + std::to_string(v) + "\n";
  };
  // Gateway API Inference Extension, model server protocol (vLLM names).
  gauge("vllm:num_requests_waiting", "Requests waiting for a slot.", g.waiting);
  gauge("vllm:num_requests_running", "Requests generating on a slot.", g.running);
  gauge("vllm:kv_cache_usage_perc", "KV positions used by running requests / all slots' positions (0..1).", g.kv_frac);
  gauge("vllm:gpu_cache_usage_perc", "Same as vllm:kv_cache_usage_perc (older name).", g.kv_frac);
  // llama-server's names for the same gauges.
  gauge("llamacpp:requests_processing", "Requests generating on a slot.", g.running);
  gauge("llamacpp:requests_deferred", "Requests waiting for a slot.", g.waiting);
  gauge("zerfoo:slots_total", "Slots (sessions) of the server.", g.slots_total);
  gauge("zerfoo:queue_capacity", "Requests that may wait for a slot.", g.queue_capacity);
  gauge("zerfoo:ready", "1 once the model is loaded and the server is not draining.", g.ready ? 1.0 : 0.0);
  counter("zerfoo:generation_tokens_total", "Tokens generated.", c.n_gen_tokens.load());
  counter("zerfoo:prompt_tokens_total", "Prompt tokens of completed requests.", c.n_prompt_tokens.load());
  counter("zerfoo:prompt_tokens_cached_total", "Prompt tokens reused from a slot's cache.", c.n_prompt_cached.load());
  counter("zerfoo:draft_tokens_total", "Tokens drafted by speculative decoding (--lookup).", c.n_drafted.load());
  counter("zerfoo:draft_accepted_tokens_total", "Drafted tokens kept (each spared a decode step).",
          c.n_draft_accepted.load());
  counter("zerfoo:embedding_requests_total", "Successful /v1/embeddings requests.", c.n_embed_requests.load());
  counter("zerfoo:embedding_inputs_total", "Inputs embedded (vectors returned).", c.n_embed_inputs.load());
  counter("zerfoo:embedding_tokens_total", "Tokens of the embedded inputs.", c.n_embed_tokens.load());
  counter("zerfoo:rerank_requests_total", "Successful /v1/rerank requests.", c.n_rerank_requests.load());
  counter("zerfoo:rerank_documents_total", "Documents scored by /v1/rerank.", c.n_rerank_documents.load());
  const zf_cache_info& pc = g.prefix_cache;
  counter("zerfoo:prefix_cache_hit_tokens_total", "Prompt tokens copied from the model's prefix cache.", pc.hit_tokens);
  counter("zerfoo:prefix_cache_evicted_blocks_total", "Prefix cache blocks dropped for its bound.", pc.evicted_blocks);
  gauge("zerfoo:prefix_cache_bytes", "KV bytes held by the model's prefix cache.", double(pc.bytes));
  gauge("zerfoo:prefix_cache_blocks", "Blocks held by the model's prefix cache.", double(pc.blocks));
  gauge("zerfoo:prefix_cache_capacity_bytes", "The prefix cache's bound.", double(pc.capacity_bytes));
  gauge("zerfoo:prefix_cache_mapped_blocks",
        "Cached blocks read in place by slots' sessions (shared pages, not copies); n slots count n.",
        double(pc.mapped_blocks));
  m += "# HELP zerfoo:requests_total Completion, embedding and rerank requests by outcome.\n# TYPE zerfoo:requests_total counter\n";
  m += "zerfoo:requests_total{outcome=\"ok\"} " + std::to_string(c.n_requests_ok.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"error\"} " + std::to_string(c.n_requests_err.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"rejected\"} " + std::to_string(c.n_rejected.load()) + "\n";
  m += "zerfoo:requests_total{outcome=\"disconnected\"} " + std::to_string(c.n_cancelled.load()) + "\n";
  c.ttft.Write(&m, "zerfoo:time_to_first_token_seconds", "Time from request arrival to the first piece.");
  c.itl.Write(&m, "zerfoo:inter_token_latency_seconds", "Time between consecutive pieces of a stream.");
  c.e2e.Write(&m, "zerfoo:e2e_request_latency_seconds", "Time from request arrival to the end of the answer.");
  return m;
}

}  // namespace cli::serve

// One completion on one slot: keep the prefix the slot's KV cache shares with the prompt,
// evaluate the rest, then pull pieces (zf_generation_next) and hand each to `emit` as it
// arrives, so a stream goes out piece by piece and a client that goes away stops its generation.
#ifndef ZERFOO_CLI_SERVE_GENERATE_H
#define ZERFOO_CLI_SERVE_GENERATE_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api_error.h"
#include "metrics.h"
#include "request.h"
#include "slots.h"
#include "zerfoo.h"

namespace cli::serve {

using Clock = std::chrono::steady_clock;

// One generated token's log-probability and its alternatives, as zf_session_logprobs gives them.
struct TokenLogprobs {
  zf_token_logprob chosen;
  std::vector<zf_token_logprob> top;
};

// What a finished (or abandoned) generation produced.
struct Outcome {
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  int32_t stop_reason = ZF_STOP_EOS;
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  double prompt_ms = 0, decode_ms = 0;  // the library's prefill and decode wall times
  bool client_gone = false;
};

// `emit(text, logprobs)`: the piece and its tokens' log-probabilities (empty unless asked);
// returns false if the client is gone.
using EmitFn = std::function<bool(const std::string&, const std::vector<TokenLogprobs>&)>;

// The model's shape a generation needs (the ABI has no getter for a session's context).
struct GenerateLimits {
  int32_t n_vocab;
  int n_ctx;
};

// Runs `r` on `slot`; counts tokens and observes the latency histograms in `metrics`
// (t_arrival: when the request came, the start of time to first token).
zf_status Generate(Slot* slot, const Request& r, const EmitFn& emit, Clock::time_point t_arrival,
                   const GenerateLimits& limits, ServeMetrics* metrics, Outcome* out);

// The error answer for a failed Generate(); call it right after the failure (zf_last_error).
ApiError GenerateError(zf_status st);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_GENERATE_H

// Generation: tokenize the prompt, prefill, then sample/decode until a stop condition,
// streaming UTF-8-safe text pieces (stop strings never emitted) to a callback.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace zf::rt {

// Values equal ZF_STOP_* in zerfoo.h.
enum class StopReason : int32_t {
  kEos = 0, kMaxTokens = 1, kStopString = 2, kCallback = 3, kCancelled = 4, kContextFull = 5,
};

struct GenerateOptions {
  int32_t max_tokens = 256;  // < 0: until the context is full
  SamplerParams sampler;     // sampler.seed already resolved (no "random" sentinel here)
  std::vector<std::string> stop;
  bool add_special = true;   // BOS etc. at the start of a session
  bool parse_special = true;
  bool ignore_eos = false;
};

struct GenerateResult {
  StopReason stop_reason = StopReason::kEos;
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  double prompt_ms = 0;
  double decode_ms = 0;
};

// Returns true to stop generation.
using StreamFn = bool (*)(void* ctx, std::string_view piece, int32_t token);

// kInvalidUtf8 for a malformed prompt, kContextFull if the prompt does not fit (nothing is
// evaluated), kInvalidArgument for an empty prompt with nothing to continue from.
Status Generate(Session& session, std::string_view prompt, const GenerateOptions& options, StreamFn stream,
                void* stream_ctx, GenerateResult* result);

}  // namespace zf::rt

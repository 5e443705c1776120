// A chat completion as one library chat turn (zf_chat_turn_begin / _next): the request's chat
// fields go in as JSON, typed events come out; no tokens cross the ABI. The server keeps only
// the slot (its session) and the conversation key it chooses slots by.
#ifndef ZERFOO_CLI_SERVE_TURN_H
#define ZERFOO_CLI_SERVE_TURN_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_error.h"
#include "generate.h"
#include "metrics.h"
#include "request.h"
#include "slots.h"
#include "zerfoo.h"

namespace cli::serve {

// One event of a turn, copied out of the library's borrowed zf_turn_event.
struct TurnDelta {
  int32_t kind = ZF_TURN_DONE;
  std::string text;
  int32_t index = -1;
  std::string id, name;
  std::vector<TokenLogprobs> logprobs;
};

struct TurnOutcome {
  nlohmann::json message;  // the final assistant message (zf_chat_turn_message)
  std::vector<TokenLogprobs> logprobs;
  int32_t finish = ZF_FINISH_STOP;
  int32_t stop_reason = ZF_STOP_EOS;
  int32_t n_prompt = 0, n_cached = 0, n_generated = 0;
  double prompt_ms = 0, decode_ms = 0;  // the turn's prompt (render, tokenize, evaluate) and decode wall times
  bool client_gone = false;
};

// false: the client went away (the turn stops).
using TurnEmitFn = std::function<bool(const TurnDelta&)>;

using TurnPtr = std::unique_ptr<zf_turn, void (*)(zf_turn*)>;

// Begins the request's turn on the slot's session (the prompt is evaluated here). A failure is
// the request's fault or the server's: TurnError says which; nothing has been answered yet.
zf_status BeginTurn(Slot* slot, const Request& r, TurnPtr* out);

// Pulls the turn's events into `emit` until it is done (or the client goes away), then reads
// the final message and records the slot's conversation.
zf_status DriveTurn(zf_turn* turn, Slot* slot, const Request& r, const TurnEmitFn& emit, Clock::time_point t_arrival,
                    ServeMetrics* metrics, TurnOutcome* out);

// The prompt a turn of this request would evaluate (zf_chat_turn_prompt; `mmproj` for a request
// with images); throws TurnError's ApiError.
std::string TurnPrompt(const zf_model* model, const std::string& request_json, const std::string& chat_template,
                       const zf_mmproj* mmproj = nullptr);

// The HTTP error of a turn that failed (the library's message; 400 for the request's faults).
ApiError TurnError(zf_status st);

// OpenAI's finish_reason of a turn.
const char* TurnFinishReason(int32_t finish);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_TURN_H

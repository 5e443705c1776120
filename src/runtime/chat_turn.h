// One assistant turn of a chat as one operation on a session (zf_chat_turn): the request's
// messages rendered once with the model's template, the session's conversation reused where the
// prompt repeats it (then the prefix cache: one layer of reuse), the output constraint
// (response_format, or the tool-choice policy's call grammar) compiled once, and the generated
// text parsed incrementally (chat/stream_parser.h) into typed events: content, reasoning, tool
// calls and their argument fragments, done. The events, concatenated, are the final message.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/stream_parser.h"
#include "common/status.h"
#include "runtime/generator.h"
#include "runtime/served_model.h"
#include "runtime/session.h"

namespace zf::rt {

// Values equal ZF_FINISH_* in zerfoo.h.
enum class FinishReason : int32_t { kStop = 0, kLength = 1, kToolCalls = 2 };

// A piece of an image's place in the prompt: marker text (special tokens parsed, no BOS), or
// (rows > 0) the next `rows` rows of the image's embeddings, a grid of `cols` columns when the
// projector gives one (0: none; M-RoPE models place the rows by it, Session::EvalEmbeddings).
struct ImagePiece {
  std::string text;
  size_t rows = 0;
  int32_t cols = 0;
};

// How a turn places its request's images (chat_request.h: ChatRequest::images): the rows of an
// image's bytes (n x n_embd floats; `field` names the request part for errors) with the pieces
// that place them (Gemma 3: "<start_of_image>", 256 rows, "<end_of_image>"; Idefics3: each
// tile's marker and rows, then the overview's), the pieces alone (for the prompt's text; may
// decode, never encodes), and whether the rows attend both ways.
struct TurnImages {
  std::function<Status(std::string_view bytes, const std::string& field, std::shared_ptr<const std::vector<float>>* rows,
                       std::vector<ImagePiece>* pieces)>
      embed;
  std::function<Status(std::string_view bytes, const std::string& field, std::vector<ImagePiece>* pieces)> layout;
  // The same for input_audio parts (WAV bytes); unset: such a part is refused.
  std::function<Status(std::string_view bytes, const std::string& field, std::shared_ptr<const std::vector<float>>* rows,
                       std::vector<ImagePiece>* pieces)>
      embed_audio;
  std::function<Status(std::string_view bytes, const std::string& field, std::vector<ImagePiece>* pieces)> layout_audio;
  bool bidirectional = false;  // images' rows; audio rows are always causal (as libmtmd)
};

struct TurnOptions {
  std::string_view request_json;     // OpenAI Chat Completions fields (chat_request.h)
  const char* template_name = nullptr;
  const char* template_text = nullptr;
  GenerateOptions generate;          // sampling, stops, logprobs, drafts; its constraint (if any)
                                     // is the output constraint instead of response_format
  int64_t now = -1;                  // strftime_now's clock (-1: the local time now)
  const TurnImages* images = nullptr;  // nullptr: a request with an image part is refused
};

struct TurnUsage {
  int32_t n_prompt = 0, n_cached = 0, n_generated = 0, n_drafted = 0, n_accepted = 0;
  double prompt_ms = 0, decode_ms = 0;
};

// Values of kind equal ZF_TURN_* in zerfoo.h.
struct TurnEvent {
  enum Kind : int32_t { kContent = 1, kReasoning = 2, kToolCall = 3, kToolArgs = 4, kLogprobs = 5, kDone = 6 };
  Kind kind = kDone;
  std::string text;                    // kContent, kReasoning, kToolArgs
  int32_t index = -1;                  // kToolCall, kToolArgs
  std::string id, name;                // kToolCall
  std::vector<TokenLogprob> logprobs;  // the tokens since the last event that carried some
  size_t logprob_stride = 0;
  FinishReason finish = FinishReason::kStop;  // kDone
  StopReason stop = StopReason::kEos;         // kDone
  TurnUsage usage;                            // kDone
};

// The prompt a turn with these options would evaluate (the rendered template), and the same
// errors Begin() gives for the request and the template.
Status RenderTurnPrompt(const ServedModel& model, const TurnOptions& options, std::string* prompt);

class ChatTurn {
 public:
  // kInvalidArgument (the request, naming the field; an invalid constraint), kTemplate,
  // kNotFound (template_name), kInvalidUtf8, kContextFull (nothing evaluated), kUnsupported, or an
  // evaluation error. The session must outlive the turn and is used by nothing else meanwhile.
  static Status Begin(const ServedModel& model, Session& session, const TurnOptions& options,
                      std::unique_ptr<ChatTurn>* out);

  // The next event; after kDone, kDone again. Errors end the turn.
  Status Next(TurnEvent* event);
  // Stops generating (the events so far are the message; StopReason::kCallback).
  void Stop();
  bool done() const { return done_; }
  // The message so far (OpenAI's assistant message JSON, as zf_chat_parse writes it).
  nlohmann::ordered_json Message() const;

 private:
  ChatTurn() = default;
  void Queue(std::vector<chat::Delta>& deltas);
  void QueueDone();

  Session* session_ = nullptr;
  std::unique_ptr<Generation> gen_;
  std::unique_ptr<chat::StreamParser> parser_;
  std::deque<TurnEvent> queue_;
  std::vector<TokenLogprob> logprobs_;  // waiting for the next event
  bool want_logprobs_ = false;
  bool done_ = false, finished_ = false;
  TurnEvent last_;  // kDone once done
  TurnUsage usage_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zf::rt

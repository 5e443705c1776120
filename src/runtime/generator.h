// Generation: tokenize the prompt, prefill, then sample/decode until a stop condition,
// streaming UTF-8-safe text pieces (stop strings never emitted) to a callback.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/constraint.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "runtime/text_stream.h"

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
  // 0 = off; 1..kMaxLogprobs: each sampled token's log-probability and this many most likely
  // alternatives (raw logits: before penalties, temperature and filters), collected per piece
  // into Session::piece_logprobs() with stride 1 + min(n_logprobs, n_vocab). A piece carries
  // every token sampled since the previous piece (its own token last), so no token delivered in
  // text is left out; tokens that end the generation without a piece (EOS, or text swallowed by
  // a stop string) are not reported.
  int32_t n_logprobs = 0;
  // Constrained decoding (runtime/constraint.h): the generated text must match `constraint` of
  // this kind. Compiled by Begin() before anything is evaluated. Disallowed tokens are masked
  // before sampling; when the constraint is complete (nothing may follow) or the model picks an
  // end token it allows (only once the text is complete), the generation ends with kEos, also
  // with ignore_eos.
  ConstraintKind constraint_kind = ConstraintKind::kNone;
  std::string constraint;
  // Non-empty: a lazy constraint, off until this text appears in the output; then fed the
  // output from where the trigger starts and applied from there on (a tool call the model
  // opens in free text). Output the constraint cannot read drops it (the text stays as is).
  std::string constraint_trigger;
  // Set: the constraint already compiled from constraint_kind/constraint (a chat turn compiles
  // it once, when it checks the request); Begin() takes it from here instead of compiling.
  std::unique_ptr<Constraint>* compiled_constraint = nullptr;
  // Speculative decoding (runtime/speculative.h; draft.max 0 = off): the output is token for
  // token what it is without it. Only on sessions that can verify drafts
  // (Session::can_verify()); elsewhere ignored. Drafts come from prompt lookup, or with
  // draft_session from that session's model drafting greedily (the session is brought to this
  // generation's tokens before each draft; nothing else may use it meanwhile).
  DraftOptions draft;
  Session* draft_session = nullptr;
  // Control tokens render as no text, but these (sorted; the chat template's markers, such as
  // harmony's <|channel|>: the chat parser reads them) and those an armed constraint let through.
  const std::vector<int32_t>* shown_control_tokens = nullptr;
};

struct GenerateResult {
  StopReason stop_reason = StopReason::kEos;
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  double prompt_ms = 0;
  double decode_ms = 0;
  double constraint_compile_ms = 0;  // Constraint::Create in Begin()
  double constraint_mask_ms = 0;     // every ComputeMask() (inside decode_ms)
  int64_t constraint_masks = 0;
  int32_t n_drafted = 0;   // tokens proposed by speculative drafting
  int32_t n_accepted = 0;  // of those, kept (each saved one decode step)
};

// Returns true to stop generation.
using StreamFn = bool (*)(void* ctx, std::string_view piece, int32_t token);

// One generation as a step machine: Begin() tokenizes and prefills the prompt, each Next()
// samples and evaluates tokens until one whole-UTF-8 piece of text is ready (or the generation
// ends). Generate() drives it with a callback; the C API's zf_generation pulls from it.
//
// Session state stays consistent at every step: the KV cache holds exactly the evaluated
// tokens, and a token already shown to the caller but not evaluated yet is deferred
// (Session::Defer: evaluated first by the next evaluation). A piece's token is evaluated lazily by
// the following Next(), so Stop() after any piece leaves the session ready for another turn.
// The session must outlive the Generation and must not be used by anything else meanwhile.
class Generation {
 public:
  // Errors as Generate(). A cancel that arrives during the prefill gives a generation that is
  // already done with StopReason::kCancelled.
  static Status Begin(Session& session, std::string_view prompt, const GenerateOptions& options,
                      std::unique_ptr<Generation>* out);

  // Produces the next non-empty piece in *piece and its token in *token, or sets *done when the
  // generation has ended (then result() holds the stop reason). An evaluation error ends the
  // generation and is returned.
  Status Next(std::string* piece, int32_t* token, bool* done);

  // The caller stops consuming (a callback returned nonzero, or the generation is dropped):
  // StopReason::kCallback unless the generation had already ended. Idempotent.
  void Stop();

  bool done() const { return phase_ == Phase::kDone; }
  const GenerateResult& result() const { return result_; }

 private:
  enum class Phase { kSample, kAfterPiece, kTail, kDone };
  Generation(Session& session, const GenerateOptions& options);
  void End(StopReason reason, bool early);
  Status Eval(const int32_t* tokens, size_t n);

  // The steps of Next(), one per phase; each sets the phase that follows. *ready: emit_ holds
  // a piece for the caller (its token last_token_).
  // kSample: a token sampled (unless a stop comes first) and turned into text.
  Status SampleNext(bool* ready);
  bool StopBeforeSample();
  // The armed constraint's mask of allowed tokens (null: no constraint applies).
  Status ConstraintMask(const uint32_t** allow);
  // The constraint follows token t: an armed one commits it, a lazy one watches for its trigger.
  Status FollowConstraint(int32_t t);
  bool ShowsControlToken(int32_t t) const;
  void Show(int32_t t, bool* ready);
  // kAfterPiece: last_token_ was shown (or held back): the generation stops here, or it is
  // evaluated (with a draft when speculation finds one worth it).
  Status AfterPiece();
  bool StopAfterPiece();
  Status EvalLastToken();
  // kTail: the text held back at the end (an incomplete character or stop string) released.
  bool ReleaseTail();
  // A piece takes the log-probabilities of every token sampled since the previous one.
  void DeliverLogprobs();
  // Ends an open draft (Speculation::Settle); result_ counts its accepted tokens.
  void Settle();
  void CountSpeculation();

  Session& session_;
  GenerateOptions options_;
  Sampler sampler_;
  TextStream text_;
  std::vector<int32_t> history_;
  GenerateResult result_;
  Phase phase_ = Phase::kSample;
  bool device_greedy_ = false;
  bool hit_stop_ = false;     // the last token completed a stop string
  int32_t last_token_ = -1;
  std::string emit_;
  std::vector<TokenLogprob> logprobs_;  // tokens sampled since the last piece (n_logprobs > 0)
  std::unique_ptr<Constraint> constraint_;
  bool armed_ = true;      // the constraint applies (a lazy one: once its trigger appeared)
  std::string generated_;  // a lazy constraint's output so far, until armed
  Speculation speculation_;
};

// Begin() + Next() until done, each piece passed to `stream` (a true return is Stop()).
// kInvalidArgument for an invalid constraint and kUnsupported for one in a build without
// constraints (both before anything is evaluated), kInvalidUtf8 for a malformed prompt, kContextFull if the prompt does not fit (nothing is
// evaluated), kInvalidArgument for an empty prompt with nothing to continue from.
Status Generate(Session& session, std::string_view prompt, const GenerateOptions& options, StreamFn stream,
                void* stream_ctx, GenerateResult* result);

}  // namespace zf::rt

// The generation step machine: prefill, then sample -> piece -> decode one token at a time.
// Generate() (push, callback) and the C API's zf_generation (pull) both run this one loop.
#include "runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace zf::rt {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Generation::Generation(Session& session, const GenerateOptions& options)
    : session_(session),
      options_(options),
      sampler_(options.sampler, session.model().desc().n_vocab),
      text_(options.stop),
      speculation_(session, options.draft,
                   options.draft_session != nullptr ? options.draft_session : session.draft()) {
  // What the session was wired with (ServedModel::CreateSession, zf_session_set_draft_model),
  // unless the options say otherwise.
  if (options_.draft_session == nullptr) options_.draft_session = session.draft();
  if (options_.shown_control_tokens == nullptr) options_.shown_control_tokens = session.shown_tokens();
  emit_.reserve(256);
}

Status Generation::Eval(const int32_t* tokens, size_t n) {
  return device_greedy_ ? session_.EvalKeepArgmax(tokens, n) : session_.EvalKeepLogits(tokens, n);
}

void Generation::Settle() {
  speculation_.Settle();
  CountSpeculation();
}

void Generation::CountSpeculation() {
  result_.n_drafted = speculation_.n_drafted();
  result_.n_accepted = speculation_.n_accepted();
}

Status Generation::Begin(Session& session, std::string_view prompt, const GenerateOptions& o,
                         std::unique_ptr<Generation>* out) {
  out->reset();
  const tok::Tokenizer& tok = session.model().tokenizer();
  // The constraint first: an invalid one fails before the session is touched.
  std::unique_ptr<Constraint> constraint;
  double compile_ms = 0;
  if (o.compiled_constraint != nullptr) {
    constraint = std::move(*o.compiled_constraint);  // compiled by the caller (a chat turn)
  } else if (o.constraint_kind != ConstraintKind::kNone) {
    const auto tc = std::chrono::steady_clock::now();
    // A session not made by a ServedModel has no vocabulary to share: one for this generation.
    std::unique_ptr<ConstraintVocab> own_vocab;
    const ConstraintVocab* vocab = session.constraint_vocab();
    if (vocab == nullptr) vocab = (own_vocab = std::make_unique<ConstraintVocab>(session.model())).get();
    ZF_RETURN_IF_ERROR(Constraint::Create(*vocab, o.constraint_kind, o.constraint, &constraint));
    compile_ms = MsSince(tc);
  }

  // Special tokens (BOS) only open a conversation; later turns continue the same sequence.
  // The prefill evaluates the session's deferred tokens (shown by the last turn) first.
  std::vector<int32_t> prompt_tokens;
  const bool first = session.n_past() == 0 && session.deferred().empty();
  ZF_RETURN_IF_ERROR(tok.Encode(prompt, o.add_special && first, o.parse_special, &prompt_tokens));
  const size_t n_prefill = session.deferred().size() + prompt_tokens.size();
  if (n_prefill == 0 && !session.has_logits() && !session.has_argmax()) {
    return InvalidArgument("empty prompt and nothing to continue from");
  }
  if (size_t(session.n_past()) + n_prefill > size_t(session.n_ctx())) {
    return Status(Code::kContextFull, "prompt of " + std::to_string(n_prefill) + " tokens does not fit: " +
                                          std::to_string(session.n_past()) + " of " +
                                          std::to_string(session.n_ctx()) + " context positions are used");
  }

  std::unique_ptr<Generation> g(new Generation(session, o));
  g->constraint_ = std::move(constraint);
  g->armed_ = g->constraint_ == nullptr || o.constraint_trigger.empty();
  g->result_.constraint_compile_ms = compile_ms;
  // Plain greedy on a device engine: only the argmax crosses to the host per token.
  // Log-probabilities and constraint masks need the whole row of logits on the host.
  g->device_greedy_ = session.logits_on_device() && o.sampler.temperature <= 0.0f && o.n_logprobs <= 0 &&
                      g->constraint_ == nullptr &&
                      (o.sampler.repeat_penalty == 1.0f || o.sampler.repeat_last_n == 0);
  if (n_prefill == 0 && !session.has_logits() && session.has_argmax() && !g->device_greedy_) {
    ZF_RETURN_IF_ERROR(session.FetchLogits());  // continuing a device-greedy turn with sampling
  }
  session.piece_logprobs().clear();
  session.set_logprob_stride(o.n_logprobs > 0
                                 ? 1 + size_t(std::min(o.n_logprobs, session.model().desc().n_vocab))
                                 : 0);
  const auto t0 = std::chrono::steady_clock::now();
  if (n_prefill > 0) {
    Status s = g->Eval(prompt_tokens.data(), prompt_tokens.size());
    if (s.code() == Code::kCancelled) {
      g->result_.prompt_ms = MsSince(t0);
      g->End(StopReason::kCancelled, true);
      *out = std::move(g);
      return Status::Ok();
    }
    ZF_RETURN_IF_ERROR(s);
  }
  g->result_.n_prompt = int32_t(prompt_tokens.size());
  g->history_ = session.history();
  g->history_.reserve(size_t(session.n_ctx()) + 1);
  g->speculation_.Start(g->history_.data(), g->history_.size());
  g->result_.prompt_ms = MsSince(t0);
  *out = std::move(g);
  return Status::Ok();
}

void Generation::End(StopReason reason, bool early) {
  Settle();
  result_.stop_reason = reason;
  phase_ = early ? Phase::kDone : Phase::kTail;  // kTail: release the held text first
}

void Generation::Stop() {
  Settle();
  if (phase_ == Phase::kAfterPiece) session_.Defer(last_token_);  // shown, not evaluated
  if (phase_ == Phase::kSample || phase_ == Phase::kAfterPiece) result_.stop_reason = StopReason::kCallback;
  phase_ = Phase::kDone;
  session_.piece_logprobs().clear();  // the generation has ended
}

Status Generation::Next(std::string* piece, int32_t* token, bool* done) {
  piece->clear();
  *done = false;
  session_.piece_logprobs().clear();
  const auto t0 = std::chrono::steady_clock::now();
  struct AddTime {
    double* ms;
    std::chrono::steady_clock::time_point t0;
    ~AddTime() { *ms += MsSince(t0); }
  } add_time{&result_.decode_ms, t0};
  for (;;) {
    bool ready = false;
    Status s;
    switch (phase_) {
      case Phase::kDone:
        *done = true;
        return Status::Ok();
      case Phase::kTail:
        ready = ReleaseTail();
        break;
      case Phase::kAfterPiece:
        s = AfterPiece();
        break;
      case Phase::kSample:
        s = SampleNext(&ready);
        break;
    }
    if (!s.ok()) {  // an evaluation or constraint error ends the generation
      phase_ = Phase::kDone;
      return s;
    }
    if (ready) {
      piece->swap(emit_);
      *token = last_token_;
      DeliverLogprobs();
      return Status::Ok();
    }
  }
}

void Generation::DeliverLogprobs() {
  if (options_.n_logprobs <= 0) return;
  session_.piece_logprobs().swap(logprobs_);
  logprobs_.clear();
}

bool Generation::ReleaseTail() {
  emit_.clear();
  text_.Finish(&emit_);
  phase_ = Phase::kDone;
  return !emit_.empty();
}

Status Generation::AfterPiece() {
  if (StopAfterPiece()) return Status::Ok();
  return EvalLastToken();
}

// Every stop but a full context leaves last_token_ shown but not evaluated (deferred); an
// accepted draft's row is dropped first (Settle keeps what precedes it).
bool Generation::StopAfterPiece() {
  const GenerateOptions& o = options_;
  if (hit_stop_ || session_.n_past() + 1 > session_.n_ctx() ||
      (constraint_ != nullptr && constraint_->IsStopped()) ||
      (o.max_tokens >= 0 && result_.n_generated >= o.max_tokens)) {
    Settle();
  }
  if (hit_stop_) {
    session_.Defer(last_token_);
    End(StopReason::kStopString, true);
    return true;
  }
  if (session_.n_past() + 1 > session_.n_ctx()) {  // not deferred: no room to ever evaluate it
    End(StopReason::kContextFull, false);
    return true;
  }
  if (constraint_ != nullptr && armed_ && constraint_->IsStopped()) {  // complete: nothing may follow
    session_.Defer(last_token_);
    End(StopReason::kEos, false);
    return true;
  }
  if (o.max_tokens >= 0 && result_.n_generated >= o.max_tokens) {
    session_.Defer(last_token_);  // shown but not evaluated: evaluated by the next call
    End(StopReason::kMaxTokens, false);
    return true;
  }
  return false;
}

Status Generation::EvalLastToken() {
  const int32_t max_new = options_.max_tokens >= 0 ? options_.max_tokens - result_.n_generated : -1;
  bool evaluated = false;
  Status s = speculation_.Advance(last_token_, history_.data(), history_.size(), max_new, &evaluated);
  CountSpeculation();
  if (s.ok() && !evaluated) {
    const auto ts = std::chrono::steady_clock::now();
    s = Eval(&last_token_, 1);
    speculation_.PlainStep(MsSince(ts));
  }
  if (s.code() == Code::kCancelled) {
    session_.Defer(last_token_);
    End(StopReason::kCancelled, false);
    return Status::Ok();
  }
  ZF_RETURN_IF_ERROR(s);
  phase_ = Phase::kSample;
  return Status::Ok();
}

bool Generation::StopBeforeSample() {
  if (options_.max_tokens >= 0 && result_.n_generated >= options_.max_tokens) {
    End(StopReason::kMaxTokens, false);
    return true;
  }
  if (session_.ConsumeCancel()) {
    End(StopReason::kCancelled, false);
    return true;
  }
  if (constraint_ != nullptr && armed_ && constraint_->IsStopped()) {
    End(StopReason::kEos, false);
    return true;
  }
  return false;
}

Status Generation::ConstraintMask(const uint32_t** allow) {
  *allow = nullptr;
  if (constraint_ == nullptr || !armed_) return Status::Ok();
  Status s = constraint_->ComputeMask();
  result_.constraint_mask_ms = constraint_->mask_ms();
  result_.constraint_masks = constraint_->n_masks();
  ZF_RETURN_IF_ERROR(s);
  *allow = constraint_->mask();
  return Status::Ok();
}

Status Generation::FollowConstraint(int32_t t) {
  if (constraint_ == nullptr) return Status::Ok();
  if (armed_) return constraint_->Commit(t);
  // A lazy constraint: armed once its trigger appears, fed the output from there. A control
  // token's text counts (Llama's <|python_tag|> is one token): a trigger that starts at one
  // is fed as that token, which the grammar references by id.
  const tok::Tokenizer& tok = session_.model().tokenizer();
  const std::string& trigger = options_.constraint_trigger;
  const size_t from = generated_.size() > trigger.size() ? generated_.size() - trigger.size() : 0;
  const size_t piece_at = generated_.size();
  generated_ += tok.TokenToPiece(t, true);
  const size_t at = generated_.find(trigger, from);
  if (at != std::string::npos) {
    armed_ = true;
    const bool fed = at == piece_at && tok.IsControl(t)
                         ? constraint_->ComputeMask().ok() && constraint_->Commit(t).ok()
                         : constraint_->Feed(std::string_view(generated_).substr(at)).ok();
    if (!fed) constraint_.reset();  // output the constraint cannot read drops it
    generated_.clear();
  }
  return Status::Ok();
}

// Control tokens stay out of the text, but the chat markers and those an armed constraint let
// through (its grammar named them: a call format's markers): the parser reads them.
bool Generation::ShowsControlToken(int32_t t) const {
  const std::vector<int32_t>* shown = options_.shown_control_tokens;
  return (constraint_ != nullptr && armed_) ||
         (shown != nullptr && std::binary_search(shown->begin(), shown->end(), t));
}

void Generation::Show(int32_t t, bool* ready) {
  ++result_.n_generated;
  history_.push_back(t);
  last_token_ = t;
  emit_.clear();
  hit_stop_ = text_.Push(session_.model().tokenizer().TokenToPiece(t, ShowsControlToken(t)), &emit_);
  phase_ = Phase::kAfterPiece;
  *ready = !emit_.empty();
}

Status Generation::SampleNext(bool* ready) {
  if (StopBeforeSample()) return Status::Ok();
  const uint32_t* allow = nullptr;
  ZF_RETURN_IF_ERROR(ConstraintMask(&allow));
  const float* logits = speculation_.logits();
  const int32_t t = device_greedy_ && session_.has_argmax()
                        ? session_.last_argmax()
                        : sampler_.Sample(logits, history_.data(), history_.size(), allow);
  // An end token the constraint allows means the text is complete (ignore_eos or not).
  if ((!options_.ignore_eos || constraint_ != nullptr) && session_.model().tokenizer().IsEndOfGeneration(t)) {
    End(StopReason::kEos, false);
    return Status::Ok();
  }
  ZF_RETURN_IF_ERROR(FollowConstraint(t));
  if (options_.n_logprobs > 0) {
    AppendLogprobs(logits, session_.model().desc().n_vocab, t, options_.n_logprobs, &logprobs_);
  }
  speculation_.Sampled(t);  // t keeps an open draft's row, or settles the draft
  CountSpeculation();
  Show(t, ready);
  return Status::Ok();
}

Status Generate(Session& session, std::string_view prompt, const GenerateOptions& o, StreamFn stream, void* stream_ctx,
                GenerateResult* result) {
  *result = GenerateResult();
  std::unique_ptr<Generation> g;
  ZF_RETURN_IF_ERROR(Generation::Begin(session, prompt, o, &g));
  std::string piece;
  int32_t token = -1;
  bool done = false;
  for (;;) {
    Status s = g->Next(&piece, &token, &done);
    if (!s.ok()) return s;
    if (done) break;
    if (stream != nullptr && stream(stream_ctx, piece, token)) g->Stop();
  }
  *result = g->result();
  return Status::Ok();
}

}  // namespace zf::rt

// The generation step machine: prefill, then sample -> piece -> decode one token at a time.
// Generate() (push, callback) and the C API's zf_generation (pull) both run this one loop.
#include "runtime/generator.h"

#include "common/switches.h"
#include "runtime/batcher.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace zf::rt {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Generation::BusyDraft Generation::ReadBusyDraft() {
  const char* v = env::BatchDraft();
  if (v == nullptr) return BusyDraft::kCost;
  const std::string s(v);
  return s == "always" ? BusyDraft::kAlways : s == "never" ? BusyDraft::kNever : BusyDraft::kCost;
}

Generation::Generation(Session& session, const GenerateOptions& options)
    : session_(session),
      options_(options),
      sampler_(options.sampler, session.model().desc().n_vocab),
      text_(options.stop),
      draft_len_(options.draft),
      busy_draft_(ReadBusyDraft()),
      draft_session_(options.draft_session != nullptr ? options.draft_session : session.draft()) {
  // What the session was wired with (ServedModel::CreateSession, zf_session_set_draft_model),
  // unless the options say otherwise.
  if (options_.draft_session == nullptr) options_.draft_session = session.draft();
  if (options_.shown_control_tokens == nullptr) options_.shown_control_tokens = session.shown_tokens();
  emit_.reserve(256);
}

Status Generation::Eval(const int32_t* tokens, size_t n) {
  return device_greedy_ ? session_.EvalKeepArgmax(tokens, n) : session_.EvalKeepLogits(tokens, n);
}

const float* Generation::CurrentLogits() const {
  return spec_ ? spec_logits_.data() + size_t(spec_pos_) * size_t(session_.model().desc().n_vocab)
               : session_.last_logits();
}

Status Generation::EvalWithDraft(bool* drafted) {
  *drafted = false;
  const DraftOptions& d = options_.draft;
  int32_t k = draft_len_.Next();
  // A draft model that failed (draft_session_ dropped) ends drafting; no lookup in its place.
  if (k <= 0 || !session_.can_verify() ||
      (options_.draft_session != nullptr && draft_session_ == nullptr)) {
    return Status::Ok();
  }
  // A draft model drafts at every step: time one plain step first, or its cost is never weighed.
  if (draft_session_ != nullptr && !draft_len_.has_step_time()) return Status::Ok();
  k = std::min({k, Session::kMaxVerify - 1, session_.n_ctx() - session_.n_past() - 1});
  if (options_.max_tokens >= 0) k = std::min(k, options_.max_tokens - result_.n_generated);
  if (const Batcher* b = session_.batcher(); b != nullptr && b->last_rows() > 1 && k > 0) {
    // Other sequences share the steps: the draft's rows must pay for their time too. Unknown
    // (every step the same size so far): no draft, as where the step is compute-bound.
    double t0 = 0.0, t1 = 0.0;
    if (busy_draft_ == BusyDraft::kNever) {
      k = 0;
    } else if (busy_draft_ == BusyDraft::kCost) {
      k = b->StepCost(&t0, &t1) ? BatchedDraftLength(k, d.min, draft_len_.acceptance(), b->last_rows(), t0, t1) : 0;
    }
  }
  if (k < std::max(1, d.min)) return Status::Ok();
  spec_tokens_.resize(size_t(k) + 1);
  const auto t0 = std::chrono::steady_clock::now();
  int32_t n = 0;
  if (draft_session_ != nullptr) {
    // A draft model that fails (a token outside its vocabulary, its context) only ends drafting.
    if (!ModelDraft(*draft_session_, history_.data(), history_.size(), k, session_.model().desc().n_vocab,
                    spec_tokens_.data() + 1, &n)
             .ok()) {
      draft_session_ = nullptr;
      return Status::Ok();
    }
  } else {
    n = LookupDraft(history_.data(), history_.size(), d, k, spec_tokens_.data() + 1);
  }
  if (n < std::max(1, d.min)) return Status::Ok();
  spec_tokens_.resize(size_t(n) + 1);
  spec_tokens_[0] = last_token_;
  spec_logits_.resize(spec_tokens_.size() * size_t(session_.model().desc().n_vocab));
  spec_base_ = session_.n_past();
  ZF_RETURN_IF_ERROR(session_.EvalEvery(spec_tokens_.data(), spec_tokens_.size(), spec_logits_.data()));
  spec_ms_ = MsSince(t0);
  spec_ = true;
  spec_pos_ = 0;
  result_.n_drafted += n;
  *drafted = true;
  return Status::Ok();
}

void Generation::Settle() {
  if (!spec_) return;
  const int32_t proposed = int32_t(spec_tokens_.size()) - 1;
  const int32_t accepted = std::min(proposed, spec_pos_ + (last_in_kv_ ? 1 : 0));
  draft_len_.Report(proposed, accepted, spec_ms_);
  result_.n_accepted += accepted;
  // Keep last_token_'s predecessors: the current row's position is the session's last.
  const size_t keep = size_t(spec_base_) + size_t(spec_pos_) + 1;
  const float* row = CurrentLogits();
  spec_ = false;
  last_in_kv_ = false;
  if (session_.Truncate(keep).ok()) session_.SetLastLogits(row);
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
    ZF_RETURN_IF_ERROR(Constraint::Create(session.model(), o.constraint_kind, o.constraint, &constraint));
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
  // The draft model reads the prompt with the target's prefill: the first draft costs one step.
  if (g->draft_session_ != nullptr && (o.draft.max <= 0 || !session.can_verify() ||
                                       !SyncDraft(*g->draft_session_, g->history_.data(), g->history_.size()).ok())) {
    g->draft_session_ = nullptr;
  }
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
  // A piece takes the log-probabilities of every token sampled since the previous one.
  const auto deliver_logprobs = [&] {
    if (options_.n_logprobs <= 0) return;
    session_.piece_logprobs().swap(logprobs_);
    logprobs_.clear();
  };
  const auto t0 = std::chrono::steady_clock::now();
  struct AddTime {
    double* ms;
    std::chrono::steady_clock::time_point t0;
    ~AddTime() { *ms += MsSince(t0); }
  } add_time{&result_.decode_ms, t0};
  const tok::Tokenizer& tok = session_.model().tokenizer();
  const GenerateOptions& o = options_;
  for (;;) {
    switch (phase_) {
      case Phase::kDone:
        *done = true;
        return Status::Ok();
      case Phase::kTail:
        emit_.clear();
        text_.Finish(&emit_);
        phase_ = Phase::kDone;
        if (!emit_.empty()) {
          piece->swap(emit_);
          *token = last_token_;
          deliver_logprobs();
          return Status::Ok();
        }
        continue;
      case Phase::kAfterPiece: {  // last_token_ was shown (or held back): stop here or evaluate it
        // Every stop below leaves last_token_ shown but not evaluated: an accepted draft's row
        // is dropped first (Settle keeps what precedes it).
        if (hit_stop_ || session_.n_past() + 1 > session_.n_ctx() ||
            (constraint_ != nullptr && constraint_->IsStopped()) ||
            (o.max_tokens >= 0 && result_.n_generated >= o.max_tokens)) {
          Settle();
        }
        if (hit_stop_) {
          session_.Defer(last_token_);
          End(StopReason::kStopString, true);
          continue;
        }
        if (session_.n_past() + 1 > session_.n_ctx()) {  // not deferred: no room to ever evaluate it
          End(StopReason::kContextFull, false);
          continue;
        }
        if (constraint_ != nullptr && armed_ && constraint_->IsStopped()) {  // complete: nothing may follow
          session_.Defer(last_token_);
          End(StopReason::kEos, false);
          continue;
        }
        if (o.max_tokens >= 0 && result_.n_generated >= o.max_tokens) {
          session_.Defer(last_token_);  // shown but not evaluated: evaluated by the next call
          End(StopReason::kMaxTokens, false);
          continue;
        }
        if (last_in_kv_) {  // an accepted draft: its row is in the cache, its logits next in line
          last_in_kv_ = false;
          ++spec_pos_;
          phase_ = Phase::kSample;
          continue;
        }
        bool drafted = false;
        Status s = EvalWithDraft(&drafted);
        if (s.ok() && !drafted) {
          const auto ts = std::chrono::steady_clock::now();
          s = Eval(&last_token_, 1);
          draft_len_.Step(MsSince(ts));
        }
        if (s.code() == Code::kCancelled) {
          session_.Defer(last_token_);
          End(StopReason::kCancelled, false);
          continue;
        }
        if (!s.ok()) {
          phase_ = Phase::kDone;
          return s;
        }
        phase_ = Phase::kSample;
        continue;
      }
      case Phase::kSample: {
        if (o.max_tokens >= 0 && result_.n_generated >= o.max_tokens) {
          End(StopReason::kMaxTokens, false);
          continue;
        }
        if (session_.ConsumeCancel()) {
          End(StopReason::kCancelled, false);
          continue;
        }
        const uint32_t* allow = nullptr;
        if (constraint_ != nullptr && armed_) {
          if (constraint_->IsStopped()) {
            End(StopReason::kEos, false);
            continue;
          }
          Status s = constraint_->ComputeMask();
          result_.constraint_mask_ms = constraint_->mask_ms();
          result_.constraint_masks = constraint_->n_masks();
          if (!s.ok()) {
            phase_ = Phase::kDone;
            return s;
          }
          allow = constraint_->mask();
        }
        const float* logits = CurrentLogits();
        const int32_t t = device_greedy_ && session_.has_argmax()
                              ? session_.last_argmax()
                              : sampler_.Sample(logits, history_.data(), history_.size(), allow);
        // An end token the constraint allows means the text is complete (ignore_eos or not).
        if ((!o.ignore_eos || constraint_ != nullptr) && tok.IsEndOfGeneration(t)) {
          End(StopReason::kEos, false);
          continue;
        }
        if (constraint_ != nullptr && armed_) {
          Status s = constraint_->Commit(t);
          if (!s.ok()) {
            phase_ = Phase::kDone;
            return s;
          }
        } else if (constraint_ != nullptr) {
          // A lazy constraint: armed once its trigger appears, fed the output from there. A control
          // token's text counts (Llama's <|python_tag|> is one token): a trigger that starts at one
          // is fed as that token, which the grammar references by id.
          const size_t from = generated_.size() > o.constraint_trigger.size() ? generated_.size() - o.constraint_trigger.size() : 0;
          const size_t piece_at = generated_.size();
          generated_ += tok.TokenToPiece(t, true);
          const size_t at = generated_.find(o.constraint_trigger, from);
          if (at != std::string::npos) {
            armed_ = true;
            const bool fed = at == piece_at && tok.IsControl(t)
                                 ? constraint_->ComputeMask().ok() && constraint_->Commit(t).ok()
                                 : constraint_->Feed(std::string_view(generated_).substr(at)).ok();
            if (!fed) constraint_.reset();
            generated_.clear();
          }
        }
        if (o.n_logprobs > 0) {
          AppendLogprobs(logits, session_.model().desc().n_vocab, t, o.n_logprobs, &logprobs_);
        }
        if (spec_) {  // t is the draft's next token: keep its row; anything else ends the draft
          const size_t next = size_t(spec_pos_) + 1;
          if (next < spec_tokens_.size() && t == spec_tokens_[next]) {
            last_in_kv_ = true;
          } else {
            Settle();
          }
        }
        ++result_.n_generated;
        history_.push_back(t);
        last_token_ = t;
        emit_.clear();
        // Control tokens stay out of the text, but the chat markers and those an armed constraint
        // let through (its grammar named them: a call format's markers): the parser reads them.
        const bool show = (constraint_ != nullptr && armed_) ||
                          (o.shown_control_tokens != nullptr &&
                           std::binary_search(o.shown_control_tokens->begin(), o.shown_control_tokens->end(), t));
        hit_stop_ = text_.Push(tok.TokenToPiece(t, show), &emit_);
        phase_ = Phase::kAfterPiece;
        if (!emit_.empty()) {
          piece->swap(emit_);
          *token = t;
          deliver_logprobs();
          return Status::Ok();
        }
        continue;
      }
    }
  }
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

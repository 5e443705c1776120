// Prompt-lookup and draft-model drafting, the adaptive draft length, and a generation's
// speculation (draft, verify, keep what the sampled tokens accept).
#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/switches.h"
#include "runtime/batcher.h"

namespace zf::rt {
namespace {

constexpr double kDecay = 0.7;        // weight of the past in the acceptance counts
constexpr double kWorthIt = 1.1;      // least expected speed-up worth drafting for
constexpr double kProbeAcceptance = 0.6;

}  // namespace

int32_t LookupDraft(const int32_t* seq, size_t n, const DraftOptions& o, int32_t max, int32_t* out) {
  if (max <= 0) return 0;
  for (int32_t m = o.ngram_max; m >= std::max(1, o.ngram_min); --m) {
    if (size_t(m) >= n) continue;
    const int32_t* tail = seq + n - size_t(m);
    // The latest earlier occurrence: the nearest context is the likeliest to repeat.
    for (size_t start = n - size_t(m); start-- > 0;) {
      if (!std::equal(tail, tail + m, seq + start)) continue;
      const size_t from = start + size_t(m);
      int32_t k = int32_t(std::min<size_t>(size_t(max), n - from));
      // Never an image position's entry (negative, Session::EmbeddingToken) as a draft token.
      k = int32_t(std::find_if(seq + from, seq + from + k, [](int32_t t) { return t < 0; }) - (seq + from));
      std::copy(seq + from, seq + from + k, out);
      return k;
    }
  }
  return 0;
}

Status CheckDraftVocabulary(const model::Model& target, const model::Model& draft) {
  const tok::Tokenizer& t = target.tokenizer();
  const tok::Tokenizer& d = draft.tokenizer();
  std::string_view view_t, view_d;
  (void)target.file().GetString("tokenizer.ggml.model", &view_t);
  (void)draft.file().GetString("tokenizer.ggml.model", &view_d);
  const std::string kind_t(view_t), kind_d(view_d);
  const std::string prefix = "draft model vocabulary does not match the target's: ";
  if (kind_t != kind_d) {
    return InvalidArgument(prefix + "tokenizer \"" + kind_d + "\" (draft) vs \"" + kind_t + "\" (target)");
  }
  if (t.add_bos() != d.add_bos() || (t.add_bos() && t.bos() != d.bos())) {
    return InvalidArgument(prefix + "BOS " + (d.add_bos() ? std::to_string(d.bos()) : "not added") + " (draft) vs " +
                           (t.add_bos() ? std::to_string(t.bos()) : "not added") + " (target)");
  }
  if (t.add_eos() != d.add_eos() || (t.add_eos() && t.eos() != d.eos())) {
    return InvalidArgument(prefix + "EOS " + (d.add_eos() ? std::to_string(d.eos()) : "not added") + " (draft) vs " +
                           (t.add_eos() ? std::to_string(t.eos()) : "not added") + " (target)");
  }
  const int32_t nt = t.n_vocab(), nd = d.n_vocab();
  if (std::abs(nt - nd) > kMaxVocabDifference) {
    return InvalidArgument(prefix + std::to_string(nd) + " tokens (draft) vs " + std::to_string(nt) +
                           " (target), a difference of " + std::to_string(std::abs(nt - nd)) + " (at most " +
                           std::to_string(kMaxVocabDifference) + ")");
  }
  for (int32_t id = kVocabCheckFrom; id < std::min(nt, nd); ++id) {
    if (t.TokenText(id) != d.TokenText(id)) {
      return InvalidArgument(prefix + "token " + std::to_string(id) + " is \"" + d.TokenText(id) + "\" (draft) vs \"" +
                             t.TokenText(id) + "\" (target)");
    }
  }
  return Status::Ok();
}

namespace {

// Rolls the draft session back to its longest common prefix with seq[0..n) but at most `limit`
// tokens; returns how many it kept.
size_t KeepCommonPrefix(Session& draft, const int32_t* seq, size_t n, size_t limit) {
  const std::vector<int32_t>& h = draft.history();
  size_t keep = 0;
  const size_t most = std::min({h.size(), n, limit});
  while (keep < most && h[keep] == seq[keep]) ++keep;
  if (keep < h.size() || !draft.deferred().empty()) (void)draft.Truncate(keep);
  return keep;
}

}  // namespace

Status SyncDraft(Session& draft, const int32_t* seq, size_t n) {
  const size_t keep = KeepCommonPrefix(draft, seq, n, n);
  return keep < n ? draft.Eval(seq + keep, n - keep, nullptr) : Status::Ok();
}

Status ModelDraft(Session& draft, const int32_t* seq, size_t n, int32_t max, int32_t n_vocab, int32_t* out,
                  int32_t* n_out) {
  *n_out = 0;
  if (max <= 0 || n == 0) return Status::Ok();
  // The last token is evaluated again when the session already holds all of seq: its argmax
  // is needed and was not kept.
  const size_t keep = KeepCommonPrefix(draft, seq, n, n - 1);
  ZF_RETURN_IF_ERROR(draft.EvalKeepArgmax(seq + keep, n - keep));
  for (int32_t i = 0;;) {
    const int32_t next = draft.last_argmax();
    if (next < 0 || next >= n_vocab) return Status::Ok();
    out[i++] = next;
    *n_out = i;
    if (i == max) return Status::Ok();
    ZF_RETURN_IF_ERROR(draft.EvalKeepArgmax(&next, 1));
  }
}

DraftLength::DraftLength(const DraftOptions& o) : o_(o) { Choose(); }

int32_t BatchedDraftLength(int32_t k_max, int32_t k_min, double p, int32_t rows, double t0, double t1) {
  if (rows < 1 || t0 < 0.0 || t1 <= 0.0) return 0;
  const double plain = double(rows) / (t0 + t1 * rows);
  double best_gain = 0.0, extra = 0.0, pk = 1.0;
  int32_t best = 0;
  for (int32_t k = 1; k <= k_max; ++k) {
    pk *= p;
    extra += pk;
    const double gain = (rows + extra) / (t0 + t1 * (rows + k)) / plain;
    if (k >= std::max(1, k_min) && gain > best_gain) {
      best_gain = gain;
      best = k;
    }
  }
  return best_gain >= kWorthIt ? best : 0;
}

void DraftLength::Choose() {
  best_ = 0;
  if (o_.max <= 0) return;
  double best_ratio = 0.0, tokens = 1.0, pk = 1.0;
  for (int32_t k = 1; k <= o_.max; ++k) {
    pk *= p_;
    tokens += pk;  // E(k)
    const double ratio = tokens / (1.0 + beta_ * k);
    if (k >= std::max(1, o_.min) && ratio > best_ratio) {
      best_ratio = ratio;
      best_ = k;
    }
  }
  if (best_ratio < kWorthIt) {
    best_ = 0;
    paused_ = kPauseTokens;
    // After the pause, probe again as if drafts had a fair chance.
    p_ = std::max(p_, kProbeAcceptance);
    kept_ = failed_ = 0.0;
  }
}

void DraftLength::Report(int32_t proposed, int32_t accepted, double verify_ms) {
  if (proposed <= 0) return;
  kept_ = kDecay * kept_ + accepted;
  failed_ = kDecay * failed_ + (accepted < proposed ? 1.0 : 0.0);
  p_ = (kept_ + 0.5) / (kept_ + failed_ + 1.0);  // a kept token is a success, a rejection a failure
  if (step_ms_ > 0.0) {
    const double seen = (verify_ms / step_ms_ - 1.0) / proposed;
    beta_ = std::min(2.0, std::max(0.02, 0.7 * beta_ + 0.3 * seen));
  }
  Choose();
}

void DraftLength::Step(double step_ms) {
  step_ms_ = step_ms_ == 0.0 ? step_ms : 0.8 * step_ms_ + 0.2 * step_ms;
  if (paused_ > 0 && --paused_ == 0) Choose();
}

Speculation::BusyDraft Speculation::ReadBusyDraft() {
  const char* v = env::BatchDraft();
  if (v == nullptr) return BusyDraft::kCost;
  const std::string s(v);
  return s == "always" ? BusyDraft::kAlways : s == "never" ? BusyDraft::kNever : BusyDraft::kCost;
}

Speculation::Speculation(Session& session, const DraftOptions& options, Session* draft_session)
    : session_(session),
      options_(options),
      model_drafts_(draft_session != nullptr),
      draft_session_(draft_session),
      length_(options),
      busy_draft_(ReadBusyDraft()) {}

void Speculation::Start(const int32_t* history, size_t n) {
  if (draft_session_ != nullptr &&
      (options_.max <= 0 || !session_.can_verify() || !SyncDraft(*draft_session_, history, n).ok())) {
    draft_session_ = nullptr;
  }
}

const float* Speculation::logits() const {
  return open_ ? logits_.data() + size_t(pos_) * size_t(session_.model().desc().n_vocab) : session_.last_logits();
}

void Speculation::Sampled(int32_t token) {
  if (!open_) return;
  const size_t next = size_t(pos_) + 1;
  if (next < tokens_.size() && token == tokens_[next]) {
    next_in_kv_ = true;
  } else {
    Settle();
  }
}

Status Speculation::Advance(int32_t token, const int32_t* history, size_t n, int32_t max_new, bool* evaluated) {
  if (next_in_kv_) {  // an accepted draft: its row is in the cache, its logits next in line
    next_in_kv_ = false;
    ++pos_;
    *evaluated = true;
    return Status::Ok();
  }
  *evaluated = false;
  const int32_t k = DraftBudget(max_new);
  return k > 0 ? Verify(token, history, n, k, evaluated) : Status::Ok();
}

int32_t Speculation::DraftBudget(int32_t max_new) const {
  int32_t k = length_.Next();
  // A draft model that failed (draft_session_ dropped) ends drafting; no lookup in its place.
  if (k <= 0 || !session_.can_verify() || (model_drafts_ && draft_session_ == nullptr)) return 0;
  // A draft model drafts at every step: time one plain step first, or its cost is never weighed.
  if (draft_session_ != nullptr && !length_.has_step_time()) return 0;
  k = std::min({k, Session::kMaxVerify - 1, session_.n_ctx() - session_.n_past() - 1});
  if (max_new >= 0) k = std::min(k, max_new);
  if (const Batcher* b = session_.batcher(); b != nullptr && b->last_rows() > 1 && k > 0) {
    // Other sequences share the steps: the draft's rows must pay for their time too. Unknown
    // (every step the same size so far): no draft, as where the step is compute-bound.
    double t0 = 0.0, t1 = 0.0;
    if (busy_draft_ == BusyDraft::kNever) {
      k = 0;
    } else if (busy_draft_ == BusyDraft::kCost) {
      k = b->StepCost(&t0, &t1) ? BatchedDraftLength(k, options_.min, length_.acceptance(), b->last_rows(), t0, t1) : 0;
    }
  }
  return k < std::max(1, options_.min) ? 0 : k;
}

Status Speculation::Verify(int32_t token, const int32_t* history, size_t n, int32_t k, bool* drafted) {
  tokens_.resize(size_t(k) + 1);
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t n_vocab = session_.model().desc().n_vocab;
  int32_t found = 0;
  if (draft_session_ != nullptr) {
    // A draft model that fails (a token outside its vocabulary, its context) only ends drafting.
    if (!ModelDraft(*draft_session_, history, n, k, n_vocab, tokens_.data() + 1, &found).ok()) {
      draft_session_ = nullptr;
      return Status::Ok();
    }
  } else {
    found = LookupDraft(history, n, options_, k, tokens_.data() + 1);
  }
  if (found < std::max(1, options_.min)) return Status::Ok();
  tokens_.resize(size_t(found) + 1);
  tokens_[0] = token;
  logits_.resize(tokens_.size() * size_t(n_vocab));
  base_ = session_.n_past();
  ZF_RETURN_IF_ERROR(session_.EvalEvery(tokens_.data(), tokens_.size(), logits_.data()));
  verify_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  open_ = true;
  pos_ = 0;
  n_drafted_ += found;
  *drafted = true;
  return Status::Ok();
}

void Speculation::Settle() {
  if (!open_) return;
  const int32_t proposed = int32_t(tokens_.size()) - 1;
  const int32_t accepted = std::min(proposed, pos_ + (next_in_kv_ ? 1 : 0));
  length_.Report(proposed, accepted, verify_ms_);
  n_accepted_ += accepted;
  // Keep the current token's predecessors: the current row's position is the session's last.
  const size_t keep = size_t(base_) + size_t(pos_) + 1;
  const float* row = logits();
  open_ = false;
  next_in_kv_ = false;
  if (session_.Truncate(keep).ok()) session_.SetLastLogits(row);
}

}  // namespace zf::rt

// Prompt-lookup drafting and the adaptive draft length.
#include "runtime/speculative.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

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
      const int32_t k = int32_t(std::min<size_t>(size_t(max), n - from));
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

}  // namespace zf::rt

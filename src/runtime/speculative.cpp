// Prompt-lookup drafting and the adaptive draft length.
#include "runtime/speculative.h"

#include <algorithm>

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

DraftLength::DraftLength(const DraftOptions& o) : o_(o) { Choose(); }

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

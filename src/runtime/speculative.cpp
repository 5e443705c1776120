// Prompt-lookup drafting and the adaptive draft length.
#include "runtime/speculative.h"

#include <algorithm>

namespace zf::rt {
namespace {

constexpr float kRateDecay = 0.8f;   // weight of the past in the acceptance average
constexpr float kPauseBelow = 0.2f;  // an average acceptance below this pauses drafting...
constexpr int32_t kPauseTokens = 32; // ...for this many tokens
constexpr int32_t kWarmRounds = 4;   // rounds before the average is trusted

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

DraftLength::DraftLength(const DraftOptions& o) : o_(o), len_(std::min(o.max, std::max(o.min, 4))) {}

int32_t DraftLength::Next() const { return o_.max <= 0 || paused_ > 0 ? 0 : len_; }

void DraftLength::Report(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  rate_ = kRateDecay * rate_ + (1.0f - kRateDecay) * float(accepted) / float(proposed);
  ++rounds_;
  len_ = accepted == proposed ? std::min(o_.max, len_ + 2) : std::max(std::max(1, o_.min), accepted + 1);
  if (rounds_ >= kWarmRounds && rate_ < kPauseBelow) {
    paused_ = kPauseTokens;
    rate_ = 0.5f;  // a fresh start after the pause
    rounds_ = 0;
  }
}

void DraftLength::Step() {
  if (paused_ > 0) --paused_;
}

}  // namespace zf::rt

// Sampling chain. Filters work on a candidate list; greedy is one argmax pass and top-k keeps a
// k-element heap in one pass, so a 262k vocabulary costs about one read of the logits.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace zf::rt {

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : p_(params), n_vocab_(n_vocab), state_(params.seed) {
  cand_.resize(size_t(n_vocab));
  probs_.resize(size_t(n_vocab));
  seen_.assign(size_t(n_vocab), 0);
}

void AppendLogprobs(const float* logits, int32_t n_vocab, int32_t chosen, int32_t k,
                    std::vector<TokenLogprob>* out) {
  const size_t n = size_t(n_vocab);
  const auto value = [&](size_t i) { return std::isnan(logits[i]) ? -INFINITY : logits[i]; };
  const size_t kk = std::min(size_t(k < 0 ? 0 : k), n);
  // Max, the top kk (sorted descending, ties to the lower id: a later equal logit never
  // displaces an earlier one), then the log of the partition function in double.
  const size_t base = out->size();
  out->resize(base + 1 + kk);
  TokenLogprob* top = out->data() + base + 1;
  size_t filled = 0;
  float mx = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    const float l = value(i);
    if (l > mx) mx = l;
    if (kk == 0 || (filled == kk && !(l > top[kk - 1].logprob))) continue;
    size_t j = filled < kk ? filled++ : kk - 1;
    while (j > 0 && l > top[j - 1].logprob) {
      top[j] = top[j - 1];
      --j;
    }
    top[j] = {int32_t(i), l};
  }
  double sum = 0;
  if (mx > -INFINITY) {
    for (size_t i = 0; i < n; ++i) sum += std::exp(double(value(i)) - double(mx));
  }
  const double log_z = mx > -INFINITY ? double(mx) + std::log(sum) : 0.0;
  const auto lp = [&](float l) { return float(double(l) - log_z); };
  (*out)[base] = {chosen, chosen >= 0 && size_t(chosen) < n ? lp(value(size_t(chosen))) : -INFINITY};
  for (size_t j = 0; j < kk; ++j) top[j].logprob = lp(top[j].logprob);
}

void Sampler::Reset(uint64_t seed) { state_ = seed; }

double Sampler::NextUniform() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);  // 53 random bits
}

int32_t Sampler::Sample(const float* logits, const int32_t* history, size_t n_history, const uint32_t* allow) {
  const size_t n = size_t(n_vocab_);
  // Repetition penalty over the distinct tokens of the window: marked in seen_ and applied as the
  // logits are read (no copy of the whole vocabulary).
  const bool penalize = p_.repeat_penalty != 1.0f && p_.repeat_last_n != 0 && n_history > 0;
  const size_t window = !penalize ? 0
                        : p_.repeat_last_n < 0 ? n_history
                                               : std::min(n_history, size_t(p_.repeat_last_n));
  const int32_t* recent = history + (n_history - window);
  for (size_t i = 0; i < window; ++i) {
    if (recent[i] >= 0 && recent[i] < n_vocab_) seen_[size_t(recent[i])] = 1;
  }
  const auto allowed = [&](size_t i) { return ((allow[i >> 5] >> (i & 31)) & 1u) != 0; };
  const auto value = [&](size_t i) {
    float l = logits[i];
    if (std::isnan(l) || (allow != nullptr && !allowed(i))) return -INFINITY;
    if (penalize && seen_[i]) l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    return l;
  };
  const auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  const auto clear_seen = [&] {
    for (size_t i = 0; i < window; ++i) {
      if (recent[i] >= 0 && recent[i] < n_vocab_) seen_[size_t(recent[i])] = 0;
    }
  };

  // With a mask, the first allowed id: what is returned when no allowed token has a finite logit.
  const auto first_allowed = [&]() -> int32_t {
    for (size_t w = 0; w < (n + 31) / 32; ++w) {
      if (allow[w] != 0) {
        const size_t i = w * 32 + size_t(__builtin_ctz(allow[w]));
        if (i < n) return int32_t(i);
      }
    }
    return 0;
  };
  if (p_.temperature <= 0.0f && allow != nullptr) {  // masked greedy: allowed tokens only
    Candidate best{-1, -INFINITY};
    for (size_t w = 0; w < (n + 31) / 32; ++w) {
      for (uint32_t bits = allow[w]; bits != 0; bits &= bits - 1) {
        const size_t i = w * 32 + size_t(__builtin_ctz(bits));
        if (i >= n) break;
        const float l = value(i);
        if (best.id < 0 || l > best.logit) best = {int32_t(i), l};
      }
    }
    clear_seen();
    return best.id >= 0 ? best.id : 0;
  }
  if (p_.temperature <= 0.0f) {  // greedy: one pass, ties to the lowest id
    Candidate best{0, value(0)};
    for (size_t i = 1; i < n; ++i) {
      const float l = value(i);
      if (l > best.logit) best = {int32_t(i), l};
    }
    clear_seen();
    return best.id;
  }

  size_t m = n;
  if (p_.top_k > 0 && size_t(p_.top_k) < n) {
    // One pass keeping the k best in a heap whose top is the worst kept: most tokens are
    // rejected by a single comparison, so a 262k vocabulary costs little more than reading it.
    const size_t k = size_t(p_.top_k);
    for (size_t i = 0; i < k; ++i) cand_[i] = {int32_t(i), value(i)};
    std::make_heap(cand_.begin(), cand_.begin() + long(k), by_logit);
    for (size_t i = k; i < n; ++i) {
      const Candidate c{int32_t(i), value(i)};
      if (by_logit(c, cand_[0])) {
        std::pop_heap(cand_.begin(), cand_.begin() + long(k), by_logit);
        cand_[k - 1] = c;
        std::push_heap(cand_.begin(), cand_.begin() + long(k), by_logit);
      }
    }
    m = k;
  } else {
    for (size_t i = 0; i < n; ++i) cand_[i] = {int32_t(i), value(i)};
  }
  clear_seen();
  std::sort(cand_.begin(), cand_.begin() + long(m), by_logit);
  if (cand_[0].logit == -INFINITY) {  // nothing finite: deterministic fallback
    return allow != nullptr ? first_allowed() : cand_[0].id;
  }

  // Softmax over the survivors (the reference applies top-p/min-p to the untempered distribution).
  const auto softmax = [&](size_t count, float temp) {
    const float mx = cand_[0].logit;
    double sum = 0.0;
    for (size_t i = 0; i < count; ++i) {
      probs_[i] = std::exp((cand_[i].logit - mx) / temp);
      sum += probs_[i];
    }
    for (size_t i = 0; i < count; ++i) probs_[i] = float(probs_[i] / sum);
  };
  softmax(m, 1.0f);
  if (p_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = m;
    for (size_t i = 0; i < m; ++i) {
      cum += probs_[i];
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    m = std::max<size_t>(1, keep);
  }
  if (p_.min_p > 0.0f) {
    // Relative to the most likely token: keep p >= min_p * p_max (logit >= max + ln(min_p)).
    const float threshold = cand_[0].logit + std::log(p_.min_p);
    size_t keep = 1;
    while (keep < m && cand_[keep].logit >= threshold) ++keep;
    m = keep;
  }
  softmax(m, p_.temperature);
  const double r = NextUniform();
  double cum = 0.0;
  for (size_t i = 0; i < m; ++i) {
    cum += probs_[i];
    if (r < cum) return cand_[i].id;
  }
  if (allow != nullptr) {  // rounding left r past the sum: the last candidate that can be drawn
    for (size_t i = m; i-- > 0;) {
      if (probs_[i] > 0.0f) return cand_[i].id;
    }
  }
  return cand_[m - 1].id;
}

}  // namespace zf::rt

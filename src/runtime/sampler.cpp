// Sampling chain. Filters work on a candidate list; top-k uses nth_element so a 262k vocabulary
// costs one linear pass instead of a full sort.
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

void Sampler::Reset(uint64_t seed) { state_ = seed; }

double Sampler::NextUniform() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);  // 53 random bits
}

int32_t Sampler::Sample(const float* logits, const int32_t* history, size_t n_history) {
  const size_t n = size_t(n_vocab_);
  for (size_t i = 0; i < n; ++i) {
    const float l = logits[i];
    cand_[i] = {int32_t(i), std::isnan(l) ? -INFINITY : l};
  }
  // Repetition penalty over the distinct tokens of the window.
  if (p_.repeat_penalty != 1.0f && p_.repeat_last_n != 0 && n_history > 0) {
    const size_t window = p_.repeat_last_n < 0 ? n_history : std::min(n_history, size_t(p_.repeat_last_n));
    const int32_t* start = history + (n_history - window);
    for (size_t i = 0; i < window; ++i) {
      const int32_t t = start[i];
      if (t < 0 || t >= n_vocab_ || seen_[size_t(t)]) continue;
      seen_[size_t(t)] = 1;
      float& l = cand_[size_t(t)].logit;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
    for (size_t i = 0; i < window; ++i) {
      if (start[i] >= 0 && start[i] < n_vocab_) seen_[size_t(start[i])] = 0;
    }
  }
  const auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (p_.temperature <= 0.0f) {
    return std::min_element(cand_.begin(), cand_.end(), by_logit)->id;
  }

  size_t m = n;
  if (p_.top_k > 0 && size_t(p_.top_k) < m) {
    std::nth_element(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    m = size_t(p_.top_k);
  }
  std::sort(cand_.begin(), cand_.begin() + long(m), by_logit);
  if (cand_[0].logit == -INFINITY) return cand_[0].id;  // nothing finite: deterministic fallback

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
  return cand_[m - 1].id;
}

}  // namespace zf::rt

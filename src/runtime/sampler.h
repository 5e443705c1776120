// Token sampler: repetition penalty, top-k, top-p, min-p, temperature, then a seeded draw —
// the reference's default chain order. Greedy (argmax) when temperature <= 0.
// Thread-compatible; Sample() does not allocate (buffers sized at construction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zf::rt {

struct SamplerParams {
  float temperature = 0.8f;
  int32_t top_k = 40;         // <= 0: off
  float top_p = 0.95f;        // >= 1: off
  float min_p = 0.05f;        // <= 0: off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  uint64_t seed = 0;
};

// A token and its log-probability (log-softmax of the raw logits).
struct TokenLogprob {
  int32_t token;
  float logprob;
};

// Most alternatives a caller may ask for per token (OpenAI's top_logprobs limit).
constexpr int32_t kMaxLogprobs = 20;

// Appends the log-probabilities of one position, computed from the raw logits (log-softmax,
// before any sampling transform; NaN counts as -inf): first `chosen`, then the min(k, n_vocab)
// most likely tokens in descending order, ties to the lower id. One pass over the logits plus
// a k-element insertion list; allocates only when *out grows.
void AppendLogprobs(const float* logits, int32_t n_vocab, int32_t chosen, int32_t k,
                    std::vector<TokenLogprob>* out);

class Sampler {
 public:
  Sampler(const SamplerParams& params, int32_t n_vocab);

  // history: every earlier token of the session (prompt and generated); the penalty applies to
  // the distinct tokens among its last repeat_last_n. allow (constrained decoding, may be null):
  // a bit mask over the vocabulary (bit i & 31 of word i / 32); the other tokens count as -inf
  // and are never returned while any token is allowed. Null gives exactly the unmasked chain.
  int32_t Sample(const float* logits, const int32_t* history, size_t n_history, const uint32_t* allow = nullptr);

  void Reset(uint64_t seed);

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  double NextUniform();  // [0, 1) from the raw 64-bit generator output (portable)

  SamplerParams p_;
  int32_t n_vocab_;
  uint64_t state_;  // splitmix64 state: tiny, fast and identical on every platform
  std::vector<Candidate> cand_;
  std::vector<float> probs_;
  std::vector<uint8_t> seen_;  // [n_vocab] marks for the penalty window
};

}  // namespace zf::rt

// Speculative decoding's drafting side: prompt lookup (n-gram) drafts and the adaptive draft
// length. The verification is the generator's (runtime/generator.cpp): the drafted tokens are
// evaluated in one step with every position's logits (Session::EvalEvery, bit for bit the
// one-token logits in exact mode), the sampler draws each next token from those logits exactly
// as it would without drafts, and a drawn token equal to the draft keeps the draft's KV row.
// So the output is token for token the non-speculative output, greedy or sampled with a seed
// (the sampler sees the same logits and consumes its random numbers in the same order).
#pragma once

#include <cstddef>
#include <cstdint>

namespace zf::rt {

struct DraftOptions {
  int32_t max = 0;        // tokens drafted per step at most (0 = off), as llama.cpp's --draft-max
  int32_t min = 1;        // fewer than this found: no speculation this step (--draft-min)
  int32_t ngram_min = 2;  // the shortest suffix looked up
  int32_t ngram_max = 4;  // the longest suffix looked up (tried first)
};

// Prompt lookup: the continuation, up to `max` tokens into out, of the latest earlier
// occurrence in seq[0..n) of seq's last m tokens, m from ngram_max down to ngram_min. Returns
// the number of tokens written (0: no match).
int32_t LookupDraft(const int32_t* seq, size_t n, const DraftOptions& o, int32_t max, int32_t* out);

// The draft length, following the acceptance: longer after a fully accepted draft, cut to what
// was accepted otherwise; paused for a while when drafts keep failing (a rejected draft costs
// its rows in the verification step).
class DraftLength {
 public:
  explicit DraftLength(const DraftOptions& o);
  // Tokens to draft now (0 = do not speculate this step).
  int32_t Next() const;
  // One verification: `proposed` drafted tokens, of which `accepted` were kept.
  void Report(int32_t proposed, int32_t accepted);
  // A token generated without speculation (counts down a pause).
  void Step();

 private:
  DraftOptions o_;
  int32_t len_;
  float rate_ = 1.0f;   // moving average of accepted / proposed
  int32_t rounds_ = 0;
  int32_t paused_ = 0;  // tokens left before drafting again
};

}  // namespace zf::rt

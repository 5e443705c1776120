// Speculative decoding's drafting side: prompt lookup (n-gram) drafts and the adaptive draft
// length. The verification is the generator's (runtime/generator.cpp): the drafted tokens are
// evaluated in one step with every position's logits (Session::EvalEvery, bit for bit the
// one-token logits in exact mode), the sampler draws each next token from those logits exactly
// as it would without drafts, and a drawn token equal to the draft keeps the draft's KV row.
// So the output is token for token the non-speculative output, greedy or sampled with a seed
// (the sampler sees the same logits and consumes its random numbers in the same order).
//
// Draft sources: prompt lookup (LookupDraft) or a draft model (ModelDraft: a second, smaller
// model of the same vocabulary drafting greedily in its own session). A greedy draft is a point
// mass, for which the standard speculative-sampling rule (accept draft token x with probability
// min(1, p(x)/q(x)), else resample from max(0, p - q)) reduces to "sample the target's own
// distribution p at each position and keep the draft while they agree": with q(x) = 1 the
// acceptance probability is p(x), and the residual max(0, p - q) renormalized is p without x.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "model/model.h"
#include "runtime/session.h"

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

// Whether `draft` may draft for `target` (llama.cpp's common/speculative checks): the same
// tokenizer kind (tokenizer.ggml.model), the same BOS and EOS use and ids, vocabulary sizes
// within kMaxVocabDifference of each other and the same token text for every id from
// kVocabCheckFrom up to the smaller size (ids below it are special tokens whose text may differ
// when their roles, checked above, agree). kInvalidArgument naming the first difference.
constexpr int32_t kMaxVocabDifference = 128;
constexpr int32_t kVocabCheckFrom = 5;
Status CheckDraftVocabulary(const model::Model& target, const model::Model& draft);

// A draft model's greedy continuation of seq[0..n), up to `max` tokens into out (*n_out): the
// draft session is first brought to seq (its conversation keeps the prefix it shares with seq,
// the rest is rolled back as zf_session_truncate does, and the missing tokens are evaluated),
// then extended one argmax at a time. A token the target's vocabulary (n_vocab) lacks ends the
// draft. The draft session holds seq and the drafted tokens but the last afterwards.
Status ModelDraft(Session& draft, const int32_t* seq, size_t n, int32_t max, int32_t n_vocab, int32_t* out,
                  int32_t* n_out);
// Brings the draft session to seq[0..n) without drafting (the prompt, evaluated with the
// target's prefill so that the first draft costs one token).
Status SyncDraft(Session& draft, const int32_t* seq, size_t n);

// The draft length, chosen by expected speed-up: a draft of k tokens yields
// E(k) = 1 + p + ... + p^k tokens per verification (p: the estimated chance that a drafted
// token is kept) and costs 1 + beta * k one-token steps (beta: the measured extra cost of a
// verified row; the weights are read once, but each row still costs compute, more so on small
// models). The k maximizing E(k) / (1 + beta k) is drafted; when no k is worth it drafting pauses
// for kPauseTokens plain steps and then probes again.
// Drafting inside a batched decode step (runtime/batcher.h): a verification's k rows join a step
// of `rows` sequences, which then takes t(rows + k) instead of t(rows), t(r) = t0 + t1 r (the
// batcher's measured step cost), and every sequence of the step waits for it; in return this
// sequence gets p + ... + p^k more tokens on average. The k in [k_min, k_max] maximizing the
// step's tokens per second, (rows + p + ... + p^k) / t(rows + k), over those of the step
// without a draft, rows / t(rows), when that gain reaches kWorthIt; else 0. Where the batched
// step is compute-bound (t1 r dominates, as on a CPU of few cores) no k gains: k extra rows cost
// about k sequences' steps and yield fewer than k tokens.
int32_t BatchedDraftLength(int32_t k_max, int32_t k_min, double p, int32_t rows, double t0, double t1);

class DraftLength {
 public:
  static constexpr int32_t kPauseTokens = 32;
  explicit DraftLength(const DraftOptions& o);
  // Tokens to draft now (0 = do not speculate this step).
  int32_t Next() const { return paused_ > 0 ? 0 : best_; }
  // One verification of `proposed` drafted tokens (`accepted` kept) that took verify_ms.
  void Report(int32_t proposed, int32_t accepted, double verify_ms);
  // A one-token step without a draft that took step_ms (counts down a pause).
  void Step(double step_ms);

  // True once a plain step was timed: the row cost (beta) is measured against it, so a draft
  // source that drafts at every step (a draft model) needs one plain step first.
  bool has_step_time() const { return step_ms_ > 0.0; }
  double acceptance() const { return p_; }
  double row_cost() const { return beta_; }

 private:
  void Choose();

  DraftOptions o_;
  double kept_ = 0.0, failed_ = 0.0;  // decayed counts of kept tokens and of rejections
  double p_ = 0.7;                    // optimistic until measured
  double beta_ = 0.3;
  double step_ms_ = 0.0;              // moving average of a one-token step (0 = not yet seen)
  int32_t best_ = 0;
  int32_t paused_ = 0;
};

}  // namespace zf::rt

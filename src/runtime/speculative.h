// Speculative decoding: prompt lookup (n-gram) and draft-model drafts, the adaptive draft
// length, and one generation's speculation (Speculation, driven by runtime/generator.cpp). The
// drafted tokens are evaluated in one step with every position's logits (Session::EvalEvery,
// bit for bit the one-token logits in exact mode), the sampler draws each next token from those
// logits exactly as it would without drafts, and a drawn token equal to the draft keeps the
// draft's KV row.
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
#include <vector>

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

// One generation's speculation: it drafts (prompt lookup or a draft model), verifies the last
// sampled token and the draft in one step (Session::EvalEvery), and keeps the verified rows the
// sampled tokens agree with. The generator samples from logits(), reports each sampled token
// with Sampled(), and brings the session past it with Advance(); a stop ends an open draft with
// Settle(). The session must not be used by anything else meanwhile.
class Speculation {
 public:
  // draft_session: a draft model's session drafting for `session` (null: prompt lookup).
  Speculation(Session& session, const DraftOptions& options, Session* draft_session);

  // After the prefill, history[0..n) the session's tokens: the draft model reads them with the
  // target's prefill (the first draft then costs one step). Drafting off, a session that cannot
  // verify or a draft model that fails: no draft model (and no lookup in its place).
  void Start(const int32_t* history, size_t n);
  // The logits the next token is sampled from: the verified row of the current position while a
  // draft is open, else the session's last.
  const float* logits() const;
  // `token` was sampled: it keeps an open draft's row when it is the draft's next token; any other
  // token settles the draft.
  void Sampled(int32_t token);
  // Brings the session past `token`, the last sampled (history[0..n) ends with it): an accepted
  // draft's row is already in the cache; else token and a new draft (at most max_new tokens;
  // < 0: no limit) are verified when a draft is worth it. *evaluated false: neither; the caller
  // evaluates token alone and reports that step's time with PlainStep().
  Status Advance(int32_t token, const int32_t* history, size_t n, int32_t max_new, bool* evaluated);
  void PlainStep(double ms) { length_.Step(ms); }
  // Ends an open draft: the session keeps the accepted tokens and the current position's logits.
  void Settle();

  int32_t n_drafted() const { return n_drafted_; }    // tokens proposed
  int32_t n_accepted() const { return n_accepted_; }  // of those, kept

 private:
  // ZF_BATCH_DRAFT: whether a session drafts while others share the batcher's steps.
  enum class BusyDraft { kCost, kAlways, kNever };
  static BusyDraft ReadBusyDraft();
  // Tokens worth drafting now (0: none).
  int32_t DraftBudget(int32_t max_new) const;
  // Drafts up to k tokens after `token` and verifies them; *drafted false when none was found.
  Status Verify(int32_t token, const int32_t* history, size_t n, int32_t k, bool* drafted);

  Session& session_;
  DraftOptions options_;
  const bool model_drafts_;  // made with a draft model: drafting ends when it fails
  Session* draft_session_;   // the draft model's session; null for lookup or once it failed
  DraftLength length_;
  BusyDraft busy_draft_;  // read once per generation
  // While open_: the KV cache holds tokens_ (the token before the draft, then the draft) from
  // position base_, logits_ has one row per token, and the tokens up to row pos_ are accepted.
  bool open_ = false;
  bool next_in_kv_ = false;  // the last sampled token is the draft's next one (its row is there)
  int32_t base_ = 0, pos_ = 0;
  double verify_ms_ = 0;  // the draft's and the verification's time (the draft length weighs it)
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
  int32_t n_drafted_ = 0, n_accepted_ = 0;
};

}  // namespace zf::rt

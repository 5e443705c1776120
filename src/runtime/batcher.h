// Batched decode across the sessions of one model (continuous batching).
//
// Why: one decode step of one sequence streams every weight from memory, so on a CPU whose
// single-sequence decode already runs near the memory bandwidth, N users each get 1/N of the
// speed. Here the sessions' evaluations are coalesced instead: one worker thread per model runs
// every step, and a decode step takes the next token of every session waiting for one, so the
// weights are read once for all of them (model::Forward::RunBatch); attention stays per
// sequence, over each session's own KV rows. A prompt (several tokens) is evaluated in chunks
// of kPrefillChunk tokens, and the chunks waiting (up to kPrefillRows rows; several sessions'
// prompts) join the next decode step as sequences of their own, so concurrent prompts share a
// pass over the weights and a long prompt delays the other streams by a chunk at a time instead
// of stopping them. Chunks that cannot join (a recurrent model's, a fast-prefill session's, a long
// verification's) run alone after the step, on a context of the model's pool, as before.
//
// Transparent to callers: Session::Eval hands its steps here and blocks until they are done,
// so zf_generate / zf_session_eval on different sessions from different threads are batched
// and each caller's thread still runs its own sampling and callbacks.
//
// Batch invariance: the worker's decode context (borrowed from the model's ForwardPool for the
// worker's life: exact, sized for RowCapacity() rows of as many sequences) runs with
// SetBatchInvariant(true), so each row of a batched product is computed exactly as a one-token
// product, and a chunk's size depends only
// on its own request: a sequence's tokens do not depend on what else is in the batch.
//
// Thread-safe: any number of sessions' threads may call Decode/Prefill at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "model/forward.h"
#include "model/forward_pool.h"
#include "model/model.h"

namespace zf::rt {

class Batcher {
 public:
  // Most sequences one step may batch (the engine's batched products take up to 64 rows).
  static constexpr int32_t kMaxBatchLimit = 64;
  // Tokens per prefill chunk (a request's chunks depend only on its own length).
  static constexpr int32_t kPrefillChunk = 128;
  // Prefill rows a decode step carries at most (whole chunks, in arrival order).
  static constexpr int32_t kPrefillRows = 2 * kPrefillChunk;

  // max_batch: sequences per decode step (2..kMaxBatchLimit); n_threads: the worker's threads
  // for the products (0 = the model's default). kUnsupported on an engine without batch
  // invariant products (the CUDA engine today).
  static Status Create(const model::Model& model, int32_t max_batch, int32_t n_threads, std::unique_ptr<Batcher>* out);
  ~Batcher();  // finishes the requests in flight, then stops the worker

  int32_t max_batch() const { return max_batch_; }

  // One step of a session's sequence `seq`, run on the worker; blocks until done (each row of a
  // batched step advances its own sequence's KV rows and recurrent state, so recurrent models
  // batch too). Output as model::Forward::Run: the last token's logits into `logits` or their
  // argmax into `argmax`. n == 1 joins the next batched decode step; 1 < n <= kPrefillChunk runs
  // as one prefill chunk between decode steps, on a context of the model's ForwardPool with the
  // worker's threads, exact (batch-invariant) products or not as the session's (`exact`).
  // kOutOfMemory if the worker could not run the step.
  Status Eval(const model::Forward::SeqState& seq, bool exact, const int32_t* tokens, int32_t n,
              int32_t pos0, float* logits, int32_t* argmax);
  // A speculative verification (Session::EvalEvery): n <= kPrefillChunk tokens of one session
  // with every position's logits. Up to Session::kMaxVerify of them (a draft and the token
  // before it) join the next decode step, one row per position (each row's logits are its
  // one-token logits: the step is batch-invariant), so a session verifying drafts holds the
  // others up by its rows only, not by a step of its own; longer ones run between decode steps
  // as a prefill chunk does.
  Status EvalEvery(const model::Forward::SeqState& seq, bool exact, const int32_t* tokens,
                   int32_t n, int32_t pos0, float* logits);
  // The measured time of a decode step of r rows as t0 + t1 r (seconds; a least-squares fit over
  // the recent steps): false until steps of different sizes were seen. The generator weighs a
  // draft's rows with it (rt::BatchedDraftLength).
  bool StepCost(double* t0, double* t1) const;
  // Rows the latest decode step carried (tests, metrics; prefill rows not counted).
  int32_t last_rows() const { return last_rows_.load(std::memory_order_relaxed); }
  // Prefill chunks that ran inside a decode step, and the largest number one step carried
  // (tests, metrics).
  uint64_t merged_chunks() const { return merged_chunks_.load(std::memory_order_relaxed); }
  int32_t max_merged_seen() const { return max_merged_seen_.load(std::memory_order_relaxed); }

  // Steps run and sequences they carried (tests, metrics).
  uint64_t decode_steps() const { return decode_steps_.load(std::memory_order_relaxed); }
  uint64_t decode_rows() const { return decode_rows_.load(std::memory_order_relaxed); }
  // The largest number of sequences one decode step has carried so far.
  int32_t max_rows_seen() const { return max_rows_seen_.load(std::memory_order_relaxed); }

 private:
  struct Request {
    model::Forward::SeqState seq;
    bool exact;  // the session's: a prefill chunk runs on exact (batch-invariant) products
    const int32_t* tokens;
    int32_t n, pos0;
    float* logits;
    int32_t* argmax;
    Status status;
    bool done = false;
    bool every = false;  // EvalEvery: every position's logits
  };
  Batcher(const model::Model& model, int32_t max_batch) : model_(model), max_batch_(max_batch) {}
  void WorkerLoop();
  // A decode step: the batch's rows, then the merged prefill chunks' (each a sequence).
  void RunDecode(std::vector<Request*>& batch, std::vector<Request*>& chunks);
  // Whether a prefill chunk may run inside a decode step (RunBatch gives it the bits of its own
  // exact Run): an exact session's, of an attention-only model, last logit only.
  static bool Mergeable(const Request& r) { return r.exact && !r.every && r.seq.state == nullptr; }
  // Rows of a decode step at most: max_batch one-token requests, or fewer and a verification.
  int32_t RowCapacity() const;
  void RunPrefill(Request& r);

  const model::Model& model_;
  int32_t max_batch_;
  int32_t threads_ = 1;  // the worker's: decode steps and prefill chunks alike
  model::ForwardPool::Lease decode_;  // the batched decode steps' context, held while the worker lives
  std::mutex mu_;
  std::condition_variable work_cv_;  // a request arrived, or stop
  std::condition_variable done_cv_;  // a request finished
  std::deque<Request*> decodes_, prefills_;
  bool stop_ = false;
  std::thread worker_;
  std::vector<int32_t> tokens_;  // the batch's tokens
  std::vector<model::Forward::Seq> seqs_;
  std::atomic<uint64_t> decode_steps_{0}, decode_rows_{0};
  std::atomic<int32_t> max_rows_seen_{0};
  std::atomic<int32_t> last_rows_{0};
  std::atomic<uint64_t> merged_chunks_{0};
  std::atomic<int32_t> max_merged_seen_{0};
  // StepCost's fit: sums over the steps (rows r, seconds d), each step's weight decaying by
  // kCostDecay per later step.
  static constexpr double kCostDecay = 0.98;
  mutable std::mutex cost_mu_;
  double cost_n_ = 0, cost_r_ = 0, cost_rr_ = 0, cost_d_ = 0, cost_rd_ = 0;
};

}  // namespace zf::rt

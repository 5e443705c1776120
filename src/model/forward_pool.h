// The model's forward contexts: a Backend (the engine's compute scratch) and a Forward (the
// activation scratch) each, lent to one step at a time: a session's step of its sequence, the
// batching worker's decode steps (held for the worker's life) and prefill chunks, an embedding
// call's batched steps. A session is sequence state only (KV rows, recurrent state, history):
// with this pool a model's N sessions hold as many contexts as steps ever ran at once
// (`serve --parallel 16`: the batching worker's), not N. Thread-safe. A context goes back to the pool when its Lease ends and stays for reuse,
// unless it has a thread pool of its own (a thread count other than the model's): then it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"

namespace zf::model {

class Model;
class Forward;
struct ForwardContext;

class ForwardPool {
 public:
  // Tokens one step of a lent Forward evaluates at most (a prompt goes in chunks of this size).
  static constexpr int32_t kMaxBatch = 512;

  // What a context is made for: its CPU workers (the model's default count shares the model's
  // thread pool; another count has a pool of its own), exact (batch-invariant) products, and the
  // size of its steps: the tokens one step takes and the sequences one batched step
  // (Forward::RunBatch) carries. A session's step is one sequence of up to kMaxBatch tokens.
  struct Key {
    int32_t n_threads;
    bool exact;
    int32_t max_tokens = kMaxBatch;
    int32_t max_seqs = 1;
    // The attention of a batched step's sequences at once, one per thread of the model's thread
    // pool, each on a one-thread backend of the context's (Forward::SetSequencePool; only with
    // the model's thread count, more than one).
    bool parallel_seqs = false;
  };

  // A context lent to one caller; given back when the Lease is destroyed or reset.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : pool_(o.pool_), ctx_(o.ctx_) { o.pool_ = nullptr, o.ctx_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { reset(); }
    void reset();
    explicit operator bool() const { return ctx_ != nullptr; }
    engine::Backend& backend() const;
    Forward& forward() const;
    // Whether the products are batch-invariant (Key::exact, where the engine can).
    bool exact() const;

   private:
    friend class ForwardPool;
    ForwardPool* pool_ = nullptr;
    ForwardContext* ctx_ = nullptr;
  };

  explicit ForwardPool(const Model& model);
  ~ForwardPool();

  // An idle context for `key`, else a new one: the engine's reason when it cannot run the model
  // (an op it lacks) or kOutOfMemory.
  Status Acquire(const Key& key, Lease* out);

  // Contexts made so far, and how many are lent now (tests, doc/state.md).
  size_t size() const;
  size_t lent() const;

 private:
  void Release(ForwardContext* ctx);

  const Model& model_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ForwardContext>> contexts_;
};

}  // namespace zf::model

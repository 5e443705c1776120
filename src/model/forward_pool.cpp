// ForwardPool: contexts made on demand, lent, and kept for the next step.
#include "model/forward_pool.h"

#include <algorithm>

#include "model/forward.h"
#include "model/model.h"

namespace zf::model {

struct ForwardContext {
  ForwardPool::Key key;
  bool exact = false;
  bool lent = false;
  std::unique_ptr<engine::Backend> backend;
  std::vector<std::unique_ptr<engine::Backend>> seq_workers;  // Key::parallel_seqs
  std::vector<engine::Backend*> seq_worker_ptrs;
  std::unique_ptr<Forward> forward;  // after its backends: destroyed before them
};

ForwardPool::Lease& ForwardPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    reset();
    pool_ = o.pool_, ctx_ = o.ctx_;
    o.pool_ = nullptr, o.ctx_ = nullptr;
  }
  return *this;
}

void ForwardPool::Lease::reset() {
  if (ctx_ != nullptr) pool_->Release(ctx_);
  pool_ = nullptr, ctx_ = nullptr;
}

engine::Backend& ForwardPool::Lease::backend() const { return *ctx_->backend; }
Forward& ForwardPool::Lease::forward() const { return *ctx_->forward; }
bool ForwardPool::Lease::exact() const { return ctx_->exact; }

ForwardPool::ForwardPool(const Model& model) : model_(model) {}
ForwardPool::~ForwardPool() = default;

Status ForwardPool::Acquire(const Key& key, Lease* out) {
  out->reset();
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<ForwardContext>& c : contexts_) {
    if (!c->lent && c->key.n_threads == key.n_threads && c->key.exact == key.exact &&
        c->key.max_tokens == key.max_tokens && c->key.max_seqs == key.max_seqs &&
        c->key.parallel_seqs == key.parallel_seqs) {
      c->lent = true;
      out->pool_ = this, out->ctx_ = c.get();
      return Status::Ok();
    }
  }
  if (model_.engine() == nullptr) return InvalidArgument("the model was loaded without weights");
  std::unique_ptr<ForwardContext> c(new ForwardContext);
  c->key = key;
  ZF_RETURN_IF_ERROR(model_.engine()->CreateBackend(std::min(key.n_threads, 256), &c->backend));
  // An engine without batch-invariant products (CUDA today) evaluates as it can: not exact.
  c->exact = key.exact && c->backend->SetBatchInvariant(true);
  c->forward.reset(new Forward(model_, *c->backend, key.max_tokens, key.max_seqs));
  ZF_RETURN_IF_ERROR(c->forward->status());
  // LoRA rows on the threads the backend's ops use (the model's pool; none for another count).
  if (c->backend->HostActivations()) c->forward->SetLoraPool(model_.engine()->SharedPool(key.n_threads));
  engine::ThreadPool* pool = key.parallel_seqs && key.n_threads > 1 ? model_.engine()->SharedPool(key.n_threads) : nullptr;
  if (pool != nullptr) {
    c->seq_workers.resize(size_t(pool->size()));
    for (std::unique_ptr<engine::Backend>& w : c->seq_workers) {
      ZF_RETURN_IF_ERROR(model_.engine()->CreateBackend(1, &w));
      c->seq_worker_ptrs.push_back(w.get());
    }
    c->forward->SetSequencePool(pool, c->seq_worker_ptrs.data());
  }
  c->lent = true;
  out->pool_ = this, out->ctx_ = c.get();
  contexts_.push_back(std::move(c));
  return Status::Ok();
}

// A context with a thread pool of its own (a thread count other than the model's) is not kept:
// its workers would outlive the session that asked for them.
void ForwardPool::Release(ForwardContext* ctx) {
  std::unique_ptr<ForwardContext> gone;  // destroyed (its workers joined) outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  ctx->lent = false;
  if (ctx->key.n_threads == std::min(model_.default_threads(), 256)) return;
  for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
    if (it->get() == ctx) {
      gone = std::move(*it);
      contexts_.erase(it);
      break;
    }
  }
}

size_t ForwardPool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return contexts_.size();
}

size_t ForwardPool::lent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_t(std::count_if(contexts_.begin(), contexts_.end(), [](const std::unique_ptr<ForwardContext>& c) { return c->lent; }));
}

}  // namespace zf::model

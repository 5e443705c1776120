// The batching worker: decode steps over every waiting session, prefill chunks in between.
#include "runtime/batcher.h"

#include <algorithm>
#include <chrono>
#include <new>

#include "common/log.h"
#include "runtime/session.h"

namespace zf::rt {
namespace {

// After a step, how long the worker waits for the sequences it carried to come back with their
// next token (their threads sample and run callbacks in between) before it runs without the
// late ones. Sampling takes well under a millisecond; a step takes tens.
constexpr auto kGatherWindow = std::chrono::microseconds(2000);

}  // namespace

int32_t Batcher::RowCapacity() const { return max_batch_ + Session::kMaxVerify; }

Status Batcher::Create(const model::Model& model, int32_t max_batch, int32_t n_threads, std::unique_ptr<Batcher>* out) {
  out->reset();
  if (model.vocab_only()) return InvalidArgument("a vocabulary-only model cannot batch decode steps");
  if (!model.desc().has_output_head) return Unsupported("an embedding model has no decode steps to batch");
  if (max_batch < 2 || max_batch > kMaxBatchLimit) {
    return InvalidArgument("max_batch must be between 2 and " + std::to_string(kMaxBatchLimit) + ", got " +
                           std::to_string(max_batch));
  }
  std::unique_ptr<Batcher> b(new Batcher(model, max_batch));
  b->threads_ = std::min(n_threads > 0 ? n_threads : model.default_threads(), 256);
  // Batched steps need host activations and batch-invariant products: the CPU engine's. Asked
  // first, so that no other engine makes a context the pool would keep unused.
  if (model.device() != engine::Device::kCpu) {
    return Unsupported(std::string("the ") + model.engine()->name() + " engine cannot batch decode steps");
  }
  const int32_t rows = b->RowCapacity();
  ZF_RETURN_IF_ERROR(
      model.forwards()->Acquire(model::ForwardPool::Key{b->threads_, true, rows + kPrefillRows, rows}, &b->decode_));
  if (!b->decode_.exact() || !b->decode_.backend().HostActivations()) {
    return Unsupported(std::string("the ") + b->decode_.backend().name() + " engine cannot batch decode steps");
  }
  b->tokens_.reserve(size_t(b->RowCapacity()));
  b->seqs_.reserve(size_t(b->RowCapacity()));
  b->worker_ = std::thread([p = b.get()] { p->WorkerLoop(); });
  *out = std::move(b);
  return Status::Ok();
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Status Batcher::Eval(const model::Forward::SeqState& seq, bool exact, const int32_t* tokens,
                     int32_t n, int32_t pos0, float* logits, int32_t* argmax) {
  if (n < 1 || n > kPrefillChunk) return InvalidArgument("a batched step takes 1.." + std::to_string(kPrefillChunk) + " tokens");
  Request r{seq, exact, tokens, n, pos0, logits, argmax, Status::Ok(), false};
  std::unique_lock<std::mutex> lock(mu_);
  (n == 1 ? decodes_ : prefills_).push_back(&r);
  work_cv_.notify_one();
  done_cv_.wait(lock, [&] { return r.done; });
  return r.status;
}

Status Batcher::EvalEvery(const model::Forward::SeqState& seq, bool exact,
                          const int32_t* tokens, int32_t n, int32_t pos0, float* logits) {
  if (n < 1 || n > kPrefillChunk) return InvalidArgument("a batched step takes 1.." + std::to_string(kPrefillChunk) + " tokens");
  Request r{seq, exact, tokens, n, pos0, logits, nullptr, Status::Ok(), false, true};
  std::unique_lock<std::mutex> lock(mu_);
  (n <= Session::kMaxVerify ? decodes_ : prefills_).push_back(&r);
  work_cv_.notify_one();
  done_cv_.wait(lock, [&] { return r.done; });
  return r.status;
}

void Batcher::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  // The sequences (by KV cache) of the last decode step, expected back: counted by identity, so
  // that a request of another session (a new one, a verification) does not start the step
  // without them.
  std::vector<const engine::KvCache*> expected;
  const auto all_back = [&] {
    for (const engine::KvCache* kv : expected) {
      if (std::none_of(decodes_.begin(), decodes_.end(), [&](const Request* r) { return r->seq.kv == kv; })) return false;
    }
    return true;
  };
  std::vector<Request*> batch, chunks;
  batch.reserve(size_t(max_batch_));
  chunks.reserve(size_t(RowCapacity()));
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !decodes_.empty() || !prefills_.empty(); });
    if (decodes_.empty() && prefills_.empty()) return;  // stop_ with nothing left
    if (!decodes_.empty() && !stop_ && !all_back()) {
      work_cv_.wait_for(lock, kGatherWindow, [&] { return stop_ || all_back(); });
    }
    batch.clear();
    // Requests in arrival order while they fit (a verification that does not waits for the
    // next step, where it comes first).
    for (int32_t rows = 0; !decodes_.empty() && int32_t(batch.size()) < max_batch_ &&
                           rows + decodes_.front()->n <= RowCapacity();) {
      rows += decodes_.front()->n;
      batch.push_back(decodes_.front());
      decodes_.pop_front();
    }
    // Prefill chunks in arrival order: those that may join the step while they fit (rows and
    // sequences), or else the first one alone after it.
    int32_t seqs = 0, prefill_rows = 0;
    for (const Request* r : batch) seqs += r->n;
    chunks.clear();
    Request* prefill = nullptr;
    while (!prefills_.empty()) {
      Request* r = prefills_.front();
      if (!Mergeable(*r)) {
        if (chunks.empty()) prefill = r, prefills_.pop_front();
        break;
      }
      if (prefill_rows + r->n > kPrefillRows || seqs >= RowCapacity()) break;
      chunks.push_back(r);
      prefill_rows += r->n;
      ++seqs;
      prefills_.pop_front();
    }
    expected.clear();
    for (const Request* r : batch) expected.push_back(r->seq.kv);
    lock.unlock();
    if (!batch.empty() || !chunks.empty()) RunDecode(batch, chunks);
    if (prefill != nullptr) RunPrefill(*prefill);
    lock.lock();
    for (Request* r : batch) r->done = true;
    for (Request* r : chunks) r->done = true;
    if (prefill != nullptr) prefill->done = true;
    done_cv_.notify_all();
  }
}

// On a context of the model's pool: the worker runs one chunk at a time, so the sessions of a
// batcher share one context for their prompts.
void Batcher::RunPrefill(Request& r) {
  try {
    model::ForwardPool::Lease ctx;
    r.status = model_.forwards()->Acquire(model::ForwardPool::Key{threads_, r.exact}, &ctx);
    if (!r.status.ok()) return;
    if (r.every) {
      ctx.forward().RunEveryLogit(r.seq, r.tokens, r.n, r.pos0, r.logits);
    } else {
      ctx.forward().Run(r.seq, r.tokens, r.n, r.pos0, r.logits, r.argmax);
    }
    r.status = ctx.backend().TakeError();
  } catch (const std::bad_alloc&) {
    r.status = Status(Code::kOutOfMemory, "out of memory in a prefill chunk");
  }
}

bool Batcher::StepCost(double* t0, double* t1) const {
  std::lock_guard<std::mutex> lock(cost_mu_);
  const double var = cost_n_ * cost_rr_ - cost_r_ * cost_r_;  // n^2 x the variance of the row counts
  if (cost_n_ < 2.0 || var < 0.25 * cost_n_ * cost_n_) return false;  // sizes varied too little (sd < 0.5)
  *t1 = (cost_n_ * cost_rd_ - cost_r_ * cost_d_) / var;
  *t0 = (cost_d_ - *t1 * cost_r_) / cost_n_;
  if (*t0 < 0.0) *t0 = 0.0;
  return *t1 > 0.0;
}

void Batcher::RunDecode(std::vector<Request*>& batch, std::vector<Request*>& chunks) {
  tokens_.clear();
  seqs_.clear();
  const size_t n_vocab = size_t(model_.desc().n_vocab);
  for (Request* r : batch) {
    // A verification's positions are one-row sequences on the same rows (Forward::RunEveryLogit's
    // form): each attends up to its own position and gives its own logits.
    for (int32_t i = 0; i < r->n; ++i) {
      tokens_.push_back(r->tokens[i]);
      seqs_.push_back(model::Forward::Seq{r->seq.kv, r->pos0 + i, 1, r->every ? r->logits + size_t(i) * n_vocab : r->logits,
                                          r->argmax, r->seq.rope_factors, r->seq.state, r->seq.lora, r->seq.rope_shift,
                                          nullptr, r->seq.copies, r->seq.n_copies});
    }
  }
  const int32_t rows = int32_t(seqs_.size());  // the decode rows
  for (Request* r : chunks) {  // a chunk is one sequence of its n rows
    tokens_.insert(tokens_.end(), r->tokens, r->tokens + r->n);
    seqs_.push_back(model::Forward::Seq{r->seq.kv, r->pos0, r->n, r->logits, r->argmax, r->seq.rope_factors,
                                        r->seq.state, r->seq.lora, r->seq.rope_shift, nullptr, r->seq.copies,
                                        r->seq.n_copies});
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    decode_.forward().RunBatch(tokens_.data(), seqs_.data(), int32_t(seqs_.size()));
    const double d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double r = double(rows);
    if (chunks.empty() && rows > 0) {  // StepCost fits decode steps alone
      std::lock_guard<std::mutex> lock(cost_mu_);
      cost_n_ = kCostDecay * cost_n_ + 1.0;
      cost_r_ = kCostDecay * cost_r_ + r;
      cost_rr_ = kCostDecay * cost_rr_ + r * r;
      cost_d_ = kCostDecay * cost_d_ + d;
      cost_rd_ = kCostDecay * cost_rd_ + r * d;
    }
  } catch (const std::bad_alloc&) {
    for (Request* r : batch) r->status = Status(Code::kOutOfMemory, "out of memory in a batched decode step");
    for (Request* r : chunks) r->status = Status(Code::kOutOfMemory, "out of memory in a prefill chunk");
  }
  if (!chunks.empty()) {
    merged_chunks_.fetch_add(chunks.size(), std::memory_order_relaxed);
    if (int32_t(chunks.size()) > max_merged_seen_.load(std::memory_order_relaxed)) {
      max_merged_seen_.store(int32_t(chunks.size()), std::memory_order_relaxed);
    }
  }
  if (rows == 0) return;  // prefill chunks alone: no decode step
  decode_steps_.fetch_add(1, std::memory_order_relaxed);
  decode_rows_.fetch_add(uint64_t(rows), std::memory_order_relaxed);
  last_rows_.store(rows, std::memory_order_relaxed);
  if (rows > max_rows_seen_.load(std::memory_order_relaxed)) max_rows_seen_.store(rows, std::memory_order_relaxed);
}

}  // namespace zf::rt

// Fork-join pool: an epoch counter publishes each task; workers spin ~50 us, then block.
#include "engine/thread_pool.h"

#include <map>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ZF_PAUSE() _mm_pause()
#else
#define ZF_PAUSE() ((void)0)
#endif

namespace zf::engine {

namespace {
// Spins before sleeping: long enough to bridge the gap between two ops of one decode step,
// short enough not to burn a core when the session is idle.
constexpr int kSpinIterations = 20000;
constexpr int kYieldEvery = 256;
// The caller's wait for the workers: ~5 us of spinning covers a balanced op's skew.
constexpr int kCallerSpins = 2000;
}  // namespace

ThreadPool::ThreadPool(int32_t n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int32_t i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    epoch_.fetch_add(1);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Run(TaskFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  TakeTurn();
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // Publish under the mutex so a worker about to sleep cannot miss the new epoch.
    std::lock_guard<std::mutex> lock(mu_);
    epoch_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
  fn(ctx, 0, n_threads_);
  // Spin for the quick case, then yield: when the machine is oversubscribed a worker may be
  // descheduled, and a caller spinning through its whole time slice only delays it further.
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kCallerSpins) {
      ZF_PAUSE();
    } else {
      std::this_thread::yield();
    }
  }
  EndTurn();
}

// Ticket lock: a short spin covers the common case (the other caller's op is a few microseconds),
// then the caller sleeps. turn_waiters_ and serving_ are sequentially consistent, so EndTurn
// either sees a waiter that is about to sleep or the waiter sees the new serving_ value.
void ThreadPool::TakeTurn() {
  const uint64_t ticket = next_ticket_.fetch_add(1);
  for (int i = 0; i < kCallerSpins; ++i) {
    if (serving_.load() == ticket) return;
    ZF_PAUSE();
  }
  std::unique_lock<std::mutex> lock(turn_mu_);
  turn_waiters_.fetch_add(1);
  turn_cv_.wait(lock, [&] { return serving_.load() == ticket; });
  turn_waiters_.fetch_sub(1);
}

void ThreadPool::EndTurn() {
  serving_.fetch_add(1);
  if (turn_waiters_.load() > 0) {
    std::lock_guard<std::mutex> lock(turn_mu_);
    turn_cv_.notify_all();
  }
}

std::shared_ptr<ThreadPool> SharedThreadPool(int32_t n_threads) {
  static std::mutex mu;
  static std::map<int32_t, std::weak_ptr<ThreadPool>>* pools = new std::map<int32_t, std::weak_ptr<ThreadPool>>;  // never destroyed: holders may outlive static destruction
  const int32_t n = n_threads < 1 ? 1 : n_threads;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<ThreadPool> pool = (*pools)[n].lock();
  if (pool == nullptr) {
    pool = std::make_shared<ThreadPool>(n);
    (*pools)[n] = pool;
  }
  return pool;
}

void ThreadPool::WorkerLoop(int32_t ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t e = epoch_.load(std::memory_order_acquire);
    for (int i = 0; e == seen && i < kSpinIterations; ++i) {
      // An occasional yield costs ~1 us when the core is free and hands the core over when it
      // is not (an oversubscribed machine would otherwise starve the thread we wait for).
      if (i % kYieldEvery == kYieldEvery - 1) {
        std::this_thread::yield();
      } else {
        ZF_PAUSE();
      }
      e = epoch_.load(std::memory_order_acquire);
    }
    if (e == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return epoch_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      e = epoch_.load(std::memory_order_acquire);
    }
    seen = e;
    if (stop_.load()) return;
    fn_(ctx_, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace zf::engine

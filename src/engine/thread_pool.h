// Persistent worker pool for the CPU engine: one fork-join Run() per op, workers spin briefly
// between ops (decode issues hundreds of small ops per token) and then sleep.
// One pool serves every session of every model in the process that uses the same thread count
// (SharedThreadPool): Run() is thread-safe and callers on different threads take turns op by op,
// first come first served, so two models' decode steps share the cores instead of
// oversubscribing them and neither starves (the caller's thread is worker 0 of its own op).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace zf::engine {

class ThreadPool {
 public:
  explicit ThreadPool(int32_t n_threads);  // total threads, the caller's included
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t size() const { return n_threads_; }

  // Calls fn(ctx, thread_index, n_threads) on every thread (caller is index 0); returns when all
  // have finished. No allocation. Concurrent callers are serialized (one op at a time) in the
  // order they called. Not reentrant: fn must not call Run on the same pool.
  using TaskFn = void (*)(void* ctx, int32_t ith, int32_t nth);
  void Run(TaskFn fn, void* ctx);

  // Convenience: splits [0, n) into contiguous chunks, calls f(begin, end) per thread.
  // One item (a decode step's single position or group) runs on the caller: the pool would give
  // it to thread 0, the caller, anyway, after a round trip through the workers.
  template <typename F>
  void ParallelFor(int64_t n, F&& f) {
    if (n <= 1) {
      if (n == 1) f(int64_t{0}, int64_t{1});
      return;
    }
    struct Ctx {
      F* f;
      int64_t n;
    } c{&f, n};
    Run(
        [](void* p, int32_t ith, int32_t nth) {
          Ctx* c = static_cast<Ctx*>(p);
          const int64_t chunk = (c->n + nth - 1) / nth;
          const int64_t b = chunk * ith;
          const int64_t e = b + chunk < c->n ? b + chunk : c->n;
          if (b < e) (*c->f)(b, e);
        },
        &c);
  }

  // f(i, thread) for every i in [0, n), the threads (0 .. size() - 1, for per-thread scratch)
  // taking the next index from a shared counter as they finish one: for many equal tasks on a
  // loaded machine, where a thread that loses its core would otherwise hold up the op with the
  // rest of a fixed share.
  template <typename F>
  void ParallelForEach(int64_t n, F&& f) {
    struct Ctx {
      F* f;
      int64_t n;
      std::atomic<int64_t> next{0};
    } c{&f, n};
    Run(
        [](void* p, int32_t ith, int32_t) {
          Ctx* c = static_cast<Ctx*>(p);
          for (int64_t i; (i = c->next.fetch_add(1, std::memory_order_relaxed)) < c->n;) (*c->f)(i, ith);
        },
        &c);
  }

 private:
  void WorkerLoop(int32_t ith);
  void TakeTurn();
  void EndTurn();

  int32_t n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int32_t> pending_{0};
  std::atomic<bool> stop_{false};
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int32_t> sleepers_{0};
  // One Run at a time, in ticket order (a plain mutex lets the thread that just released it take
  // it again at once, so one model's step could starve another's for many ops).
  std::atomic<uint64_t> next_ticket_{0};
  std::atomic<uint64_t> serving_{0};
  std::atomic<int32_t> turn_waiters_{0};
  std::mutex turn_mu_;
  std::condition_variable turn_cv_;
};

// The process's pool of `n_threads` threads, created at the first request and shared by every
// holder until the last one lets it go. Every model (CpuEngine) asks here for its default thread
// count, so a server with several models runs one set of workers.
std::shared_ptr<ThreadPool> SharedThreadPool(int32_t n_threads);

}  // namespace zf::engine

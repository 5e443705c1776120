// How the CPU engine's threads share the work of one parallel region: items claimed one at a
// time with a wait for all of them (ClaimedWork), and per-thread chunk ranges that the owner
// takes from the front and others steal from the back (ClaimFront / ClaimBack).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace zf::engine {
namespace {  // internal linkage: each engine file has its own copy (see packed_layout.h)

// Items [0, n) claimed one at a time by the threads of one parallel region, with a wait that
// ends when every item is done (not when every thread has arrived): a late thread finds the
// items done by the others and moves on, so a phase boundary inside one region costs no wake-up.
class ClaimedWork {
 public:
  explicit ClaimedWork(int64_t n) : n_(n) {}
  // Runs f(i) for the items this thread claims, then waits until all n items are done.
  template <typename F>
  void Work(F&& f) {
    for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n_; i = next_.fetch_add(1, std::memory_order_relaxed)) {
      f(i);
      done_.fetch_add(1, std::memory_order_release);
    }
    for (int spins = 0; done_.load(std::memory_order_acquire) < n_; ++spins) {
      if (spins > 256) std::this_thread::yield();  // the claimant was preempted mid-item
    }
  }

 private:
  const int64_t n_;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> done_{0};
};


// A range of chunk indices [front, back) packed in one word (front in the low 32 bits): the
// owner takes from the front, other threads from the back, each claim one compare-exchange.
inline bool ClaimFront(std::atomic<uint64_t>& r, uint32_t* j) {
  uint64_t v = r.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t f = uint32_t(v), b = uint32_t(v >> 32);
    if (f >= b) return false;
    if (r.compare_exchange_weak(v, v + 1, std::memory_order_relaxed)) {
      *j = f;
      return true;
    }
  }
}
inline bool ClaimBack(std::atomic<uint64_t>& r, uint32_t* j) {
  uint64_t v = r.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t f = uint32_t(v), b = uint32_t(v >> 32);
    if (f >= b) return false;
    if (r.compare_exchange_weak(v, (uint64_t(b - 1) << 32) | f, std::memory_order_relaxed)) {
      *j = b - 1;
      return true;
    }
  }
}


}  // namespace
}  // namespace zf::engine

// The slots: one session each, handed to one request at a time. A request takes the idle slot
// whose conversation shares the longest token prefix with its prompt (prompt caching); when
// none is idle it waits in a bounded queue, beyond which it is turned away (503).
#ifndef ZERFOO_CLI_SERVE_SLOTS_H
#define ZERFOO_CLI_SERVE_SLOTS_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../common.h"
#include "api_error.h"

namespace cli::serve {

struct Slot {
  int id = 0;
  SessionPtr session;
  std::vector<int32_t> history;   // tokens in the KV cache + pending; valid when `known`
  bool known = true;
  std::string chat_key;           // the conversation (messages JSON) a chat turn left in the session
  std::vector<float> lora;        // the LoRA scales the session applies (empty: none)
  bool busy = false;
  uint64_t last_used = 0;         // Acquire() order, for least-recently-used eviction
  std::atomic<int32_t> kv_tokens{0};  // for the KV utilization gauge
  std::atomic<bool> cancel{false};    // set by drain after the grace period
};

// Length of the common prefix of two token sequences.
size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

class SlotPool {
 public:
  explicit SlotPool(int queue_capacity) : queue_(queue_capacity) {}

  // Adds a slot while the model loads (before any Acquire).
  void Add(std::unique_ptr<Slot> slot);

  // The best idle slot for `prompt` (a completion's tokens) or `chat_key` (a chat request's
  // messages JSON: the library reuses what the session holds of the conversation), waiting in
  // the queue if none is idle; nullptr with `*err` (503) when the queue is full or the server
  // drains.
  Slot* Acquire(const std::vector<int32_t>& prompt, const std::string& chat_key, ApiError* err);
  void Release(Slot* s);

  // Drain: no new request gets a slot (queued ones still do).
  void StopAccepting() { draining_ = true; }
  bool draining() const { return draining_; }
  // Grace period over: queued requests give up and running generations are cancelled.
  void CancelAll();

  // Requests waiting and running, and the KV positions the running ones hold.
  struct Load {
    int waiting = 0;
    int running = 0;
    double kv_tokens = 0;
  };
  Load CurrentLoad();
  size_t size() const { return slots_.size(); }

 private:
  const int queue_;
  std::atomic<bool> draining_{false};
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  int running_ = 0;
  bool draining_cancel_ = false;  // grace period over: queued requests give up (under mu_)
  uint64_t use_counter_ = 0;
};

// Gives the slot back when the last owner (the handler, or the streaming response's content
// provider, which httplib destroys with the response) lets go, on every path.
struct SlotLease {
  SlotPool* pool;
  Slot* slot;
  ~SlotLease() { pool->Release(slot); }
};

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_SLOTS_H

// Slot choice (longest shared prefix, then least recently used) and the wait queue.
#include "slots.h"

#include <algorithm>

namespace cli::serve {

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

void SlotPool::Add(std::unique_ptr<Slot> slot) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.push_back(std::move(slot));
}

Slot* SlotPool::Acquire(const std::vector<int32_t>& prompt, const std::string& chat_key, ApiError* err) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [&] {
    for (auto& s : slots_) {
      if (!s->busy) return true;
    }
    return false;
  };
  if (draining_) {
    *err = {503, "server_error", "shutting_down", "the server is shutting down"};
    return nullptr;
  }
  if (!idle()) {
    if (waiting_ >= queue_) {
      *err = {503, "server_error", "server_busy", "all slots are busy and the queue is full; retry later"};
      return nullptr;
    }
    ++waiting_;
    cv_.wait(lock, [&] { return idle() || draining_cancel_; });
    --waiting_;
    if (!idle()) {
      *err = {503, "server_error", "shutting_down", "the server is shutting down"};
      return nullptr;
    }
  }
  // The idle slot whose conversation shares the longest prefix with the prompt (that much is
  // not evaluated again; for chat, the longest prefix of the messages' JSON); on a tie the least
  // recently used.
  Slot* best = nullptr;
  size_t best_len = 0;
  for (auto& s : slots_) {
    if (s->busy) continue;
    size_t len = 0;
    if (!chat_key.empty()) {
      const size_t n = std::min(chat_key.size(), s->chat_key.size());
      while (len < n && chat_key[len] == s->chat_key[len]) ++len;
    } else if (s->known) {
      len = CommonPrefix(s->history, prompt);
    }
    if (best == nullptr || len > best_len || (len == best_len && s->last_used < best->last_used)) {
      best = s.get();
      best_len = len;
    }
  }
  best->busy = true;
  best->last_used = ++use_counter_;
  ++running_;
  return best;
}

void SlotPool::Release(Slot* s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->busy = false;
    --running_;
  }
  cv_.notify_all();
}

void SlotPool::CancelAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_cancel_ = true;
  }
  cv_.notify_all();
  for (auto& s : slots_) {
    s->cancel = true;
    if (s->session) zf_session_cancel(s->session.get());  // embedding models' slots have none
  }
}

SlotPool::Load SlotPool::CurrentLoad() {
  std::lock_guard<std::mutex> lock(mu_);
  Load l;
  l.waiting = waiting_;
  l.running = running_;
  for (auto& s : slots_) {
    if (s->busy) l.kv_tokens += s->kv_tokens.load();
  }
  return l;
}

}  // namespace cli::serve

// The prefix cache's map and LRU list.
#include "runtime/prefix_cache.h"

#include <algorithm>

namespace zf::rt {
namespace {

// splitmix64's finalizer: every input bit affects every output bit.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t PrefixCache::Key(uint64_t prev, const int32_t* tokens) {
  uint64_t h = Mix(prev);
  for (int32_t i = 0; i < kBlockTokens; ++i) h = Mix(h ^ uint32_t(tokens[i]));
  return h;
}

std::shared_ptr<const PrefixCache::Block> PrefixCache::Find(uint64_t key, uint64_t prev, const int32_t* tokens,
                                                            size_t saved) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  const Block& b = *it->second.block;
  if (b.prev != prev || !std::equal(b.tokens.begin(), b.tokens.end(), tokens)) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  stats_.hit_tokens += uint64_t(saved);
  return it->second.block;
}

bool PrefixCache::Contains(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(key) != 0;
}

void PrefixCache::Store(uint64_t key, std::shared_ptr<const Block> block) {
  const uint64_t size = block->bytes();
  std::lock_guard<std::mutex> lock(mu_);
  if (size > capacity_ || map_.count(key) != 0) return;
  while (stats_.bytes + size > capacity_ && !lru_.empty()) {
    auto victim = map_.find(lru_.back());
    stats_.bytes -= victim->second.block->bytes();
    map_.erase(victim);
    lru_.pop_back();
    ++stats_.evicted_blocks;
  }
  lru_.push_front(key);
  map_.emplace(key, Entry{std::move(block), lru_.begin()});
  stats_.bytes += size;
  ++stats_.stored_blocks;
}

PrefixCache::Stats PrefixCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.capacity_bytes = capacity_;
  s.blocks = map_.size();
  return s;
}

}  // namespace zf::rt

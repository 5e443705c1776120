// The prefix cache's map and LRU list.
#include "runtime/prefix_cache.h"

#include <algorithm>

#include "common/switches.h"

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

bool PrefixCache::Store(uint64_t key, std::shared_ptr<const Block> block) {
  const uint64_t size = block->bytes();
  std::lock_guard<std::mutex> lock(mu_);
  if (size > capacity_ || map_.count(key) != 0) return false;
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
  return true;
}

std::shared_ptr<KvArena> PrefixCache::Arena(const std::vector<size_t>& plane_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = arenas_.find(plane_bytes);
  if (it == arenas_.end()) {  // the first block of this shape: made once (null where it cannot be)
    size_t block = 0;
    for (size_t b : plane_bytes) block += b;
    std::shared_ptr<KvArena> arena;
    if (block > 0 && !env::NoSharedKv()) arena = KvArena::Create(plane_bytes, int64_t(capacity_ / block) + kExtraSlots);
    it = arenas_.emplace(plane_bytes, std::move(arena)).first;
  }
  return it->second;
}

PrefixCache::Mapping::Mapping(const PrefixCache& cache, std::shared_ptr<const Block> block)
    : count_(cache.mapped_), block_(std::move(block)) {
  count_->fetch_add(1);
}

PrefixCache::Mapping& PrefixCache::Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    Drop();
    count_ = std::move(o.count_);
    block_ = std::move(o.block_);
  }
  return *this;
}

void PrefixCache::Mapping::Drop() {
  if (block_ == nullptr) return;
  count_->fetch_sub(1);
  block_.reset();  // may release the block's slot
  count_.reset();
}

PrefixCache::Stats PrefixCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.capacity_bytes = capacity_;
  s.blocks = map_.size();
  s.mapped_blocks = mapped_->load();
  return s;
}

}  // namespace zf::rt

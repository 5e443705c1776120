// The prefix cache's map and LRU list.
#include "runtime/prefix_cache.h"

#include <algorithm>
#include <iterator>

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
  if (b.prev != prev || b.tokens.size() != size_t(kBlockTokens) || !std::equal(b.tokens.begin(), b.tokens.end(), tokens)) {
    return nullptr;
  }
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
    auto [lo, hi] = children_.equal_range(victim->second.block->prev);
    for (auto c = lo; c != hi; ++c) {
      if (c->second == victim->first) {
        children_.erase(c);
        break;
      }
    }
    map_.erase(victim);
    lru_.pop_back();
    ++stats_.evicted_blocks;
  }
  lru_.push_front(key);
  children_.emplace(block->prev, key);
  map_.emplace(key, Entry{std::move(block), lru_.begin()});
  stats_.bytes += size;
  ++stats_.stored_blocks;
  return true;
}

namespace {

// How many of b's first tokens equal tokens[0..n).
size_t Agree(const PrefixCache::Block& b, const int32_t* tokens, size_t n) {
  const size_t lim = std::min(n, b.tokens.size());
  size_t m = 0;
  while (m < lim && b.tokens[m] == tokens[m]) ++m;
  return m;
}

}  // namespace

template <class Visit>
void PrefixCache::ForEachUnder(uint64_t prev, Visit visit) {
  auto [lo, hi] = children_.equal_range(prev);
  for (auto c = lo; c != hi; ++c) {
    const Entry& e = map_.at(c->second);
    visit(e.block, e.lru, tails_.end());
  }
  auto [tlo, thi] = tails_by_prev_.equal_range(prev);
  for (auto t = tlo; t != thi; ++t) visit(*t->second, lru_.end(), t->second);
}

PrefixCache::Run PrefixCache::FindLongest(uint64_t prev, const int32_t* tokens, size_t n, size_t have) {
  std::lock_guard<std::mutex> lock(mu_);
  Run best;
  std::list<uint64_t>::iterator best_full = lru_.end();
  TailList::iterator best_tail = tails_.end();
  ForEachUnder(prev, [&](const std::shared_ptr<const Block>& b, std::list<uint64_t>::iterator full,
                         TailList::iterator tail) {
    const size_t m = Agree(*b, tokens, n);
    if (m >= have && m > best.tokens) best = {b, m}, best_full = full, best_tail = tail;
  });
  if (best.tokens <= have) return Run{};
  if (best_full != lru_.end()) lru_.splice(lru_.begin(), lru_, best_full);
  if (best_tail != tails_.end()) tails_.splice(tails_.begin(), tails_, best_tail);
  stats_.hit_tokens += uint64_t(best.tokens - have);
  return best;
}

bool PrefixCache::StoreTail(std::shared_ptr<const Block> tail) {
  const uint64_t size = tail->bytes(), cap = capacity_ / kTailShare;
  const size_t k = tail->tokens.size();
  if (k == 0 || k >= size_t(kBlockTokens)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (size > cap) return false;
  bool held = false;  // a cached block following the same chain already starts with these tokens
  ForEachUnder(tail->prev, [&](const std::shared_ptr<const Block>& b, auto, auto) {
    held = held || Agree(*b, tail->tokens.data(), k) == k;
  });
  if (held) return false;
  while (tail_bytes_ + size > cap && !tails_.empty()) {
    const auto victim = std::prev(tails_.end());
    auto [vlo, vhi] = tails_by_prev_.equal_range((*victim)->prev);
    for (auto t = vlo; t != vhi; ++t) {
      if (t->second == victim) {
        tails_by_prev_.erase(t);
        break;
      }
    }
    tail_bytes_ -= (*victim)->bytes();
    tails_.erase(victim);
  }
  const uint64_t prev = tail->prev;
  tails_.push_front(std::move(tail));
  tails_by_prev_.emplace(prev, tails_.begin());
  tail_bytes_ += size;
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

// The model's prefix cache: KV rows of full blocks of kBlockTokens positions that sessions have
// evaluated, keyed by the block's tokens and everything before it (a hash chain, as vLLM's
// automatic prefix caching keys its paged blocks). A session whose next tokens continue its
// history with cached blocks copies their rows instead of computing them, so a system prompt
// shared by every request is evaluated once per model, not once per session.
//
// Exact by construction: only sessions whose prefill is chunk-invariant (exact mode) store or
// read blocks, so a copied row is bit for bit the row the session would have computed.
//
// Bounded: least recently used blocks are dropped beyond the capacity. A lookup walks a chain
// from its first block, so a chain's earlier blocks are never less recently used than its later
// ones and eviction takes the tails first.
//
// Thread-safe: sessions on different threads share one cache.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace zf::rt {

class PrefixCache {
 public:
  static constexpr int32_t kBlockTokens = 64;

  struct Block {
    uint64_t prev;                // the key of the block before it (the chain's seed for the first)
    std::vector<int32_t> tokens;  // its kBlockTokens tokens (checked on lookup: no trust in hashes)
    std::vector<uint8_t> kv;      // Backend::ReadKvRows of its positions
    // Recurrent models: every recurrent layer's state after the block's last token
    // (model::RecurrentState::values()), so a hybrid model resumes after a cached prefix.
    std::vector<float> state;
    size_t bytes() const { return kv.size() + state.size() * sizeof(float); }
  };
  struct Stats {
    uint64_t capacity_bytes = 0, bytes = 0, blocks = 0, hit_tokens = 0, stored_blocks = 0, evicted_blocks = 0;
  };

  explicit PrefixCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The key of the block `tokens` (kBlockTokens of them) following the block keyed `prev`.
  // A chain starts from a seed naming what makes rows incomparable (KV type, rope factors).
  static uint64_t Key(uint64_t prev, const int32_t* tokens);

  // The block with this key, following `prev` and holding `tokens`, or null; marks it used and
  // counts `saved` tokens (those it spares evaluating) as hits.
  std::shared_ptr<const Block> Find(uint64_t key, uint64_t prev, const int32_t* tokens, size_t saved);
  bool Contains(uint64_t key) const;
  // Stores a block (no-op if the key is present or the block alone exceeds the capacity),
  // dropping the least recently used ones beyond the capacity.
  void Store(uint64_t key, std::shared_ptr<const Block> block);

  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const Block> block;
    std::list<uint64_t>::iterator lru;  // position in lru_ (front = most recent)
  };
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;
  Stats stats_;
};

}  // namespace zf::rt

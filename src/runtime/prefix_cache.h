// The model's prefix cache: KV rows of full blocks of kBlockTokens positions that sessions have
// evaluated, keyed by the block's tokens and everything before it (a hash chain, as vLLM's
// automatic prefix caching keys its paged blocks). A session whose next tokens continue its
// history with cached blocks copies their rows instead of computing them, so a system prompt
// shared by every request is evaluated once per model, not once per session. Where the system
// allows, blocks live in a KvArena (runtime/kv_arena.h) and a session maps their pages instead of
// copying them, so the rows are also held once, however many sessions use them.
//
// Exact by construction: only sessions whose prefill is chunk-invariant (exact mode) store or
// read blocks, so a copied row is bit for bit the row the session would have computed.
//
// Bounded: least recently used blocks are dropped beyond the capacity. A lookup walks a chain
// from its first block, so a chain's earlier blocks are never less recently used than its later
// ones and eviction takes the tails first.
//
// To the token: a prompt that continues a cached prefix inside a block takes the rows it shares
// with a cached block that follows the same chain (FindLongest): the longest common run of
// tokens among the full blocks filed under that chain and the tails, the partial last blocks of
// prompts (StoreTail), so a shared system prompt that ends mid-block is reused whole. The rows of
// a position depend only on the tokens up to it (exact prefill), so those rows are the ones the
// session would compute. Tails hold copied rows (Block::kv), are bounded apart from the full
// blocks (kTailShare of the capacity, least recently used first) and are not counted in Stats'
// block counts.
//
// Thread-safe: sessions on different threads share one cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/kv_arena.h"

namespace zf::rt {

class PrefixCache {
 public:
  static constexpr int32_t kBlockTokens = 64;

  struct Block {
    Block() = default;
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    ~Block() {
      if (arena != nullptr) arena->Release(slot);
    }
    uint64_t prev = 0;            // the key of the block before it (the chain's seed for the first)
    std::vector<int32_t> tokens;  // its kBlockTokens tokens (a tail: fewer; checked on lookup: no trust in hashes)
    // Its positions' KV rows (engine::KvCache planes): in slot `slot` of `arena`, or when the
    // cache has no arena, in `kv` (KvCache::ReadRows).
    std::shared_ptr<KvArena> arena;
    int64_t slot = -1;
    std::vector<uint8_t> kv;
    // Recurrent models: every recurrent layer's state after the block's last token
    // (model::RecurrentState::values()), so a hybrid model resumes after a cached prefix.
    std::vector<float> state;
    size_t bytes() const { return (arena != nullptr ? arena->slot_bytes() : kv.size()) + state.size() * sizeof(float); }
  };
  struct Stats {
    uint64_t capacity_bytes = 0, bytes = 0, blocks = 0, hit_tokens = 0, stored_blocks = 0, evicted_blocks = 0;
    uint64_t mapped_blocks = 0;  // Mappings alive now (a block in n sessions counts n times)
  };

  // A session's hold on a block whose pages its KV cache maps: the block (and its slot, and
  // the arena) lives at least as long, evicted or not, even past the cache itself. Counted in
  // Stats::mapped_blocks.
  class Mapping {
   public:
    Mapping() = default;
    Mapping(const PrefixCache& cache, std::shared_ptr<const Block> block);
    Mapping(Mapping&& o) noexcept = default;
    Mapping& operator=(Mapping&& o) noexcept;
    ~Mapping() { Drop(); }

   private:
    void Drop();
    std::shared_ptr<std::atomic<uint64_t>> count_;  // the cache's mapped_ counter
    std::shared_ptr<const Block> block_;
  };

  explicit PrefixCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The key of the block `tokens` (kBlockTokens of them) following the block keyed `prev`.
  // A chain starts from a seed naming what makes rows incomparable (KV type, rope factors).
  static uint64_t Key(uint64_t prev, const int32_t* tokens);

  // The block with this key, following `prev` and holding `tokens`, or null; marks it used and
  // counts `saved` tokens (those it spares evaluating) as hits.
  std::shared_ptr<const Block> Find(uint64_t key, uint64_t prev, const int32_t* tokens, size_t saved);
  bool Contains(uint64_t key) const;
  // Token-level reuse: the cached block (full or tail) following `prev` whose tokens agree
  // longest with tokens[0..n) (n <= kBlockTokens), among those whose first `have` tokens all do
  // (the part of the block a session already holds); `tokens` of them agree. Marks it used and
  // counts the tokens past `have` as hits. Empty (null block) when none agrees past `have`.
  struct Run {
    std::shared_ptr<const Block> block;
    size_t tokens = 0;
  };
  Run FindLongest(uint64_t prev, const int32_t* tokens, size_t n, size_t have);
  // Stores a tail (a block of 1..kBlockTokens-1 tokens, rows in Block::kv) unless a cached block
  // following the same chain already starts with its tokens; false if not stored.
  bool StoreTail(std::shared_ptr<const Block> tail);
  static constexpr uint64_t kTailShare = 4;  // tails take at most capacity / kTailShare bytes
  // Stores a block, dropping the least recently used ones beyond the capacity; false (nothing
  // stored) if the key is present or the block alone exceeds the capacity.
  bool Store(uint64_t key, std::shared_ptr<const Block> block);
  // The arena for blocks whose planes have these sizes (one per KV element type of the model's
  // sessions): made on the first call for them, sized for the capacity plus kExtraSlots (blocks
  // evicted while sessions still map them keep their slot); null where the system has none
  // (such blocks go to Block::kv).
  std::shared_ptr<KvArena> Arena(const std::vector<size_t>& plane_bytes);
  static constexpr int64_t kExtraSlots = 1024;

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
  std::unordered_multimap<uint64_t, uint64_t> children_;  // full blocks' keys by their prev
  // Tails (front = most recent), by their prev, and their bytes.
  using TailList = std::list<std::shared_ptr<const Block>>;
  TailList tails_;
  std::unordered_multimap<uint64_t, TailList::iterator> tails_by_prev_;
  uint64_t tail_bytes_ = 0;
  // One walk over the blocks filed under `prev` for FindLongest and StoreTail: the full blocks
  // (visit(block, their lru_ position, tails_.end())) then the tails (visit(block, lru_.end(),
  // their tails_ position)). The caller holds mu_.
  template <class Visit>
  void ForEachUnder(uint64_t prev, Visit visit);
  Stats stats_;
  std::map<std::vector<size_t>, std::shared_ptr<KvArena>> arenas_;  // by plane sizes
  // Mappings alive (Stats::mapped_blocks); shared with them, so they may outlive the cache.
  std::shared_ptr<std::atomic<uint64_t>> mapped_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace zf::rt

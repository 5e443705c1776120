// Session: context sizing, KV allocation, chunked evaluation with cancellation checks.
#include "runtime/session.h"

#include "runtime/batcher.h"
#include "runtime/prefix_cache.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <algorithm>


namespace zf::rt {

namespace {

constexpr size_t kReleaseMinRows = 64;  // Truncate gives memory back from this many rows on

// Memory the system can still give this process without swapping: MemAvailable on Linux, else
// the physical memory; 0 when unknown (no check).
uint64_t AvailableMemoryBytes() {
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
        found = true;
        break;
      }
    }
    std::fclose(f);
    if (found) return uint64_t(kb) << 10;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

}  // namespace

Status Session::Create(const model::Model& model, const SessionOptions& o, std::unique_ptr<Session>* out) {
  out->reset();
  if (model.vocab_only()) return InvalidArgument("the model was loaded with ZF_MODEL_VOCAB_ONLY and has no weights");
  if (o.n_ctx < 0) return InvalidArgument("n_ctx must be >= 0, got " + std::to_string(o.n_ctx));
  if (o.n_threads < 0) return InvalidArgument("n_threads must be >= 0, got " + std::to_string(o.n_threads));
  const model::ModelDesc& d = model.desc();
  if (!d.has_output_head) {
    return Unsupported("'" + d.arch + "' is an embedding model without an output head: it cannot generate or give "
                       "logits (use zf_embed)");
  }
  int32_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(d.n_ctx_train, kDefaultContext);
  if (n_ctx > (1 << 24)) return InvalidArgument("n_ctx " + std::to_string(n_ctx) + " is too large");
  const int32_t threads = o.n_threads > 0 ? o.n_threads : model.default_threads();
  const engine::KvType kt = o.kv_type, vt = o.kv_type_v.value_or(o.kv_type);
  if (!engine::KvTypeValid(int32_t(kt)) || !engine::KvTypeValid(int32_t(vt))) {
    return InvalidArgument("unknown KV cache type " + std::to_string(int32_t(engine::KvTypeValid(int32_t(kt)) ? vt : kt)));
  }
  // A quantized type's blocks must not straddle heads: each head's part of a row is read alone.
  for (const model::LayerDesc& l : d.layers) {
    if (!l.attention()) continue;
    if (l.attn.head_dim_k % engine::KvBlock(kt) != 0 || l.attn.head_dim_v % engine::KvBlock(vt) != 0) {
      const bool k_bad = l.attn.head_dim_k % engine::KvBlock(kt) != 0;
      return Unsupported(std::string("a ") + engine::KvTypeName(k_bad ? kt : vt) + " " + (k_bad ? "K" : "V") +
                         " cache needs head sizes that are a multiple of 32; this model's " + (k_bad ? "K" : "V") +
                         " heads have " + std::to_string(k_bad ? l.attn.head_dim_k : l.attn.head_dim_v) + " elements");
    }
  }
  if (model.device() != model::Device::kCuda) {
    // The KV cache reserves address space for all n_ctx positions at once and commits pages as
    // they fill (LazyBuffer): an absurd n_ctx would not fail here but bring in the OOM killer
    // once the conversation grows. Refused beforehand instead.
    const uint64_t kv = uint64_t(d.NKvLayers()) * uint64_t(n_ctx) *
                        uint64_t(engine::KvRowBytes(kt, d.MaxKWidth()) + engine::KvRowBytes(vt, d.MaxVWidth()));
    const uint64_t avail = AvailableMemoryBytes();
    if (avail != 0 && kv > avail) {
      return Status(Code::kOutOfMemory, "the KV cache for n_ctx=" + std::to_string(n_ctx) + " needs " +
                                            std::to_string(kv >> 20) + " MiB, more than the " +
                                            std::to_string(avail >> 20) + " MiB of memory available");
    }
  }
  std::unique_ptr<Session> s(new Session(model, n_ctx));
  s->fwd_key_ = model::ForwardPool::Key{std::min(threads, 256), o.exact};
  // A context now: it checks that the engine can run the model, and makes the KV cache.
  model::ForwardPool::Lease ctx;
  ZF_RETURN_IF_ERROR(model.forwards()->Acquire(s->fwd_key_, &ctx));
  ZF_RETURN_IF_ERROR(ctx.backend().CreateKv(d.NKvLayers(), n_ctx, d.MaxKWidth(), d.MaxVWidth(), kt, vt, &s->kv_));
  s->kv_k_ = kt;
  s->kv_v_ = vt;
  s->exact_ = ctx.exact();  // an engine without batch-invariant products (CUDA today) is not exact
  s->host_ = ctx.backend().HostActivations();
  if (!s->host_ || s->fwd_key_.n_threads != std::min(model.default_threads(), 256)) s->own_ = std::move(ctx);
  s->rope_factors_ = model::Forward::RopeFactors(model, n_ctx);
  s->max_batch_ = std::min(kMaxBatch, n_ctx);
  s->state_ = model::RecurrentState(d);
  s->history_.reserve(size_t(n_ctx));
  s->logits_.resize(size_t(d.n_vocab));
  *out = std::move(s);
  return Status::Ok();
}

Status Session::Eval(const int32_t* tokens, size_t n, float* logits) { return EvalImpl(tokens, n, logits, nullptr); }

Status Session::Context(model::ForwardPool::Lease* borrowed, const model::ForwardPool::Lease** ctx) {
  if (own_) {
    *ctx = &own_;
    return Status::Ok();
  }
  ZF_RETURN_IF_ERROR(model_.forwards()->Acquire(fwd_key_, borrowed));
  *ctx = borrowed;
  return Status::Ok();
}

Status Session::EvalImpl(const int32_t* tokens, size_t n, float* logits, int32_t* argmax) {
  const size_t total = deferred_.size() + n;
  if (total == 0) return InvalidArgument("no tokens to evaluate");
  const int32_t n_vocab = model_.desc().n_vocab;
  for (size_t i = 0; i < n; ++i) {  // the caller's indices (deferred tokens were checked)
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                             " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
  }
  if (size_t(n_past()) + total > size_t(n_ctx_)) {
    return Status(Code::kContextFull, std::to_string(total) + " tokens do not fit: " + std::to_string(n_past()) +
                                          " of " + std::to_string(n_ctx_) + " context positions are used");
  }
  // No copy without deferred tokens: a caller's own one-token decode loop allocates nothing.
  if (deferred_.empty()) return Append(tokens, n, logits, argmax);
  std::vector<int32_t> all = deferred_;
  all.insert(all.end(), tokens, tokens + n);
  const size_t before = history_.size();
  const Status s = Append(all.data(), all.size(), logits, argmax);
  // Evaluated ones leave the list (all of them unless a cancel or an error came first).
  const size_t evaluated = std::min(history_.size() - before, deferred_.size());
  deferred_.erase(deferred_.begin(), deferred_.begin() + std::ptrdiff_t(evaluated));
  return s;
}

Status Session::FlushDeferred() { return deferred_.empty() ? Status::Ok() : EvalImpl(nullptr, 0, nullptr, nullptr); }

Status Session::Append(const int32_t* tokens, size_t n, float* logits, int32_t* argmax) {
  const bool want_output = logits != nullptr || argmax != nullptr;
  size_t done = prefix_cache_ != nullptr ? ReuseBlocks(tokens, n, want_output ? 1 : 0, true) : 0;
  const size_t reused = done;
  cached_tokens_ += int64_t(done);
  if (done > 0) has_logits_ = has_argmax_ = false;  // the positions they described moved on
  // Batched: prefill chunks of a fixed size (they depend only on this request), between the
  // model's decode steps.
  const int32_t batch = batcher_ != nullptr ? std::min(max_batch_, Batcher::kPrefillChunk) : max_batch_;
  model::ForwardPool::Lease borrowed;  // the context of this call's steps, unless batched
  const model::ForwardPool::Lease* ctx = nullptr;
  if (batcher_ == nullptr && done < n) ZF_RETURN_IF_ERROR(Context(&borrowed, &ctx));
  // A recurrent model's steps pass block boundaries; the state at each is copied out inside the
  // step (PlanCopies), so the steps need not end there (a stop re-reads every weight for the rows
  // up to it: at pp512 the stops were most of the cost, doc/performance.md). Without a prefix
  // cache to store them, the boundaries whose checkpoint the thinning drops before this call
  // returns are never read: no copy. A cancelled call keeps fewer checkpoints, which costs only
  // re-evaluation on a later Truncate.
  constexpr size_t kB = size_t(kCheckpointInterval);
  const size_t first_block = history_.size() / kB;  // the next boundary's checkpoint index
  const std::vector<bool> copy_block = recurrent() && prefix_cache_ == nullptr
                                           ? CheckpointsKept(first_block, (history_.size() + n - done) / kB)
                                           : std::vector<bool>();
  while (done < n) {
    if (ConsumeCancel()) return Status(Code::kCancelled, "evaluation cancelled");
    const int32_t chunk = int32_t(std::min<size_t>(size_t(batch), n - done));
    const bool last = done + size_t(chunk) == n;
    has_logits_ = false;
    has_argmax_ = false;
    PlanCopies(size_t(chunk), copy_block, first_block);
    if (batcher_ != nullptr) {
      ZF_RETURN_IF_ERROR(batcher_->Eval(Seq(), exact_, tokens + done, chunk, n_past(), last ? logits : nullptr,
                                        last ? argmax : nullptr));
    } else {
      ctx->forward().Run(Seq(), tokens + done, chunk, n_past(), last ? logits : nullptr, last ? argmax : nullptr);
      ZF_RETURN_IF_ERROR(ctx->backend().TakeError());  // device engines can fail at run time
    }
    history_.insert(history_.end(), tokens + done, tokens + done + chunk);
    KeepCopies();
    done += size_t(chunk);
    if (prefix_cache_ != nullptr) {
      StoreBlocks();
      ThinCheckpoints();  // the blocks just stored no longer hold their states back
    }
  }
  // A prompt (not a decode step) that ends inside a block leaves its rows there as a tail.
  if (prefix_cache_ != nullptr && n - reused > 1) StoreTail();
  return Status::Ok();
}

Status Session::EvalEvery(const int32_t* tokens, size_t n, float* logits) {
  if (!can_verify()) return Unsupported("this session cannot verify drafts (needs exact prefill and a CPU engine)");
  if (n == 0 || n > size_t(kMaxVerify)) return InvalidArgument("EvalEvery takes 1 to " + std::to_string(kMaxVerify) + " tokens");
  const int32_t n_vocab = model_.desc().n_vocab;
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) return InvalidArgument("token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
  }
  if (size_t(n_past()) + deferred_.size() + n > size_t(n_ctx_)) {
    return Status(Code::kContextFull, "the drafted tokens do not fit the context");
  }
  ZF_RETURN_IF_ERROR(FlushDeferred());  // its own step: the verified rows are the caller's only
  if (ConsumeCancel()) return Status(Code::kCancelled, "evaluation cancelled");
  has_logits_ = has_argmax_ = false;
  if (recurrent()) {  // rejected drafts roll back to here (Truncate)
    mark_pos_ = n_past();
    mark_state_ = state_.values();
  }
  model::ForwardPool::Lease borrowed;
  const model::ForwardPool::Lease* ctx = nullptr;
  if (batcher_ == nullptr) ZF_RETURN_IF_ERROR(Context(&borrowed, &ctx));
  PlanCopies(n, {}, 0);  // recurrent models: the checkpoint of a block boundary the rows pass
  if (batcher_ != nullptr) {  // its rows join a decode step
    ZF_RETURN_IF_ERROR(batcher_->EvalEvery(Seq(), exact_, tokens, int32_t(n), n_past(), logits));
  } else {
    ctx->forward().RunEveryLogit(Seq(), tokens, int32_t(n), n_past(), logits);
    ZF_RETURN_IF_ERROR(ctx->backend().TakeError());
  }
  history_.insert(history_.end(), tokens, tokens + n);
  KeepCopies();
  if (prefix_cache_ != nullptr) StoreBlocks();
  return Status::Ok();
}

void Session::KeepCheckpoint() {
  const size_t h = history_.size(), kB = size_t(kCheckpointInterval);
  if (!recurrent() || h % kB != 0 || block_states_.size() >= h / kB) return;
  std::vector<float> copy = SpareState();
  std::copy(state_.values().begin(), state_.values().end(), copy.begin());
  SetCheckpoint(h / kB - 1, std::move(copy));
}

void Session::SetCheckpoint(size_t j, std::vector<float> state) {
  if (block_states_.size() > j) return Recycle(&state);  // held already (not after the history grew)
  block_states_.resize(j);  // blocks passed without a copy: none
  block_states_.push_back(std::move(state));
  ThinCheckpoints();
}

void Session::PlanCopies(size_t rows, const std::vector<bool>& keep, size_t first_block) {
  for (auto& p : pending_) Recycle(&p.second);  // a failed step's
  pending_.clear();
  copies_.clear();
  if (!recurrent()) return;
  const size_t kB = size_t(kCheckpointInterval), h = history_.size();
  for (size_t b = h / kB + 1; b * kB <= h + rows; ++b) {
    const size_t j = b - 1, at = j - first_block;  // the checkpoint's index, and in keep
    const bool take = keep.empty() || at >= keep.size() || keep[at];
    pending_.emplace_back(j, take ? SpareState() : std::vector<float>());
    // The buffer's floats stay where they are when pending_ grows (a vector's move keeps them).
    if (take) copies_.push_back({int32_t(b * kB), pending_.back().second.data()});
  }
}

void Session::KeepCopies() {
  copies_.clear();
  for (auto& p : pending_) SetCheckpoint(p.first, std::move(p.second));
  pending_.clear();
}

std::vector<float> Session::SpareState() {
  if (spare_states_.empty()) return std::vector<float>(state_.size());
  std::vector<float> v = std::move(spare_states_.back());
  spare_states_.pop_back();
  return v;
}

void Session::Recycle(std::vector<float>* state) {
  if (state->empty()) return;
  const size_t cap = std::max<size_t>(2, kCheckpointBudgetBytes / std::max<size_t>(state_.bytes(), 1));
  if (spare_states_.size() + n_checkpoints() < cap) spare_states_.push_back(std::move(*state));
  std::vector<float>().swap(*state);
}

void Session::ThinPlan(std::vector<bool>* held, size_t limit) const {
  std::vector<bool>& h = *held;
  const size_t n = h.size();
  for (size_t j = 0; j + kDenseCheckpoints < n && j < limit; ++j) {
    if (!h[j]) continue;
    const size_t d = n - 1 - j;
    size_t stride = 1;
    while (stride * kDenseCheckpoints < d + 1) stride *= 2;
    if ((j + 1) % stride != 0) h[j] = false;
  }
  // The byte budget: the oldest go first (the newest one always stays, and one more).
  const size_t bytes = std::max<size_t>(state_.bytes(), 1);
  const size_t cap = std::max<size_t>(2, kCheckpointBudgetBytes / bytes);
  size_t kept = size_t(std::count(h.begin(), h.end(), true));
  for (size_t j = 0; kept > cap && j + 1 < n && j < limit; ++j) {
    if (h[j]) h[j] = false, --kept;
  }
}

void Session::ThinCheckpoints() {
  const size_t n = block_states_.size();
  // Blocks the prefix cache has still to store keep their state until it has (StoreBlocks).
  const size_t limit = prefix_cache_ != nullptr && store_blocks_ ? std::min(n, stored_blocks_) : n;
  std::vector<bool> held(n);
  for (size_t j = 0; j < n; ++j) held[j] = !block_states_[j].empty();
  ThinPlan(&held, limit);
  for (size_t j = 0; j < n; ++j) {
    if (!held[j]) Recycle(&block_states_[j]);
  }
}

std::vector<bool> Session::CheckpointsKept(size_t first, size_t last) const {
  // What KeepCheckpoint and ThinCheckpoints do at each boundary, on flags instead of states.
  // Checkpoints held back this way leave the held ones as they would have been: the thinning
  // treats each block alone and the budget drops the oldest first, so a block that survives
  // with every copy taken survives with fewer.
  std::vector<bool> held(std::min(block_states_.size(), first));
  for (size_t j = 0; j < held.size(); ++j) held[j] = !block_states_[j].empty();
  for (size_t b = first; b < last; ++b) {
    held.resize(b);
    held.push_back(true);
    ThinPlan(&held, held.size());
  }
  return std::vector<bool>(held.begin() + std::ptrdiff_t(first), held.end());
}

size_t Session::n_checkpoints() const {
  size_t k = 0;
  for (const std::vector<float>& c : block_states_) k += c.empty() ? 0 : 1;
  return k;
}

void Session::SetLastLogits(const float* logits) {
  std::copy(logits, logits + logits_.size(), logits_.begin());
  has_logits_ = true;
  has_argmax_ = false;
}

void Session::set_prefix_cache(PrefixCache* cache) {
  prefix_cache_ = nullptr;
  if (cache == nullptr || !exact_ || kv_->StateBytes(PrefixCache::kBlockTokens) == 0) return;
  prefix_cache_ = cache;
  // Rows are comparable between sessions with the same K and V element types and rope factors
  // (LongRoPE picks its set by n_ctx).
  const uint64_t types = uint64_t(kv_k_) | uint64_t(kv_v_) << 8;
  base_seed_ = PrefixCache::Key(types * 0x100000001b3ull ^ uint64_t(uintptr_t(rope_factors_)),
                                std::vector<int32_t>(PrefixCache::kBlockTokens, -1).data());
  chain_seed_ = lora_ != nullptr ? PrefixCache::Key(base_seed_ ^ lora_->key(), std::vector<int32_t>(PrefixCache::kBlockTokens, -2).data())
                                 : base_seed_;
  block_keys_.clear();
  stored_blocks_ = 0;
  block_planes_.clear();
  for (int32_t p = 0; p < kv_->Planes(); ++p) block_planes_.push_back(kv_->PlaneBytes(p, PrefixCache::kBlockTokens));
}

void Session::SyncBlockKeys() {
  constexpr size_t kB = PrefixCache::kBlockTokens;
  if (prefix_cache_ == nullptr) return;
  const size_t full = history_.size() / kB;
  if (block_keys_.size() > full) block_keys_.resize(full);
  stored_blocks_ = std::min(stored_blocks_, block_keys_.size());
  while (block_keys_.size() < full) {
    const uint64_t prev = block_keys_.empty() ? chain_seed_ : block_keys_.back();
    block_keys_.push_back(PrefixCache::Key(prev, history_.data() + block_keys_.size() * kB));
  }
}

// The history may end inside a block (a conversation truncated to the prefix it shares with
// the next prompt): the block it ends in is looked up with its first tokens from the history,
// and its rows are rewritten whole (those of the history's positions are the same bits).
size_t Session::ReuseBlocks(const int32_t* tokens, size_t n, size_t keep, bool partial) {
  constexpr size_t kB = PrefixCache::kBlockTokens;
  if (lora_mixed_) return 0;
  SyncBlockKeys();
  int32_t block[kB];
  size_t taken = 0;
  for (;;) {
    const size_t p = history_.size(), p0 = p / kB * kB, have = p - p0, need = kB - have;
    if (taken + need + keep > n) break;
    std::copy(history_.begin() + std::ptrdiff_t(p0), history_.end(), block);
    std::copy(tokens + taken, tokens + taken + need, block + have);
    const uint64_t prev = block_keys_.empty() ? chain_seed_ : block_keys_.back();
    const uint64_t key = PrefixCache::Key(prev, block);
    std::shared_ptr<const PrefixCache::Block> b = prefix_cache_->Find(key, prev, block, need);
    if (b == nullptr || b->state.size() != state_.size()) break;
    if (!PutBlockRows(p0 / kB, b)) break;
    if (recurrent()) state_.Assign(b->state.data());  // the state after the block's last token
    history_.insert(history_.end(), tokens + taken, tokens + taken + need);
    KeepCheckpoint();
    block_keys_.push_back(key);
    taken += need;
  }
  if (partial && !recurrent() && taken + keep < n) {
    const size_t have = history_.size() % kB;
    taken += ReuseRows(tokens + taken, std::min(n - taken - keep, kB - have));
  }
  return taken;
}

size_t Session::ReuseRows(const int32_t* tokens, size_t n) {
  constexpr size_t kB = PrefixCache::kBlockTokens;
  const size_t p = history_.size(), p0 = p / kB * kB, have = p - p0;
  if (n == 0 || have + n > kB || block_keys_.size() != p0 / kB) return 0;
  int32_t block[kB];
  std::copy(history_.begin() + std::ptrdiff_t(p0), history_.end(), block);
  std::copy(tokens, tokens + n, block + have);
  const uint64_t prev = block_keys_.empty() ? chain_seed_ : block_keys_.back();
  const PrefixCache::Run run = prefix_cache_->FindLongest(prev, block, have + n, have);
  if (run.block == nullptr) return 0;
  const PrefixCache::Block& b = *run.block;
  const size_t m = run.tokens - have;
  // Rows [have, run.tokens) of the block, from the arena's slot or its copied planes.
  const int32_t rows = int32_t(b.tokens.size());
  std::vector<const uint8_t*> planes(size_t(kv_->Planes()));
  if (b.arena == nullptr && b.kv.size() != kv_->StateBytes(rows)) return 0;
  size_t off = 0;
  for (int32_t i = 0; i < kv_->Planes(); off += kv_->PlaneBytes(i, rows), ++i) {
    const uint8_t* plane = b.arena != nullptr ? b.arena->Pointer(i, b.slot) : b.kv.data() + off;
    planes[size_t(i)] = plane + kv_->PlaneBytes(i, int32_t(have));
  }
  if (!kv_->WritePlanes(int32_t(p), int32_t(m), planes.data()).ok()) return 0;
  history_.insert(history_.end(), tokens, tokens + m);
  return m;
}

void Session::StoreTail() {
  constexpr size_t kB = PrefixCache::kBlockTokens;
  if (!store_blocks_ || lora_mixed_ || recurrent()) return;
  SyncBlockKeys();
  const size_t p = history_.size(), p0 = p / kB * kB, k = p - p0;
  if (k == 0) return;
  auto b = std::make_shared<PrefixCache::Block>();
  b->prev = block_keys_.empty() ? chain_seed_ : block_keys_.back();
  b->tokens.assign(history_.begin() + std::ptrdiff_t(p0), history_.end());
  b->kv.resize(kv_->StateBytes(int32_t(k)));
  if (!kv_->ReadRows(int32_t(p0), int32_t(k), b->kv.data()).ok()) return;
  prefix_cache_->StoreTail(std::move(b));
}

void Session::StoreBlocks() {
  constexpr int32_t kB = PrefixCache::kBlockTokens;
  if (!store_blocks_ || lora_mixed_) return;
  SyncBlockKeys();
  for (; stored_blocks_ < block_keys_.size(); ++stored_blocks_) {
    const uint64_t key = block_keys_[stored_blocks_];
    if (prefix_cache_->Contains(key)) continue;
    auto b = std::make_shared<PrefixCache::Block>();
    b->prev = stored_blocks_ == 0 ? chain_seed_ : block_keys_[stored_blocks_ - 1];
    const int32_t* first = history_.data() + stored_blocks_ * size_t(kB);
    b->tokens.assign(first, first + kB);
    if (recurrent()) {
      // No checkpoint (thinned out before the cache was set): this block and the rest stay out.
      if (stored_blocks_ >= block_states_.size() || block_states_[stored_blocks_].empty()) return;
      b->state = block_states_[stored_blocks_];
    }
    const int32_t pos0 = int32_t(stored_blocks_) * kB;
    std::shared_ptr<KvArena> arena = prefix_cache_->Arena(block_planes_);
    const int64_t slot = arena != nullptr ? arena->Acquire() : -1;
    if (slot >= 0) {
      b->arena = arena;  // from here on the block gives its slot back when it goes
      b->slot = slot;
      std::vector<uint8_t*> planes(block_planes_.size());
      for (int32_t p = 0; p < arena->planes(); ++p) planes[size_t(p)] = arena->Pointer(p, slot);
      if (!kv_->ReadPlanes(pos0, kB, planes.data()).ok()) return;
    } else {
      b->kv.resize(kv_->StateBytes(kB));
      if (!kv_->ReadRows(pos0, kB, b->kv.data()).ok()) return;
    }
    std::shared_ptr<const PrefixCache::Block> stored = std::move(b);
    // Stored in the arena: this session's own rows become the block's pages too (its copy freed).
    if (prefix_cache_->Store(key, stored) && slot >= 0) MapBlock(stored_blocks_, stored);
  }
}

// The rows of block `index` from a cached block: its pages mapped where the engine and the
// system allow (then held as a Mapping until the rows are forgotten), else copied.
bool Session::PutBlockRows(size_t index, const std::shared_ptr<const PrefixCache::Block>& b) {
  const int32_t pos0 = int32_t(index) * PrefixCache::kBlockTokens;
  if (b->arena != nullptr) {
    if (MapBlock(index, b)) return true;
    std::vector<const uint8_t*> planes(static_cast<size_t>(b->arena->planes()));
    for (int32_t p = 0; p < b->arena->planes(); ++p) planes[size_t(p)] = b->arena->Pointer(p, b->slot);
    return kv_->WritePlanes(pos0, PrefixCache::kBlockTokens, planes.data()).ok();
  }
  return kv_->WriteRows(pos0, PrefixCache::kBlockTokens, b->kv.data()).ok();
}

bool Session::MapBlock(size_t index, const std::shared_ptr<const PrefixCache::Block>& b) {
  const KvArena& a = *b->arena;
  std::vector<uint64_t> offsets(static_cast<size_t>(a.planes()));
  for (int32_t p = 0; p < a.planes(); ++p) offsets[size_t(p)] = a.Offset(p, b->slot);
  if (!kv_->MapPlanes(int32_t(index) * PrefixCache::kBlockTokens, PrefixCache::kBlockTokens, a.fd(), offsets.data())) {
    return false;
  }
  if (mapped_.size() <= index) mapped_.resize(index + 1);
  mapped_[index] = PrefixCache::Mapping(*prefix_cache_, b);
  return true;
}

void Session::ForgetRows(size_t pos) {
  kv_->Release(int32_t(pos));
  // Blocks starting at or after pos had their pages replaced: their mappings end.
  const size_t kept = (pos + PrefixCache::kBlockTokens - 1) / PrefixCache::kBlockTokens;
  if (mapped_.size() > kept) mapped_.resize(kept);
}

Status Session::EvalKeepLogits(const int32_t* tokens, size_t n) {
  ZF_RETURN_IF_ERROR(Eval(tokens, n, logits_.data()));
  has_logits_ = true;
  return Status::Ok();
}

// In host memory the logits come along (the context that computed them is another session's
// next); on a device they stay in the session's own context until FetchLogits.
Status Session::EvalKeepArgmax(const int32_t* tokens, size_t n) {
  int32_t id = 0;
  ZF_RETURN_IF_ERROR(EvalImpl(tokens, n, host_ ? logits_.data() : nullptr, &id));
  argmax_ = id;
  has_argmax_ = true;
  has_logits_ = host_;
  return Status::Ok();
}

Status Session::FetchLogits() {
  if (!has_argmax_) return InvalidArgument("no evaluated position to fetch logits from");
  if (has_logits_) return Status::Ok();
  if (!own_) return Status(Code::kInternal, "the logits of the last step are gone");
  own_.forward().ReadLogits(logits_.data());
  ZF_RETURN_IF_ERROR(own_.backend().TakeError());
  has_logits_ = true;
  return Status::Ok();
}

void Session::Reset() {
  ForgetRows(0);  // an idle session holds no KV memory
  store_blocks_ = true;
  lora_mixed_ = false;
  history_.clear();
  block_keys_.clear();
  stored_blocks_ = 0;
  deferred_.clear();
  piece_logprobs_.clear();
  has_logits_ = false;
  has_argmax_ = false;
  state_.Clear();
  block_states_.clear();
  spare_states_.clear();  // an idle session holds no checkpoint memory either
  embd_spans_.clear();
  image_places_.clear();
  mark_pos_ = -1;
  cancel_.store(false);
}

std::vector<int32_t> Session::Conversation() const {
  std::vector<int32_t> all = history_;
  all.insert(all.end(), deferred_.begin(), deferred_.end());
  return all;
}

Status Session::Truncate(size_t n_keep) {
  const size_t total = history_.size() + deferred_.size();
  if (n_keep > total) {
    return InvalidArgument("cannot keep " + std::to_string(n_keep) + " tokens of a conversation of " + std::to_string(total));
  }
  if (n_keep == 0) store_blocks_ = true, lora_mixed_ = false;
  if (recurrent() && n_keep < history_.size()) {
    // The nearest checkpoint at or before n_keep, then the tokens after it evaluated again.
    constexpr size_t kB = size_t(kCheckpointInterval);
    const std::vector<int32_t> kept(history_.begin(), history_.begin() + std::ptrdiff_t(n_keep));
    size_t from = n_keep / kB * kB;
    while (from > 0 && (from / kB > block_states_.size() || block_states_[from / kB - 1].empty())) from -= kB;
    if (mark_pos_ >= 0 && size_t(mark_pos_) <= n_keep && size_t(mark_pos_) > from) {
      from = size_t(mark_pos_);
      state_.Assign(mark_state_.data());
    } else if (from == 0) {
      state_.Clear();
    } else {
      state_.Assign(block_states_[from / kB - 1].data());
    }
    if (mark_pos_ > int64_t(n_keep)) mark_pos_ = -1;
    for (size_t j = from / kB; j < block_states_.size(); ++j) Recycle(&block_states_[j]);
    block_states_.resize(from / kB);
    history_.resize(from);
    CutPlaces(from);
    deferred_.clear();
    SyncBlockKeys();
    has_logits_ = has_argmax_ = false;
    return n_keep > from ? Replay(kept, from, n_keep) : Status::Ok();
  }
  if (n_keep <= history_.size()) {
    // Give the forgotten rows' memory back, except for the short rollbacks of speculative
    // verification (rewritten at once; not worth a system call per layer).
    if (history_.size() - n_keep >= kReleaseMinRows) ForgetRows(n_keep);
    history_.resize(n_keep);
    CutPlaces(n_keep);
    deferred_.clear();
    SyncBlockKeys();
  } else {
    deferred_.resize(n_keep - history_.size());
  }
  has_logits_ = false;
  has_argmax_ = false;
  return Status::Ok();
}

}  // namespace zf::rt

namespace zf::rt {

Status Session::SetLoras(const std::vector<std::shared_ptr<const model::LoraAdapter>>& adapters,
                         const std::vector<float>& scales) {
  if (adapters.size() != scales.size()) return InvalidArgument("one scale per adapter");
  std::vector<const model::LoraAdapter*> raw;
  for (size_t i = 0; i < adapters.size(); ++i) {
    if (adapters[i] == nullptr) return InvalidArgument("adapter " + std::to_string(i) + " is null");
    if (&adapters[i]->model() != &model_) {
      return InvalidArgument("adapter " + std::to_string(i) + " was loaded for another model");
    }
    if (!std::isfinite(scales[i])) return InvalidArgument("scale " + std::to_string(i) + " is not finite");
    raw.push_back(adapters[i].get());
  }
  auto plan = std::make_unique<const model::LoraPlan>(raw, scales, model_.desc().n_layer);
  if (!plan->empty() && !host_) {
    return Unsupported(std::string("LoRA adapters run on the CPU engine only; this session runs on ") +
                       (model_.engine() != nullptr ? model_.engine()->name() : "no engine"));
  }
  const uint64_t old_key = lora_ != nullptr ? lora_->key() : 0;
  const uint64_t new_key = plan->key();
  if (plan->empty()) {
    lora_.reset();
    lora_adapters_.clear();
  } else {
    lora_ = std::move(plan);
    lora_adapters_ = adapters;
  }
  if (new_key != old_key) {
    // Rows already in the cache were computed under the previous set.
    if (!history_.empty()) lora_mixed_ = true;
    if (prefix_cache_ != nullptr) {
      chain_seed_ = lora_ != nullptr
                        ? PrefixCache::Key(base_seed_ ^ new_key, std::vector<int32_t>(PrefixCache::kBlockTokens, -2).data())
                        : base_seed_;
      block_keys_.clear();
      stored_blocks_ = 0;
    }
  }
  return Status::Ok();
}

}  // namespace zf::rt

// A session: one conversation's sequence state over a shared model: its KV rows
// (engine/kv_cache.h), recurrent state, token history and prefix-cache mappings. Its steps run
// on forward contexts borrowed from the model (model/forward_pool.h) or on the model's batcher.
// Thread-compatible (one thread at a time); RequestCancel() is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "model/model.h"
#include "model/forward.h"
#include "model/forward_pool.h"
#include "model/lora.h"
#include "model/recurrent_state.h"
#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"

namespace zf::rt {

class Batcher;
class ConstraintVocab;

struct SessionOptions {
  int32_t n_ctx = 0;      // 0 = min(training context, kDefaultContext)
  int32_t n_threads = 0;  // 0 = the model's default
  engine::KvType kv_type = engine::KvType::kF16;  // K's cache type, and V's unless kv_type_v is set
  std::optional<engine::KvType> kv_type_v;          // V's, when it differs (llama.cpp's -ctv)
  // Exact prefill (default): the products and attention of a prompt's rows are computed as for
  // one token (Backend::SetBatchInvariant), so a position's logits do not depend on how the
  // prompt was split, batched or reused from the prefix cache. False: the multi-token kernels
  // (faster prefill; results differ from the one-token path in the last bits).
  bool exact = true;
};

// Default context when the caller does not choose one: large enough for chat, small enough
// that a 128k-context model does not allocate gigabytes of KV cache by surprise.
constexpr int32_t kDefaultContext = 4096;
// Prefill chunk: tokens evaluated per forward step.
constexpr int32_t kMaxBatch = model::ForwardPool::kMaxBatch;

class Session {
 public:
  static Status Create(const model::Model& model, const SessionOptions& options, std::unique_ptr<Session>* out);

  const model::Model& model() const { return model_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t n_past() const { return int32_t(history_.size()); }
  const std::vector<int32_t>& history() const { return history_; }

  // Appends the deferred tokens, then tokens, to the cache (in chunks of kMaxBatch) and, if
  // logits != nullptr, writes the last token's n_vocab logits. n may be 0 when tokens are
  // deferred. kContextFull (nothing appended) if they don't fit; kCancelled if a cancel request
  // arrived (tokens evaluated so far stay in the cache; deferred ones not reached stay deferred).
  Status Eval(const int32_t* tokens, size_t n, float* logits);

  void Reset();

  // Embedding input (session_embd.cpp): appends rows[from..n) of n_embd floats (host memory)
  // in place of token embeddings at the next positions (rows[0..from) already end the history:
  // a span cut by Truncate), and with keep_logits keeps the last position's logits in
  // last_logits(). bidirectional: the rows attend to each other both ways, so they go in one
  // step (n - from <= kMaxBatch). Their history entries are EmbeddingToken(hash of all n rows
  // and the attention mode, i): the rows' content takes part in every prefix comparison (Conversation, the prefix
  // cache's block keys, from which whole blocks of the same rows are taken). kUnsupported on a
  // device engine, and for rows both ways on a model with recurrent layers. A recurrent
  // session keeps a copy of each span's rows (embd_spans_): Truncate evaluates history again
  // from a state checkpoint, and an image's entries are evaluated again from their rows.
  // M-RoPE models (ModelDesc::mrope: Qwen2-VL, Qwen3-VL) place the rows as libmtmd does: an
  // image of `cols` columns (n a multiple of it; required there, kUnsupported without) starting
  // at rope position t0 (the text position it follows) gives row i the positions (t0,
  // t0 + i / cols, t0 + i % cols, 0), and text after it continues at t0 + max(n / cols, cols), so
  // KV rows and rope positions part (image_places_, TextPos). Other models ignore cols.
  Status EvalEmbeddings(const float* rows, size_t n, bool bidirectional, bool keep_logits, size_t from = 0,
                        int32_t cols = 0);
  // The history entry of row i of embedding rows whose content hash is `hash`: always negative
  // (no token id is), a mix of both.
  static int32_t EmbeddingToken(uint64_t hash, size_t i);
  // The key EvalEmbeddings gives n floats of rows: a hash of their bits and how they attend
  // (the same rows evaluated causally are other KV rows).
  // cols > 0: the rows' grid (M-RoPE models), which decides their positions, is part of it.
  static uint64_t RowsKey(const float* rows, size_t n, bool bidirectional, int32_t cols = 0);

  // The conversation as the next call sees it: the tokens in the KV cache, then the deferred ones.
  std::vector<int32_t> Conversation() const;
  // Keeps the first n_keep tokens of Conversation() and forgets the rest (their KV rows are
  // overwritten later), so a prompt sharing that prefix evaluates only its suffix.
  // kInvalidArgument when n_keep exceeds the conversation. A model with recurrent layers
  // restores the nearest state checkpoint at or before n_keep (a block boundary, or where the
  // last draft verification started) and evaluates the history tokens from there to n_keep
  // again, so the state is exactly that of a fresh evaluation (doc/state.md); errors of that
  // evaluation (kCancelled) are returned.
  Status Truncate(size_t n_keep);

  // Session state (session_state.cpp): conversation tokens and KV rows with a header naming the
  // model; LoadState checks the header against this session's model and context.
  Status StateSize(size_t* size) const;
  Status SaveState(uint8_t* buf, size_t cap, size_t* written) const;
  Status LoadState(const uint8_t* buf, size_t len);

  // Logits of the last evaluated position (valid when has_logits()).
  const float* last_logits() const { return logits_.data(); }
  bool has_logits() const { return has_logits_; }
  // Evaluates tokens and keeps the last position's logits in last_logits().
  Status EvalKeepLogits(const int32_t* tokens, size_t n);

  // Speculative verification (runtime/speculative.h): evaluates n tokens (at most
  // kMaxVerify) and writes every position's logits (n x n_vocab) to `logits`, each bit for bit
  // what evaluating the tokens one at a time gives. kUnsupported unless the session is exact and
  // on a host-memory engine (can_verify()); a batched session's rows join the batcher's next
  // decode step (batch-invariant: the same one-token logits). The one verification row limit:
  // the batcher sizes its decode steps by it, the generator its drafts (kMaxVerify - 1 tokens),
  // the C API its ZF_MAX_DRAFT.
  static constexpr int32_t kMaxVerify = 17;
  bool can_verify() const { return exact_ && host_; }
  // Recurrent models: the state checkpoints (see Truncate), taken after each full block of the
  // history (kCheckpointInterval = the prefix cache's block). Not all are kept: the last
  // kDenseCheckpoints, older ones ever sparser (the block j at distance d >= kDenseCheckpoints
  // from the newest stays while j + 1 is a multiple of 2^ceil(log2((d + 1) / kDenseCheckpoints))),
  // and at most kCheckpointBudgetBytes in all (never fewer than two): a real hybrid model's state
  // is tens to hundreds of MiB. Fewer checkpoints cost re-evaluation on truncation, never exactness.
  static constexpr int32_t kCheckpointInterval = 64;
  static constexpr size_t kDenseCheckpoints = 4;
  static constexpr size_t kCheckpointBudgetBytes = size_t(256) << 20;
  // Checkpoints held (tests, doc/state.md).
  size_t n_checkpoints() const;
  bool recurrent() const { return !state_.empty(); }
  Status EvalEvery(const int32_t* tokens, size_t n, float* logits);
  // Sets last_logits() (after a rollback, the logits of the position the session now ends at).
  void SetLastLogits(const float* logits);

  // Greedy decoding on a device engine: evaluates tokens and keeps only the index of the
  // largest last-position logit, computed where the logits are (4 bytes cross to the host).
  // has_logits() is false afterwards until FetchLogits() copies them.
  Status EvalKeepArgmax(const int32_t* tokens, size_t n);
  bool has_argmax() const { return has_argmax_; }
  int32_t last_argmax() const { return argmax_; }
  Status FetchLogits();
  // True when the engine's logits live off the host (then EvalKeepArgmax saves the copy).
  bool logits_on_device() const { return !host_; }

  // Shown but not yet evaluated: a token the caller has seen (the last token of a generation
  // that stopped before evaluating it) joins the conversation without a forward step now. Every
  // evaluation (Eval*, EvalEvery) evaluates the deferred tokens first, and each leaves this list
  // once evaluated, so Conversation() is always history() + deferred(); Truncate keeps them as
  // part of the conversation, Reset drops them, LoadState restores the saved ones.
  void Defer(int32_t token) { deferred_.push_back(token); }
  const std::vector<int32_t>& deferred() const { return deferred_; }

  // Log-probabilities of the tokens behind the piece a generation delivered last (generator.h:
  // GenerateOptions::n_logprobs): logprob_stride() entries per token, in sampling order.
  // Emptied when a generation starts or produces its next piece.
  std::vector<TokenLogprob>& piece_logprobs() { return piece_logprobs_; }
  const std::vector<TokenLogprob>& piece_logprobs() const { return piece_logprobs_; }
  size_t logprob_stride() const { return logprob_stride_; }
  void set_logprob_stride(size_t stride) { logprob_stride_ = stride; }

  // Batched decode (runtime/batcher.h): from now on this session's steps run on the model's
  // batching worker, together with the other sessions'. nullptr = on the session's own threads.
  // The batcher must outlive the session.
  void set_batcher(Batcher* batcher) { batcher_ = batcher; }
  bool batched() const { return batcher_ != nullptr; }
  const Batcher* batcher() const { return batcher_; }

  // The model's prefix cache (runtime/prefix_cache.h; must outlive the session; nullptr = none).
  // Only an exact session on an engine that can copy its KV rows uses it.
  void set_prefix_cache(PrefixCache* cache);
  // The control tokens generation shows in its text (sorted: the chat template's markers, which
  // the chat parser reads); set by ServedModel::CreateSession. nullptr = none.
  void set_shown_tokens(const std::vector<int32_t>* tokens) { shown_tokens_ = tokens; }
  const std::vector<int32_t>* shown_tokens() const { return shown_tokens_; }
  // The model's constraint vocabulary, which generation compiles constraints against; set by
  // ServedModel::CreateSession (must outlive the session). nullptr: a generation with a
  // constraint builds the vocabulary for itself (up to seconds each time).
  void set_constraint_vocab(const ConstraintVocab* vocab) { constraint_vocab_ = vocab; }
  const ConstraintVocab* constraint_vocab() const { return constraint_vocab_; }
  // A session on a draft model that drafts for this one (zf_session_set_draft_model); owned.
  void set_draft(std::unique_ptr<Session> draft) { draft_ = std::move(draft); }
  Session* draft() const { return draft_.get(); }
  // Prompt tokens taken from the prefix cache instead of being evaluated, since creation.
  int64_t cached_tokens() const { return cached_tokens_; }
  bool exact() const { return exact_; }

  // LoRA adapters (model/lora.h) applied by this session's evaluations from now on: adapters[i]
  // with scales[i] (finite; 0 leaves it out); none clears. The adapters must be of this
  // session's model; the session keeps them alive. The conversation's KV rows stay as they were
  // computed (as llama.cpp keeps them): Reset or Truncate for a fresh start under the new set.
  // Prefix cache: blocks are keyed by the adapter set and scales, so sessions with the same set
  // share them; a session whose conversation was computed under another set neither takes nor
  // stores blocks until its conversation is emptied (Reset, Truncate(0)). kUnsupported on an
  // engine whose activations are not in host memory (CUDA in this version).
  Status SetLoras(const std::vector<std::shared_ptr<const model::LoraAdapter>>& adapters,
                  const std::vector<float>& scales);
  const model::LoraPlan* lora() const { return lora_.get(); }

  void RequestCancel() { cancel_.store(true, std::memory_order_relaxed); }
  // True (and clears the request) if a cancel is pending.
  bool ConsumeCancel() { return cancel_.exchange(false, std::memory_order_relaxed); }

 private:
  Session(const model::Model& model, int32_t n_ctx) : model_(model), n_ctx_(n_ctx) {}
  // The context this session's next unbatched step runs on: its own (own_) where it keeps one,
  // else one borrowed from the model into *borrowed.
  Status Context(model::ForwardPool::Lease* borrowed, const model::ForwardPool::Lease** ctx);
  model::Forward::SeqState Seq() {
    return {kv_.get(), recurrent() ? &state_ : nullptr, rope_factors_, lora_.get(),
            TextPos(history_.size()) - int32_t(history_.size()), copies_.data(), int32_t(copies_.size())};
  }
  // M-RoPE models: the rope position of a text token at history index `at` (past every image
  // place's rows; `at` itself where the history has no image).
  int32_t TextPos(size_t at) const;
  // Truncate: image places past n_keep dropped, the one it cuts keeps its first rows.
  void CutPlaces(size_t n_keep);
  // Checks tokens (and that the deferred ones and they fit), then appends both via Append.
  Status EvalImpl(const int32_t* tokens, size_t n, float* logits, int32_t* argmax);
  // EvalEmbeddings' steps: rows[from..to) of rows whose key is `hash` (session_embd.cpp).
  Status EvalRows(const float* rows, uint64_t hash, bool bidirectional, bool keep_logits, size_t from, size_t to);
  // Recurrent models (Truncate): entries[from..to) of a kept conversation evaluated again, token
  // runs as tokens and embedding runs from embd_spans_ (session_embd.cpp).
  Status Replay(const std::vector<int32_t>& entries, size_t from, size_t to);
  // Appends tokens[0..n) (checked) to the history in forward steps.
  Status Append(const int32_t* tokens, size_t n, float* logits, int32_t* argmax);
  // Evaluates the deferred tokens alone (no output), before a step that cannot take them along.
  Status FlushDeferred();
  // Prefix cache: copies the cached blocks that continue the history with tokens[0..n) (at
  // most up to n - keep tokens) into the KV cache; returns how many tokens were taken.
  // partial: then also the rows a cached block shares with the next tokens inside the block
  // (ReuseRows).
  size_t ReuseBlocks(const int32_t* tokens, size_t n, size_t keep, bool partial = false);
  // Token-level reuse: the rows of the next tokens[0..n) (n within the block the history ends
  // in) that a cached block or tail following the history's chain agrees on; returns how many
  // were taken. Attention-only models (a recurrent state exists only at block ends).
  size_t ReuseRows(const int32_t* tokens, size_t n);
  // Stores the block the history ends in, when partial, as a tail (PrefixCache::StoreTail).
  void StoreTail();
  // Stores the history's full blocks not yet cached.
  void StoreBlocks();
  // The rows of the history's block `index` from cached block b (mapped or copied); false if the
  // engine could do neither.
  bool PutBlockRows(size_t index, const std::shared_ptr<const PrefixCache::Block>& b);
  // Maps b's pages (in the prefix cache's arena) as the rows of block `index`; false where the
  // engine or the system cannot.
  bool MapBlock(size_t index, const std::shared_ptr<const PrefixCache::Block>& b);
  // The rows of positions [pos, n_ctx) are forgotten: their memory and mappings given back.
  void ForgetRows(size_t pos);
  // block_keys_ for every full block of the history (recomputed after Truncate/LoadState).
  void SyncBlockKeys();
  // Recurrent models, after the history grew: the state checkpoint of a block boundary it ended
  // on; then older checkpoints thinned (see kDenseCheckpoints).
  void KeepCheckpoint();
  // Block j's checkpoint (empty: not kept) after the history passed its end, then the thinning.
  void SetCheckpoint(size_t j, std::vector<float> state);
  void ThinCheckpoints();
  // Recurrent models, before a step of `rows` rows from n_past(): the checkpoints of the block
  // boundaries it passes, as buffers its recurrent ops fill (copies_, in Seq()): those
  // keep[b - first_block] says stay for boundary b's checkpoint (all when keep is empty). The
  // step need not end on a boundary (one pass over the weights for up to max_batch_ rows).
  void PlanCopies(size_t rows, const std::vector<bool>& keep, size_t first_block);
  // After the step: its copies become the checkpoints (SetCheckpoint).
  void KeepCopies();
  // A checkpoint buffer of state_.size() floats (a spare one when there is), and where a dropped
  // one goes (kept as a spare while the spares and the checkpoints fit the byte budget).
  std::vector<float> SpareState();
  void Recycle(std::vector<float>* state);
  // The thinning on held[j] (block j has a checkpoint) of n = held->size() blocks, the first
  // `limit` of which may go: clears the entries ThinCheckpoints drops.
  void ThinPlan(std::vector<bool>* held, size_t limit) const;
  // Without a prefix cache: for the block boundaries [first, last) that an Append reaching
  // block `last` passes, whether that block's checkpoint is still held when it returns (the
  // others, thinned before anyone can read them, need no copy).
  std::vector<bool> CheckpointsKept(size_t first, size_t last) const;

  const model::Model& model_;
  int32_t n_ctx_;
  engine::KvType kv_k_ = engine::KvType::kF16, kv_v_ = engine::KvType::kF16;
  std::unique_ptr<engine::KvCache> kv_;   // the sequence's KV rows
  const float* rope_factors_ = nullptr;   // model::Forward::RopeFactors of n_ctx_
  int32_t max_batch_ = kMaxBatch;         // tokens per step: min(kMaxBatch, n_ctx)
  model::ForwardPool::Key fwd_key_{1, true};
  // A context of its own, kept for the session's life where the model's are not shared: on a
  // device engine (its logits stay on the device between steps; a decode graph records this
  // session's cache) or with a thread count other than the model's (a thread pool of its own).
  model::ForwardPool::Lease own_;
  bool host_ = true;  // the engine computes in host memory
  Batcher* batcher_ = nullptr;
  bool exact_ = true;
  const std::vector<int32_t>* shown_tokens_ = nullptr;
  const ConstraintVocab* constraint_vocab_ = nullptr;
  std::unique_ptr<Session> draft_;
  int64_t cached_tokens_ = 0;
  PrefixCache* prefix_cache_ = nullptr;  // set only when usable (exact, rows copyable)
  uint64_t chain_seed_ = 0;               // what makes this session's rows comparable
  uint64_t base_seed_ = 0;                // chain_seed_ without the LoRA set's key
  // LoRA: the applied plan (nullptr: none), the adapters it points into, and whether the
  // conversation holds rows of another set (then the prefix cache is not used; see SetLoras).
  std::unique_ptr<const model::LoraPlan> lora_;
  std::vector<std::shared_ptr<const model::LoraAdapter>> lora_adapters_;
  bool lora_mixed_ = false;
  std::vector<uint64_t> block_keys_;      // keys of the history's first full blocks
  size_t stored_blocks_ = 0;              // of those, how many are known to be in the cache
  std::vector<size_t> block_planes_;      // the bytes of each KV plane of one block (KvArena)
  // [block index]: the cached blocks whose pages the KV cache maps (empty: its own rows)
  std::vector<PrefixCache::Mapping> mapped_;
  // False after LoadState until the history is dropped: loaded rows may come from a session that
  // was not exact, and so may every row computed after them; they are not shared.
  bool store_blocks_ = true;
  std::vector<int32_t> history_;
  std::vector<int32_t> deferred_;  // see Defer()
  // Recurrent layers (empty for attention-only models): the state after history_, the states
  // after each full block of it ([history_.size() / kCheckpointInterval]; empty where thinned
  // out), and the state at mark_pos_ (where the last draft verification started; -1 = none).
  model::RecurrentState state_;
  std::vector<std::vector<float>> block_states_;
  // The step in flight's state copies (PlanCopies), the checkpoint index each becomes (with its
  // buffer; an empty one where not kept), and dropped checkpoints' buffers for the next ones (no
  // fresh pages per checkpoint).
  std::vector<model::StateCopy> copies_;
  std::vector<std::pair<size_t, std::vector<float>>> pending_;
  std::vector<std::vector<float>> spare_states_;
  // Recurrent models: the embedding rows evaluated, for Replay (row 0 at history position pos0).
  struct EmbdSpan {
    size_t pos0 = 0, n = 0;
    uint64_t hash = 0;
    std::vector<float> rows;
    int32_t cols = 0;  // M-RoPE: the image's grid columns (Replay places it again), else 0
  };
  std::vector<EmbdSpan> embd_spans_;
  // M-RoPE models: each image's place (EvalEmbeddings): its first row's history index, the rows
  // of it the history holds (n; fewer than rows x cols after a cut or a cancel), its grid, the
  // rope position t0 of its rows and its rows' key. Sorted by row0; saved with the state.
  struct ImagePlace {
    size_t row0 = 0, n = 0;
    int32_t rows = 0, cols = 0;
    int32_t t0 = 0;
    uint64_t hash = 0;
  };
  std::vector<ImagePlace> image_places_;
  int64_t mark_pos_ = -1;
  std::vector<float> mark_state_;
  std::vector<float> logits_;  // [n_vocab]
  std::vector<TokenLogprob> piece_logprobs_;
  size_t logprob_stride_ = 0;
  bool has_logits_ = false;
  bool has_argmax_ = false;
  int32_t argmax_ = 0;
  std::atomic<bool> cancel_{false};
};

}  // namespace zf::rt

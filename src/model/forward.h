// The forward pass, built from block variants dispatched per layer by the model description:
// the attention block, a dense FFN (gated or plain) or a MoE FFN, then the output head. Written
// only against engine::Backend. A Forward holds activation scratch, not sequences: each step
// receives its sequences' state (KV rows, recurrent state) from the caller, so any session of
// the model may run on any Forward (model/forward_pool.h lends them). Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "engine/thread_pool.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/recurrent_state.h"

namespace zf::model {

class Forward {
 public:
  // max_batch: tokens evaluated per step (prefill is split into chunks of this size);
  // max_seqs: sequences per RunBatch.
  Forward(const Model& model, engine::Backend& backend, int32_t max_batch, int32_t max_seqs = 1);

  // The frequency factors rope uses in a context of n_ctx positions (rope_freqs, or LongRoPE's
  // set for n_ctx; nullptr when the model has none): part of a sequence's state.
  static const float* RopeFactors(const Model& model, int32_t n_ctx);

  // One sequence's state as a step receives it: its KV rows (a cache of this Forward's engine;
  // nullptr only for a model without attention layers), its recurrent state (required when the
  // model has recurrent layers; see recurrent_state.h), its context's RopeFactors and the LoRA
  // adapters it applies (nullptr: none; host-memory backends only). rope_shift: a token at KV
  // row r rotates at position r + rope_shift (M-RoPE models after an image, whose rows take
  // fewer positions than rows; 0 otherwise). copies[0..n_copies): copies of the recurrent state
  // at positions the step passes (increasing pos; see StateCopy), written by the step.
  struct SeqState {
    engine::KvCache* kv;
    RecurrentState* state;
    const float* rope_factors;
    const LoraPlan* lora = nullptr;
    int32_t rope_shift = 0;
    const StateCopy* copies = nullptr;
    int32_t n_copies = 0;
  };

  int32_t max_batch() const { return max_batch_; }
  int32_t max_seqs() const { return max_seqs_; }

  // Ok, or why the backend cannot run this model (an op it lacks, or no memory for scratch).
  const Status& status() const { return status_; }

  // Evaluates tokens[0..n) of sequence `s` at positions pos0.. (n <= max_batch), appending to its
  // KV rows and advancing its recurrent state. If logits != nullptr, writes the last token's
  // n_vocab logits there. If argmax != nullptr, stores the index of the largest logit instead
  // (computed by the backend: on a GPU only the id crosses to the host); logits may then be
  // nullptr.
  void Run(const SeqState& s, const int32_t* tokens, int32_t n, int32_t pos0, float* logits, int32_t* argmax);
  // Embedding input: embd[0..n) rows of n_embd_inp() floats (host memory: n_embd, then Qwen3-VL's
  // deepstack slices, added to the first layers' outputs) in place of token embeddings
  // at positions pos0.. (n <= max_batch), taken as they are (llama.cpp does not scale embedding
  // input as it scales token rows); bidirectional: the step's rows also attend to its later rows
  // (Gemma 3's image tokens). rope_pos: M-RoPE models, each row's four positions (t, h, w, e;
  // 4 x n), or nullptr for positions pos0 + rope_shift.. as text. Host-memory backends, models
  // without per-layer token inputs.
  void RunEmbd(const SeqState& s, const float* embd, int32_t n, int32_t pos0, bool bidirectional, float* logits,
               const int32_t* rope_pos = nullptr);
  // Copies the logits of the last Run that asked only for the argmax into host memory.
  void ReadLogits(float* host);

  // Speculative verification: tokens[0..n) (n <= max_batch) at positions pos0.. evaluated as n
  // one-token steps of sequence `s` in one pass over the weights (each row attends
  // over the keys up to its own position, through the one-token attention), writing every
  // position's n_vocab logits to logits (n x n_vocab, host memory). Host-memory backends only;
  // with the backend's SetBatchInvariant(true) row i's logits equal those of Run() of token i.
  // Its recurrent state advances row by row: the rows are one sequence's, in order.
  void RunEveryLogit(const SeqState& s, const int32_t* tokens, int32_t n, int32_t pos0, float* logits);

  // One sequence of a batched step: its n tokens at positions pos0.. go to its KV rows `kv`
  // and attend over them; the products of every sequence's rows run together.
  struct Seq {
    engine::KvCache* kv;
    int32_t pos0;
    int32_t n;
    float* logits;   // host array for the last token's n_vocab logits, or nullptr
    int32_t* argmax;  // or the index of the largest of them, or nullptr
    const float* rope_factors;  // RopeFactors() of the sequence's context
    RecurrentState* state;      // the sequence's recurrent state (nullptr: attention-only model)
    const LoraPlan* lora = nullptr;  // its LoRA adapters (nullptr: none; host-memory backends only)
    int32_t rope_shift = 0;          // its rows rotate at KV row + rope_shift (SeqState::rope_shift)
    const int32_t* rope_pos = nullptr;  // or at these four positions per row (RunEmbd's rope_pos)
    // The state copies (SeqState::copies); those at positions in (pos0, pos0 + n] are written.
    const StateCopy* copies = nullptr;
    int32_t n_copies = 0;
  };
  // Runs the attention of a step's sequences (several tokens each) at once on `pool`'s threads,
  // one sequence per thread, thread i on workers[i] (a one-thread backend of the same engine:
  // each sequence's result as on its own); nullptr (the default): one after the other on this
  // Forward's backend. The pool must not be one the workers run on.
  void SetSequencePool(engine::ThreadPool* pool, engine::Backend* const* workers) {
    seq_pool_ = pool;
    workers_ = workers;
  }
  // The threads a step's LoRA products may spread their rows over (the model's shared pool, the
  // one this Forward's backend runs its ops on; nullptr: the calling thread alone).
  void SetLoraPool(engine::ThreadPool* pool) { lora_pool_ = pool; }
  // Evaluates the sequences' tokens (tokens: theirs one after the other, sum of n <= max_batch,
  // n_seq <= max_seqs) in one pass over the weights. Host-memory backends only. With the
  // backend's SetBatchInvariant(true) each sequence's logits equal those of Run() on its own.
  void RunBatch(const int32_t* tokens, const Seq* seqs, int32_t n_seq);

  // Embedding pass: the sequences' tokens as RunBatch evaluates them (no logits), then every
  // row's final state, after output_norm when the model has one (the reference's t_embd), to
  // host memory hidden [sum of n, n_embd]. Host-memory backends only.
  void RunHidden(const int32_t* tokens, const Seq* seqs, int32_t n_seq, float* hidden);
  // Rerankers' classification head over n pooled rows x [n, n_embd] (host):
  // scores [n, n_cls_out] = cls_out(tanh(cls x + b)) + b_out, the tanh layer only when the
  // model has cls.weight, a softmax over each row's scores when cls_softmax. The model must have
  // cls.output.weight. Host-memory backends only.
  void ClassifierHead(const float* x, int32_t n, float* scores);
  // The Dense projections after pooling, in place on n pooled rows x [n, n_embd] (host):
  // x = dense_3(dense_2 x); nothing when the model has none (ModelDesc::n_dense).
  void DenseOut(float* x, int32_t n);

 private:
  // A backend-owned activation buffer (host memory on the CPU, device memory on CUDA).
  struct ActBuf {
    float* p = nullptr;
    float* data() const { return p; }
  };
  // The layers over n rows belonging to the sequences seqs[0..n_seq) (rows in order); the
  // logits of each sequence's last row to logits + i * n_vocab when logits != nullptr.
  // embd != nullptr: the input rows themselves instead of the tokens' embeddings (RunEmbd).
  void RunOps(const int32_t* tokens, int32_t n, const Seq* seqs, int32_t n_seq, float* logits,
              const float* embd = nullptr);
  // The blocks: each reads the residual stream x_ and adds its output to it.
  void AttentionBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq);
  // MixerKind::kShortConv: in_proj, each sequence's rows through Backend::ShortConv with its own
  // state, out_proj.
  void ShortConvBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq);
  // MixerKind::kMamba2: ssm_in, each sequence's rows through Backend::Mamba2 with its own state,
  // ssm_out.
  void Mamba2Block(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq);
  // MixerKind::kGatedDeltaNet: the projections, each sequence's rows through
  // Backend::GatedDeltaNet with its own state, the gated per-head norm, ssm_out.
  void DeltaNetBlock(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq);
  void DenseFfn(int32_t il, int32_t n, const Seq* seqs, int32_t n_seq);
  // Sequence s's state copies (Seq::copies) as layer il's snapshots (in snaps_).
  engine::StateSnapshots Snapshots(const Seq& s, int32_t il);
  // LoRA: whether some sequence adapts layer il's weight t, and y += its low-rank products of
  // x for each sequence's rows (x rows of the product's input, y rows of its output).
  static bool HasLora(int32_t il, LoraTarget t, const Seq* seqs, int32_t n_seq);
  // Rows run on lora_pool_'s threads when it is set and the step has several adapted rows (each
  // row's result is a function of that row alone: the split does not change the bits).
  void Lora(int32_t il, LoraTarget t, const float* x, int32_t n_in, float* y, int32_t n_out, const Seq* seqs,
            int32_t n_seq);
  // Gemma 4's per-layer inputs of the step's n rows (from the token ids and the scaled input
  // embeddings in x_), one [n, n_embd_per_layer] block per layer in pl_; and the block that
  // adds layer il's to the residual stream.
  void PerLayerInputs(const int32_t* tokens, int32_t n);
  void PerLayerBlock(int32_t il, int32_t n);
  void MoeFfn(int32_t il, int32_t n);
  void OutputHead(const Seq* seqs, int32_t n_seq, float* logits);
  // y = norm(x) over rows of width n_embd (y may alias x), with the layer's kind and eps.
  void Norm(NormKind kind, float eps, const Tensor* w, const Tensor* b, const float* x, int32_t rows, float* y);
  // x += out (times the model's residual multiplier).
  void Residual(const float* out, int32_t n);
  // Qwen3-VL: slice il + 1 of the step's input rows (RunEmbd's embd) added to layer il's output.
  void DeepstackAdd(const float* embd, int32_t il, int32_t n);

  const Model& model_;
  engine::Backend& be_;
  int32_t max_batch_;
  int32_t max_seqs_;
  // Scratch, sized for max_batch rows and the widest layer: x/h [B, n_embd (or attn out)],
  // q/k/v/attn, gate/up [B, n_ff], MoE: router [B, n_expert], gathered input / output [B, n_embd].
  ActBuf x_, h_, q_, k_, v_, attn_, gate_, up_, logits_;
  ActBuf router_, moe_in_, moe_out_, moe_acc_;
  ActBuf moe_x_;  // Gemma 4 MoE: the router's and then the experts' normed input [B, n_embd]
  // Per-layer inputs: all layers' rows as computed [B, n_layer * n_pl], then per layer [n_layer][B][n_pl].
  ActBuf pl_all_, pl_, pl_gate_;
  // K/V rows of a layer narrower than the cache, padded to its width (zero elsewhere).
  ActBuf k_pad_, v_pad_;
  ActBuf conv_;  // short convolutions: in_proj's [B, 3 * n_embd]
  ActBuf ssm_;   // Mamba-2: ssm_in's [B, d_in_proj]
  ActBuf q_full_, q_gate_;  // gated attention (q_gate): Q's rows with the gates [B, 2 * q], the gates [B, q]
  // Gated DeltaNet: [q | k | v] before the convolution [B, channels], z [B, value_dim], the
  // alpha then beta projections [2][B, n_v_heads].
  ActBuf delta_qkv_, delta_z_, delta_ab_;
  std::vector<int32_t> pos_;
  // M-RoPE: the step's four positions per row, used when mrope_step_ (a row with 2D positions,
  // or text that plain rope cannot rotate: ModelDesc::MropeTextPlain).
  std::vector<int32_t> mpos_;
  bool mrope_step_ = false;
  bool mrope_text_ = false;  // !ModelDesc::MropeTextPlain()
  bool bidirectional_ = false;  // this step's rows attend both ways (RunEmbd)
  std::vector<int32_t> zeros_;  // [max_batch] token type 0 of every row
  engine::ThreadPool* seq_pool_ = nullptr;
  engine::ThreadPool* lora_pool_ = nullptr;
  // A step's adapted rows (Lora), grouped by adapter set (LoraPlan::key) and cut into tasks.
  struct LoraTask {
    const std::vector<LoraPlan::Term>* terms;
    int32_t first, n;  // lora_rows_[first, first + n)
  };
  std::vector<int32_t> lora_rows_;
  std::vector<std::pair<uint64_t, int32_t>> lora_keyed_;  // (plan key, row), sorted
  std::vector<const std::vector<LoraPlan::Term>*> lora_terms_;  // [row] its terms
  std::vector<int32_t> lora_group_start_;  // index into lora_rows_ of each group's first row, then the end
  std::vector<LoraTask> lora_tasks_;
  engine::Backend* const* workers_ = nullptr;  // [seq_pool_->size()]
  std::vector<int32_t> seq_order_, seq_row_;  // a step's sequences, longest first, and their first rows
  std::vector<engine::Backend::DecodeRow> attn_rows_;  // a batched decode step's attention rows
  std::vector<Seq> every_;  // RunEveryLogit's one-row sequences
  std::vector<engine::StateSnapshot> snaps_;  // Snapshots' result
  // MoE routing on the host: per token the selected experts and weights, and per expert its rows.
  std::vector<int32_t> sel_;
  std::vector<float> sel_w_;
  std::vector<float> probs_;
  std::vector<std::vector<int32_t>> expert_rows_;
  Status status_;
};

}  // namespace zf::model

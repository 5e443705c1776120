// The compute interface every engine implements (CPU, CUDA): the forward pass in model/forward.cpp
// is written only against this table of operations.
//
// Conventions: activations are row-major float arrays owned by the backend's scratch (host
// memory for the CPU engine, device memory for CUDA); weights are GGUF tensors in their stored
// quantized layout (matrices have ne[0] = input features, ne[1] = output features). A Backend
// holds scratch (the CPU engine's threads are the model's, shared), not sequences: each step
// receives the sequence's KV rows (engine/kv_cache.h) from its caller, so the model's sessions
// share backends (model/forward_pool.h). Thread-compatible, not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/lazy_buffer.h"
#include "common/status.h"
#include "gguf/gguf.h"
#include "engine/kv_cache.h"
#include "engine/ops.h"

namespace zf::engine {

using Tensor = gguf::TensorInfo;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // A KV cache for one sequence in this engine's memory: n_layer x n_ctx positions of k_width
  // (= n_head_kv*head_dim_k) and v_width elements; any backend of the engine computes on it.
  // K rows in k_type, V rows in v_type. kOutOfMemory (or kUnsupported for a type the engine
  // does not keep, kInvalidArgument for a width that is not whole blocks) on failure.
  virtual Status CreateKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type,
                          KvType v_type, std::unique_ptr<KvCache>* out) = 0;
  // K and V in the same type.
  Status CreateKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType type,
                  std::unique_ptr<KvCache>* out) {
    return CreateKv(n_layer, n_ctx, k_width, v_width, type, type, out);
  }

  // out[t, :] = dequantized row ids[t] of `table`, times `scale`.
  virtual void GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) = 0;
  // y[t, :] = W x[t, :] for t < n_tok (x: n_tok x w.ne[0], y: n_tok x w.ne[1]).
  virtual void MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) = 0;
  // Optional (default: one MatMul per weight): y[i] = W[i] x for i < n, several weights applied
  // to the same input (Q, K, V; gate, up), so an engine can convert x once and share the work.
  virtual void MatMulShared(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok) {
    for (int32_t i = 0; i < n; ++i) MatMul(*w[i], x, n_tok, y[i]);
  }
  // Optional (default: MatMulShared of both, then GatedActivation): the first half of a gated
  // FFN, gate = act(W_gate x) * (W_up x) (up receives W_up x), so an engine can apply the
  // activation where the rows are produced instead of in a pass of its own.
  virtual void MatMulGated(Activation act, const Tensor& w_gate, const Tensor& w_up, const float* x,
                           int32_t n_tok, float* gate, float* up) {
    const Tensor* w[2] = {&w_gate, &w_up};
    float* y[2] = {gate, up};
    MatMulShared(w, y, 2, x, n_tok);
    GatedActivation(act, gate, up, int64_t{n_tok} * w_gate.ne[1]);
  }
  // y[r, :] = x[r, :] / rms(x[r, :]) * w  (y may alias x); w == nullptr (only when
  // Supports(kUnweightedNorm)): no weight.
  virtual void RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) = 0;
  // x[t, :] += b  for each of `rows` rows of width n.
  virtual void AddBias(float* x, const float* b, int32_t rows, int32_t n) = 0;
  // x += y over n elements.
  virtual void Add(float* x, const float* y, int64_t n) = 0;
  // Rotary embedding in place on x (n_tok x n_heads x head_dim) at positions pos[t] (with
  // rp.sections: four per token, pos[4t .. 4t + 3] = t, h, w, e).
  virtual void Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
                    const RopeParams& rp) = 0;
  // gate[i] = act(gate[i]) * up[i] over n elements.
  virtual void GatedActivation(Activation act, float* gate, const float* up, int64_t n) = 0;
  // Writes k/v rows for positions pos0..pos0+n_tok-1 of `layer` into `kv` (a cache this
  // engine made).
  virtual void StoreKv(KvCache& kv, int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) = 0;
  // Causal attention of n_tok queries (positions pos0..) over `kv`'s rows of `layer`;
  // out: n_tok x (n_head*head_dim_v).
  virtual void Attention(const KvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                         const AttentionParams& ap, float* out) = 0;
  // Batched decode: one query row per sequence at position `pos`, over that sequence's cache
  // `kv` (its K/V row for pos already stored); out as Attention's. An engine may run all rows at
  // once; the default runs them one after the other.
  struct DecodeRow {
    const KvCache* kv;
    const float* q;
    int32_t pos;
    float* out;
  };
  virtual void AttentionRows(int32_t layer, const DecodeRow* rows, int32_t n, const AttentionParams& ap) {
    for (int32_t i = 0; i < n; ++i) Attention(*rows[i].kv, layer, rows[i].q, 1, rows[i].pos, ap, rows[i].out);
  }
  // x = cap * tanh(x / cap) over n elements.
  virtual void Softcap(float* x, int64_t n, float cap) = 0;

  // ---- Batched decode (runtime/batcher.h): each row of the following products is a different
  // sequence's next token. With `on`, every product computes each of its rows exactly (bit for
  // bit) as a one-token product would, so a sequence's result does not depend on what else is
  // in the batch. False when the engine cannot (then nothing changes). ----
  virtual bool SetBatchInvariant(bool on) { return !on; }

  // ---- Ops of engine/ops.h's Op list: only called when Supports(op). ----
  virtual bool Supports(Op op) const { return false; }
  // y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * w (+ b when b != nullptr); y may alias x.
  virtual void LayerNorm(const float* x, const float* w, const float* b, int32_t rows, int32_t n, float eps, float* y) {}
  // x *= s over n elements.
  virtual void Scale(float* x, int64_t n, float s) {}
  // x += s * y over n elements.
  virtual void AddScaled(float* x, const float* y, int64_t n, float s) {}
  // x = act(x) over n elements (an FFN without a gate).
  virtual void Activate(Activation act, float* x, int64_t n) {}
  // kStridedRows: dst[r * dst_stride + i] = src[r * src_stride + i] for r < rows, i < width.
  virtual void CopyRows(const float* src, int64_t src_stride, int32_t rows, int32_t width, float* dst,
                        int64_t dst_stride) {}
  // kShortConv: LFM2's gated short convolution over n_tok consecutive positions of ONE sequence.
  // bcx: n_tok rows [b | c | x] of 3 * width; kernel: [width][l_cache] (channel c's taps, oldest
  // first); state: [l_cache - 1][width], the sequence's previous values of b * x, oldest first,
  // updated to the last l_cache - 1 positions. y[t, c] = c[t, c] * sum_j kernel[c, j] * u[t + j, c]
  // where u is the state followed by the rows' b * x (the reference's ssm_conv order of sums).
  // Each position's result depends only on its own window: chunking does not change the bits.
  // snaps: the state after given rows also copied out (StateSnapshot; the same bits as a step
  // ending there leaves), here and in Mamba2 and GatedDeltaNet.
  virtual void ShortConv(const float* bcx, int32_t n_tok, int32_t width, const float* kernel, int32_t l_cache,
                         float* state, const StateSnapshots& snaps, float* y) {}
  // kMamba2: Mamba-2's mixer between ssm_in and ssm_out over n_tok consecutive positions of ONE
  // sequence, token by token (the exact recurrence, also in prefill). zxbcdt: n_tok rows of
  // ssm_in's output [z (d_inner) | xBC (channels) | dt (n_head)]; state: the layer's
  // RecurrentState floats, [d_conv - 1][channels] conv inputs (oldest first), then
  // [n_head][head_dim][d_state] scan state; y: n_tok rows of d_inner (group-normed, gated).
  virtual void Mamba2(const float* zxbcdt, int32_t n_tok, const Mamba2Params& p, float* state,
                      const StateSnapshots& snaps, float* y) {}
  // kGatedDeltaNet: Qwen3.5's linear attention over n_tok consecutive positions of ONE sequence,
  // from the projections to the per-head outputs (model/description.h, MixerKind::kGatedDeltaNet).
  // qkv: n_tok rows of p.channels() [q | k | v] before the convolution; alpha, beta: n_tok rows of
  // n_v_heads raw projections; state: the convolution's last d_conv - 1 input rows (oldest
  // first) then [n_v_heads][head_k_dim][head_v_dim] (key-major), updated; y: n_tok rows of
  // n_v_heads * head_v_dim. Positions run in order (the exact recurrence, no chunked form), so a
  // split into steps does not change the bits.
  virtual void GatedDeltaNet(const float* qkv, const float* alpha, const float* beta, int32_t n_tok,
                             const DeltaNetParams& p, float* state, const StateSnapshots& snaps, float* y) {}
  // kAttnOutputGate: x[i] *= sigmoid(gate[i]) over n elements.
  virtual void SigmoidGate(float* x, const float* gate, int64_t n) {}

  // ---- Activation memory and step hooks. Defaults (host memory, nothing recorded) are what the
  // CPU engine uses; a device engine overrides them. ----

  // A buffer of n floats for activations, owned by the backend until it is destroyed (host
  // memory by default, device memory on CUDA). nullptr when out of memory.
  virtual float* AllocActivations(size_t n);
  // True when activation buffers are host memory (callers may then read/write them directly).
  virtual bool HostActivations() const { return true; }
  // Copies n floats of an activation buffer into host memory (waits for pending work).
  virtual void ReadActivations(const float* src, size_t n, float* host);
  // Bracket one evaluation step (the ops of Forward::Run). BeginStep returns true when the
  // backend has already executed the whole step (a replayed CUDA graph): the caller skips the
  // ops. EndStep returns true when the ops since BeginStep were only recorded, not executed
  // (graph capture failed), so the caller must issue them again. `kv`: the step's sequence's
  // cache (a recorded step is only replayed on the same one, by KvCache::id()).
  virtual bool BeginStep(const KvCache* kv, const int32_t* tokens, int32_t n, int32_t pos0, bool logits) {
    return false;
  }
  virtual bool EndStep() { return false; }
  // Index of the largest of n values of an activation buffer, computed where the buffer lives
  // (on the device only 4 bytes cross to the host). Lowest index among equal maxima.
  virtual int32_t Argmax(const float* x, int32_t n);
  // The first error of an op since the last call, then cleared (ops return void; a device
  // engine can fail at run time). Always Ok on the CPU.
  virtual Status TakeError() { return Status::Ok(); }

 private:
  // AllocActivations' default storage: zero pages committed on first write, so a session that
  // only ever evaluates a few rows at a time (decode, a short suffix after a cached prefix) holds
  // those rows' pages, not max_batch rows of every buffer.
  std::vector<std::unique_ptr<LazyBuffer>> host_buffers_;
};

class PackedWeights;
class ThreadPool;
// The CPU engine with n_threads workers (the caller's thread included) on a pool of its own, or
// on `pool` (shared, e.g. the model's; then n_threads is the pool's size); `packed` (the model's
// repacked decode copies, may be null) and `pool` must outlive it.
std::unique_ptr<Backend> CreateCpuBackend(int32_t n_threads, const PackedWeights* packed = nullptr,
                                          ThreadPool* pool = nullptr);

}  // namespace zf::engine

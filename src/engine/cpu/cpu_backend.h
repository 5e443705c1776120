// The CPU engine: quantized matmuls through quant/ (SIMD picked once at run time), norms, rope,
// attention over an F16/F32 KV cache, all split across a persistent thread pool. Its methods are
// defined by job: cpu_backend.cpp, cpu_matmul.cpp, cpu_elementwise.cpp, cpu_attention.cpp,
// cpu_kv_cache.cpp.
// Thread-compatible: one thread at a time. The thread pool is usually the model's (shared by
// all its backends, engine.cpp); the scratch is this one's; KV rows come with each call
// (cpu_kv_cache.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/lazy_buffer.h"
#include "engine/backend.h"
#include "engine/cpu/cpu_kv_cache.h"
#include "engine/cpu/packed_weights.h"
#include "engine/thread_pool.h"

namespace zf::engine {

class CpuBackend final : public Backend {
 public:
  // Runs on `pool` (not owned; must outlive it) or, when null, on a pool of its own of
  // n_threads threads.
  CpuBackend(int32_t n_threads, const PackedWeights* packed = nullptr, ThreadPool* pool = nullptr);
  const char* name() const override { return "cpu"; }

  using Backend::CreateKv;
  Status CreateKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type, KvType v_type,
                  std::unique_ptr<KvCache>* out) override {
    return CpuKvCache::Create(n_layer, n_ctx, k_width, v_width, k_type, v_type, out);
  }
  void GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) override;
  void MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) override;
  void MatMulShared(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok) override;
  void MatMulGated(Activation act, const Tensor& w_gate, const Tensor& w_up, const float* x, int32_t n_tok,
                   float* gate, float* up) override;
  void RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) override;
  void AddBias(float* x, const float* b, int32_t rows, int32_t n) override;
  void Add(float* x, const float* y, int64_t n) override;
  void Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
            const RopeParams& rp) override;
  void GatedActivation(Activation act, float* gate, const float* up, int64_t n) override;
  void StoreKv(KvCache& kv, int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) override;
  void Attention(const KvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                 const AttentionParams& ap, float* out) override;
  void AttentionRows(int32_t layer, const DecodeRow* rows, int32_t n, const AttentionParams& ap) override;
  void Softcap(float* x, int64_t n, float cap) override;
  bool Supports(Op) const override { return true; }
  bool SetBatchInvariant(bool on) override {
    invariant_ = on;
    return true;
  }
  void LayerNorm(const float* x, const float* w, const float* b, int32_t rows, int32_t n, float eps, float* y) override;
  void Scale(float* x, int64_t n, float s) override;
  void AddScaled(float* x, const float* y, int64_t n, float s) override;
  void Activate(Activation act, float* x, int64_t n) override;
  void CopyRows(const float* src, int64_t src_stride, int32_t rows, int32_t width, float* dst,
                int64_t dst_stride) override;
  void ShortConv(const float* bcx, int32_t n_tok, int32_t width, const float* kernel, int32_t l_cache, float* state,
                 const StateSnapshots& snaps, float* y) override;
  void Mamba2(const float* zxbcdt, int32_t n_tok, const Mamba2Params& p, float* state, const StateSnapshots& snaps,
              float* y) override;
  void GatedDeltaNet(const float* qkv, const float* alpha, const float* beta, int32_t n_tok, const DeltaNetParams& p,
                     float* state, const StateSnapshots& snaps, float* y) override;
  void SigmoidGate(float* x, const float* gate, int64_t n) override;

 private:
  // Per-thread attention scratch for a cache of n_ctx positions: scores + one k/v row.
  static size_t AttnScratchPerThread(int32_t n_ctx, int32_t k_width, int32_t v_width);
  // attn_scratch_ grown to per_thread floats for each thread of the pool.
  float* AttnScratch(size_t per_thread);
  // A depthwise conv kernel [channels][taps] as [taps][channels] (cpu_mamba2.cpp), made once
  // per kernel: kernels are the model's weights, unchanged while its backends live.
  const float* TransposedConv(const float* kernel, size_t channels, int32_t taps);

  std::unique_ptr<ThreadPool> own_pool_;  // only when no shared pool was given
  ThreadPool* pool_;
  const PackedWeights* packed_;  // the model's decode copies (not owned; may be null)
  // Batched decode (SetBatchInvariant): products with several rows take the one-token paths.
  bool invariant_ = false;
  // Activation rows quantized to the weight's vec-dot type (grown on demand, reused).
  std::vector<uint8_t> act_q_;
  // Prefill: per-thread weight rows requantized to Q8_0 and their float staging row.
  std::vector<uint8_t> gemm_rows_;
  std::vector<float> gemm_f32_;
  std::vector<float> gemm_asum_;         // per token, per 32-block: activation scale x sum of quants
  std::vector<uint8_t> gemm_unpacked_;  // prefill: per-thread 16 rows unpacked from a packed copy
  std::vector<float> kv_stage_;         // prefill attention: one layer's K then V rows in F32
  std::vector<float> rope_cs_;          // cos/sin of one position's rotation angles
  std::vector<float> conv_window_;      // ShortConv: the state then the step's b * x rows
  std::vector<float> ssm_xbc_;          // Mamba2: the convolved, activated [x | B | C] rows
  std::vector<float> ssm_dt_;           // Mamba2: per head the step's dt, then exp(dt * A)
  std::vector<float> delta_qkv_;        // GatedDeltaNet: convolved, normed q | k | v of the step
  // Mamba2, GatedDeltaNet: each layer's conv kernel as [taps][channels], by its weights' address.
  std::unordered_map<const float*, std::vector<float>> conv_t_;
  std::vector<float> delta_gb_;         // GatedDeltaNet: per head the step's decays, then betas
  // Decode: what rope_cs_'s first slot holds (Q and K of a layer, and every layer with the same
  // rotation, share one position's angles).
  struct RopeKey {
    int32_t pos = -1, n_rot = 0;
    float base = 0.0f, freq_scale = 0.0f, attn_factor = 0.0f;
    const float* freq_factors = nullptr;
    float ext_factor = 0.0f;
    int32_t n_ctx_orig = 0;
    float beta_fast = 0.0f, beta_slow = 0.0f;
    bool operator==(const RopeKey& o) const {
      return pos == o.pos && n_rot == o.n_rot && base == o.base && freq_scale == o.freq_scale &&
             attn_factor == o.attn_factor && freq_factors == o.freq_factors && ext_factor == o.ext_factor &&
             n_ctx_orig == o.n_ctx_orig && beta_fast == o.beta_fast && beta_slow == o.beta_slow;
    }
  } rope_key_;
  enum class MatMulPath { kGemmPacked, kDecodePacked, kEach, kGemmQ8, kGemvPacked, kGemvRows };
  // How the product of n weights (sharing the input) with n_tok tokens runs (cpu_matmul.cpp).
  MatMulPath ChoosePath(const Tensor* const* w, int32_t n, int32_t n_tok) const;
  void MatMulQ8Gemm(const Tensor& w, const float* x, int32_t n_tok, float* y);
  // Prefill on row-interleaved tiles packed per call (quant/gemm_packed.h): y[i] = w[i] x for
  // i < n_w (<= 4) weights of the same input width, x quantized once.
  void MatMulPacked(const Tensor* const* w, float* const* y, int32_t n_w, const float* x, int32_t n_tok);
  static bool UsePacked(const Tensor& w, int32_t n_tok);
  // Decode (one token) through the packed copies: the n (<= 4) products of one input in one
  // pool run, rows split by bytes; with `gated`, w[0]/w[1] are gate/up of one shape, split by
  // rows, and each thread applies the activation to the rows it produced. False (nothing done)
  // when a weight has no packed copy or the shapes do not fit.
  // gate[i] = act(gate[i]) * up[i] on the calling thread.
  static void ApplyGated(Activation act, float* gate, const float* up, int64_t n);
  bool DecodePacked(const Tensor* const* w, float* const* y, int32_t n, const float* x, int32_t n_tok,
                    const Activation* gated);
  // Decode work split (DecodePacked): per thread, the chunks of its share not yet taken, as
  // front (low 32 bits) and back (high 32 bits, exclusive); one cache line each.
  struct alignas(64) ChunkRange {
    std::atomic<uint64_t> range{0};
  };
  std::unique_ptr<ChunkRange[]> decode_ranges_;
  std::vector<float> pack_ad_;    // [n_tok][k/32] activation block scales
  std::vector<float> pack_asum_;  // per weight: [n_tok][k/group] activation scale x group sum of quants
  std::vector<int32_t> pack_aoff_;  // per weight: [n_tok][k/group] -offset x group sum (fixed-offset formats)
  std::vector<uint8_t> pack_tiles_;  // per thread: one packed tile + one unpacked row
  // Prefill attention in blocks of query rows (engine/cpu/attention_kernels.h).
  void AttentionBlocked(const CpuKvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                        const AttentionParams& ap, float* out);
  // Decode attention with an F16 cache: the heads of each KV group together
  // (attention_kernels.h, DecodeGroup), heads split evenly across threads.
  void AttentionDecode(const CpuKvCache& kv, int32_t layer, const float* q, int32_t pos0, const AttentionParams& ap,
                       float* out);
  // Prefill rows one by one through the decode kernel (SetBatchInvariant: exact prefill).
  void AttentionRowsExact(const CpuKvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                          const AttentionParams& ap, float* out);
  // Exact prefill in tiles of rows over the staged layer (attention_kernels.h, ExactTile): the
  // bits of AttentionRowsExact's per-row path (AVX-512, F16 cache); max_blocks: the most KV
  // blocks (attn::SplitBlocks) of the call's rows.
  void AttentionExactTiles(const CpuKvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                           const AttentionParams& ap, float* out, int32_t max_blocks);
  // last: the last key the row sees when later than pos0 (a bidirectional step), else -1.
  static void DecodeHeads(const CpuKvCache& cache, int32_t layer, const float* q, int32_t pos0,
                          const AttentionParams& ap, float* out, int32_t h0, int32_t h1, float* scratch,
                          int32_t last = -1);
  std::vector<float> kt_stage_;    // [n_head_kv][head_dim_k][n_pos + pad]: this layer's K transposed
  std::vector<float> attn_block_;  // per thread: Q rows, score rows, conversion rows
  // Per-thread attention scratch (AttnScratch), grown to the largest cache seen.
  std::vector<float> attn_scratch_;
};

}  // namespace zf::engine

// LoRA adapters: a GGUF adapter file as llama.cpp's convert_lora_to_gguf.py writes it
// (general.type = "adapter", adapter.type = "lora", adapter.lora.alpha; per adapted weight W the
// pair "<W's name>.lora_a" with ne = [n_in, rank] and "<W's name>.lora_b" with ne = [rank,
// n_out]) loaded against a model, and what a session applies: y = W x + s * B (A x) for every
// adapted weight, s = scale * alpha / rank (scale alone when alpha is 0 or absent).
//
// Adaptable weights: the attention projections (attn_q, attn_k, attn_v, attn_output) and the
// dense FFN's (ffn_gate, ffn_up, ffn_down) of every layer, as the model's files hold them
// separately (a fused attn_qkv or ffn_up, MoE experts, token_embd and output are refused with a
// message naming the tensor). The adapter's matrices are dequantized to F32 at load; the low-rank
// product runs in F32 on the host, each row on its own with a fixed order of sums, so a row's
// result does not depend on how many rows a step holds (prefill chunks, batched decode).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace zf::model {

class Model;

enum class LoraTarget : int32_t { kQ, kK, kV, kOut, kGate, kUp, kDown, kCount };

// One adapted weight's pair, F32, row-major as in the file.
struct LoraWeight {
  int32_t rank = 0, n_in = 0, n_out = 0;
  std::vector<float> a;  // [rank][n_in]
  std::vector<float> bt;  // lora_b transposed: [rank][n_out]
};

// Immutable after Load: any number of sessions may apply it at once.
class LoraAdapter {
 public:
  // kFormat: not a LoRA adapter (general.type, adapter.type), a pair missing one half, a tensor
  // of another suffix; kInvalidArgument: another architecture, a tensor the model lacks, shapes
  // that do not match the model's tensor or each other; kUnsupported: a weight this engine does
  // not adapt, a tensor type it cannot read (F32, F16, BF16 and Q8_0 are read); kIo.
  static Status Load(const Model& model, const std::string& path, std::unique_ptr<LoraAdapter>* out);

  float alpha() const { return alpha_; }
  // The largest rank of its pairs (they may differ).
  int32_t rank() const { return rank_; }
  size_t n_weights() const { return n_weights_; }
  // Unique in the process (never reused), for cache keys.
  uint64_t id() const { return id_; }
  const Model& model() const { return *model_; }
  // The pair adapting layer il's weight t, or nullptr.
  const LoraWeight* Find(int32_t il, LoraTarget t) const {
    return layers_[size_t(il)][size_t(t)].get();
  }
  // The factor of B (A x) for a caller's scale (the reference's rule).
  float EffectiveScale(const LoraWeight& w, float scale) const {
    return alpha_ != 0.0f ? scale * alpha_ / float(w.rank) : scale;
  }

 private:
  LoraAdapter() = default;
  const Model* model_ = nullptr;
  float alpha_ = 0.0f;
  int32_t rank_ = 0;
  size_t n_weights_ = 0;
  uint64_t id_ = 0;
  std::vector<std::array<std::unique_ptr<LoraWeight>, size_t(LoraTarget::kCount)>> layers_;
};

// The adapters a session applies, flattened per layer and weight into (pair, effective scale)
// terms in the order given. Adapters with scale 0 are left out (the base model's bits).
class LoraPlan {
 public:
  struct Term {
    const LoraWeight* w;
    float scale;
  };
  LoraPlan(const std::vector<const LoraAdapter*>& adapters, const std::vector<float>& scales, int32_t n_layer);
  bool empty() const { return empty_; }
  // Identifies the adapters and scales (0 for an empty plan).
  uint64_t key() const { return key_; }
  // Layer il's terms for weight t, or nullptr when none.
  const std::vector<Term>* Terms(int32_t il, LoraTarget t) const {
    const std::vector<Term>& v = layers_[size_t(il)][size_t(t)];
    return v.empty() ? nullptr : &v;
  }

 private:
  std::vector<std::array<std::vector<Term>, size_t(LoraTarget::kCount)>> layers_;
  uint64_t key_ = 0;
  bool empty_ = true;
};

// y[r, :] += sum over terms scale * B (A x[r, :]) for rows r < n (x: n rows of n_in, y: n rows
// of n_out, both contiguous). Host memory.
void ApplyLora(const std::vector<LoraPlan::Term>& terms, const float* x, int32_t n, float* y);

// The same for the rows rows[0..n_rows) of x (row stride n_in) and y (row stride n_out): rows
// that share an adapter set are done together, so each A and B row is read once for all of
// them, not once per row. Each row's result is bit for bit what ApplyLora gives it alone (the
// same products and sums in the same order).
void ApplyLoraRows(const std::vector<LoraPlan::Term>& terms, const float* x, int32_t n_in, float* y, int32_t n_out,
                   const int32_t* rows, int32_t n_rows);

}  // namespace zf::model

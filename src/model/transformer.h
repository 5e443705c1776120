// The shared transformer body (llama, gemma3, ...): embeddings -> blocks -> norm -> logits,
// written against engine::Backend. One Forward object per session holds its scratch buffers.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "model/model.h"

namespace zf::model {

class Forward {
 public:
  // max_batch: tokens evaluated per step (prefill is split into chunks of this size).
  Forward(const Model& model, engine::Backend& backend, int32_t max_batch);

  int32_t max_batch() const { return max_batch_; }

  // False when the backend could not allocate the scratch buffers.
  bool ok() const { return ok_; }

  // Evaluates tokens[0..n) at positions pos0.. (n <= max_batch), appending to the KV cache.
  // If logits != nullptr, writes the last token's n_vocab logits there. If argmax != nullptr,
  // stores the index of the largest logit instead (computed by the backend: on a GPU only the
  // id crosses to the host); logits may then be nullptr.
  void Run(const int32_t* tokens, int32_t n, int32_t pos0, float* logits, int32_t* argmax = nullptr);
  // Copies the logits of the last Run that asked only for the argmax into host memory.
  void ReadLogits(float* host);

 private:
  // A backend-owned activation buffer (host memory on the CPU, device memory on CUDA).
  struct ActBuf {
    float* p = nullptr;
    float* data() const { return p; }
  };
  // The ops of one step; logits_out (an activation buffer or host memory on the CPU) or nullptr.
  void RunOps(const int32_t* tokens, int32_t n, int32_t pos0, float* logits_out);

  const Model& model_;
  engine::Backend& be_;
  int32_t max_batch_;
  // Scratch, sized for max_batch rows: x/h [B, n_embd], q [B, n_head*hd_k], k [B, n_kv*hd_k],
  // v [B, n_kv*hd_v], attn [B, n_head*hd_v], gate/up [B, n_ff], pos [B].
  ActBuf x_, h_, q_, k_, v_, attn_, gate_, up_;
  ActBuf logits_;  // [n_vocab]: the logits when they cannot go straight to the caller's array
  std::vector<int32_t> pos_;
  bool ok_ = false;
};

}  // namespace zf::model

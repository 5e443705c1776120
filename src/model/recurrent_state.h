// One sequence's recurrent state: for each layer with a recurrent mixer (description.h,
// RecurrentStateFloats) a float buffer of that layer's declared size, all in one host array so a
// snapshot is one copy; nothing for attention layers, whose state is the sequence's KV rows.
// All zeros is the state before the first token. Owned by the sequence (runtime::Session),
// handed to every forward step explicitly (Forward::Run, Forward::Seq). Thread-compatible.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/description.h"

namespace zf::model {

// A copy of a sequence's whole state (RecurrentState::size() floats, values()' layout) as it is
// after the sequence's first `pos` rows (KV rows [0, pos)), written by the step that passes
// there (Forward::SeqState::copies): the session's checkpoints at block boundaries inside a
// step (engine::StateSnapshot per layer).
struct StateCopy {
  int32_t pos;
  float* state;
};

class RecurrentState {
 public:
  RecurrentState() = default;
  explicit RecurrentState(const ModelDesc& d) {
    offset_.assign(size_t(d.n_layer), 0);
    size_t total = 0;
    for (int32_t il = 0; il < d.n_layer; ++il) {
      offset_[size_t(il)] = total;
      total += RecurrentStateFloats(d, d.layers[size_t(il)]);
    }
    data_.assign(total, 0.0f);
  }
  // True when the model has no recurrent layer (then there is nothing to keep).
  bool empty() const { return data_.empty(); }
  // Layer il's state (only meaningful for a recurrent layer).
  float* layer(int32_t il) { return data_.data() + offset_[size_t(il)]; }
  // Where layer il's floats start in values() (and in a copy of them: StateCopy).
  size_t offset(int32_t il) const { return offset_[size_t(il)]; }
  // Every layer's state, for snapshots and session state (size() floats).
  const std::vector<float>& values() const { return data_; }
  size_t size() const { return data_.size(); }
  size_t bytes() const { return data_.size() * sizeof(float); }
  void Assign(const float* v) { std::copy(v, v + data_.size(), data_.begin()); }
  void Clear() { std::fill(data_.begin(), data_.end(), 0.0f); }

 private:
  std::vector<float> data_;
  std::vector<size_t> offset_;  // [n_layer] start of each layer's floats in data_
};

}  // namespace zf::model

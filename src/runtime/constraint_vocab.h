// A model's vocabulary as the constraint library (llguidance) sees it: every token's bytes and
// llguidance's tokenizer over them, built once per model on first use (1.6 s for Gemma 3's
// 262k tokens: doc/constraints.md) and shared by every constraint compiled for that model.
// rt::ServedModel owns one and its sessions reach it; a caller without a ServedModel (a test, a
// tool) makes its own.
//
// Thread-safe: Get() may run concurrently (the first call builds under a lock). The model must
// outlive it; the tables it hands out stay alive while a constraint holds them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

struct LlgTokenizer;  // llguidance.h

namespace zf::model {
class Model;
}

namespace zf::rt {

class ConstraintVocab {
 public:
  // What a constraint reads of the vocabulary.
  struct Tables {
    LlgTokenizer* tok = nullptr;  // llguidance's tokenizer (null without constraints)
    int32_t n_vocab = 0;          // the tokenizer's vocabulary (<= the logits' n_vocab)
    // Each token's bytes (token t: bytes[offs[t], offs[t + 1])), and the tokens that start with a
    // digit or with JSON whitespace (for the run bounds of Constraint::BoundRuns).
    std::string bytes;
    std::vector<uint32_t> offs;
    std::vector<int32_t> digit_first, space_first;
    std::string_view Bytes(int32_t t) const {
      return std::string_view(bytes).substr(offs[size_t(t)], offs[size_t(t) + 1] - offs[size_t(t)]);
    }
    Tables() = default;
    Tables(const Tables&) = delete;
    Tables& operator=(const Tables&) = delete;
    ~Tables();
  };

  explicit ConstraintVocab(const model::Model& model) : model_(model) {}
  ConstraintVocab(const ConstraintVocab&) = delete;
  ConstraintVocab& operator=(const ConstraintVocab&) = delete;

  const model::Model& model() const { return model_; }

  // The tables, built on the first call. kUnsupported for a vocabulary without an
  // end-of-generation token or a build without constraints; a failed build is retried by the
  // next call.
  Status Get(std::shared_ptr<const Tables>* out) const;

  // Constraints compiled against this vocabulary (Constraint::Create calls): a chat turn
  // compiles its constraint once (tested; a statistic, not a limit).
  int64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }
  void CountCompile() const { compiles_.fetch_add(1, std::memory_order_relaxed); }

 private:
  const model::Model& model_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Tables> tables_;  // null until built
  mutable std::atomic<int64_t> compiles_{0};
};

}  // namespace zf::rt

// Constrained decoding (doc/constraints.md): the generated text must match a JSON schema, a
// regular expression, one of a list of strings, or a Lark grammar. llguidance (Rust, linked
// statically when the build found cargo: ZF_HAVE_CONSTRAINTS) compiles the constraint against
// the model's vocabulary; per step it gives the set of allowed tokens (a bit mask the sampler
// applies as -inf before sampling, greedy included) and is advanced with the sampled token.
//
// Thread-compatible: one Constraint per generation. Create() may run concurrently on the same
// vocabulary (its llguidance tokenizer is built once, under a lock: runtime/constraint_vocab.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/constraint_vocab.h"

namespace zf::rt {

// Values equal ZF_CONSTRAINT_* in zerfoo.h.
enum class ConstraintKind : int32_t {
  kNone = 0,
  kJsonSchema = 1,  // a JSON schema (draft 2020-12 subset llguidance supports)
  kRegex = 2,       // a regular expression (Rust regex syntax) the whole output must match
  kChoice = 3,      // a JSON array of strings: the output is exactly one of them
  kLark = 4,        // a Lark grammar (llguidance's dialect)
};

// Whether this build has constrained decoding (false: built without cargo).
bool ConstraintsAvailable();

class Constraint {
 public:
  // Compiles `text` of `kind` for a model's vocabulary (built by the first Create on it).
  // kInvalidArgument with llguidance's message for a malformed schema, regex, grammar or choice
  // list (nothing is generated); kUnsupported when the library was built without constraints.
  static Status Create(const ConstraintVocab& vocab, ConstraintKind kind, std::string_view text,
                       std::unique_ptr<Constraint>* out);
  ~Constraint();
  Constraint(const Constraint&) = delete;
  Constraint& operator=(const Constraint&) = delete;

  // Computes the tokens allowed at the next position into mask(): bit (id & 31) of word id / 32,
  // words for n_vocab ids of the model's logits (ids beyond the tokenizer's vocabulary are off).
  // End-of-generation tokens are allowed exactly when the text so far is complete.
  // kInvalidArgument when no token can continue the text (a constraint the vocabulary cannot
  // spell, or a part of the grammar that matches nothing) or llguidance's per-step limits are
  // passed ("Too many items", "too many expressions": the constraint is too ambiguous).
  Status ComputeMask();
  const uint32_t* mask() const { return mask_.data(); }
  bool Allowed(int32_t id) const {
    return id >= 0 && size_t(id) < size_t(n_vocab_) && ((mask_[size_t(id) >> 5] >> (id & 31)) & 1u) != 0;
  }

  // Advances past the sampled token (one ComputeMask() allowed). kInternal if it was not allowed,
  // kInvalidArgument when llguidance's limits stop the constraint there.
  Status Commit(int32_t token);

  // Advances past `text` (a lazy constraint's output from its trigger on), tokenized as plain
  // text: the constraint reads bytes, so any tokenization spelling them is accepted.
  // kInvalidArgument when the text cannot start a string the constraint accepts.
  Status Feed(std::string_view text);

  // The constraint is complete and nothing else may follow: generation ends here.
  bool IsStopped() const;

  // Time spent in ComputeMask() so far, and how many masks were computed.
  double mask_ms() const { return mask_ms_; }
  int64_t n_masks() const { return n_masks_; }

 private:
  Constraint() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const ConstraintVocab::Tables> vocab_;  // kept alive while compiled against
  int32_t n_vocab_ = 0;
  std::vector<uint32_t> mask_;
  double mask_ms_ = 0;
  int64_t n_masks_ = 0;
  bool mask_ready_ = false;  // mask_ holds the first step's mask, computed by Create()
  // Runs of digits and of whitespace outside JSON strings in the output (JSON schemas, and Lark
  // grammars with %json), bounded in ComputeMask() (constraint.cpp).
  static constexpr int kMaxDigitRun = 20;
  static constexpr int kMaxSpaceRun = 64;
  void BoundRuns();
  void Track(std::string_view text);
  bool bound_runs_ = false;
  bool in_string_ = false, escaped_ = false;
  int digit_run_ = 0, space_run_ = 0;
};

// The regular expression of a choice list (a JSON array of strings): the alternatives with every
// regex metacharacter escaped. kInvalidArgument for anything but a non-empty array of strings.
Status ChoiceRegex(std::string_view json_array, std::string* out);

}  // namespace zf::rt

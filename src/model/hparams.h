// Typed access to a family's `<arch>.*` metadata keys, and the keys every family shares.
// Builders (model/arch_*.cpp) start from ReadCommon's description and change what their family
// does differently.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "model/description.h"

namespace zf::model {

class Hparams {
 public:
  Hparams(const gguf::GgufFile& file, std::string arch) : f_(file), arch_(std::move(arch)) {}

  const gguf::GgufFile& file() const { return f_; }
  const std::string& arch() const { return arch_; }
  std::string Key(const char* suffix) const { return arch_ + "." + suffix; }
  bool Has(const char* suffix) const { return f_.Find(Key(suffix)) != nullptr; }

  // Required key: kFormat naming it when absent or of the wrong type.
  Status I32(const char* suffix, int32_t* out) const;
  // Optional keys keep *out when absent; a wrong type is kFormat.
  Status OptI32(const char* suffix, int32_t* out) const;
  Status OptF32(const char* suffix, float* out) const;
  Status OptBool(const char* suffix, bool* out) const;
  Status OptString(const char* suffix, std::string* out) const;
  // A key that is either one integer for every layer or an array of n_layer integers.
  Status OptI32PerLayer(const char* suffix, int32_t n_layer, std::vector<int32_t>* out) const;
  // Which layers use the sliding window: `attention.sliding_window_pattern` as a per-layer bool
  // array, or as a period n (layer il slides when il % n < n - 1), default `pattern`.
  // dense_first: the global layers are the first of each group of `pattern` (ModernBERT), not
  // the last (Gemma 2/3), as the reference's set_swa_pattern.
  Status SlidingPattern(int32_t n_layer, uint32_t pattern, std::vector<bool>* out, bool dense_first = false) const;

 private:
  const gguf::GgufFile& f_;
  std::string arch_;
};

// Reads the keys every family shares (sizes, heads, norm eps, rope base, scaling factor and
// magnitude, fused QKV, expert counts) into `d`, one LayerDesc per layer with the
// llama defaults (pre-norm RMS, gated SiLU FFN, NORM rope on all head dims). kFormat for
// missing or inconsistent values, kUnsupported for a rope scaling the engine lacks.
Status ReadCommon(const Hparams& h, ModelDesc* d);

// Checks the description a builder produced (head sizes, rope dims, expert counts).
Status ValidateDesc(const ModelDesc& d);

}  // namespace zf::model

// A loaded model: the mapped GGUF file, its tokenizer, its description (model/description.h),
// the tensors bound by the role table, and the engine it runs on with that engine's weight copy.
// Immutable after Load: may be shared by any number of threads and sessions.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "engine/engine.h"
#include "model/description.h"
#include "model/tensor_roles.h"
#include "tokenizer/tokenizer.h"

namespace zf::model {

using engine::Device;
class ForwardPool;

struct LoadOptions {
  bool vocab_only = false;
  bool no_mmap = false;
  Device device = Device::kAuto;
  int32_t gpu_index = 0;
  int32_t n_threads = 0;  // 0 = physical cores
  // Progress in permille; returning nonzero aborts the load with kCancelled.
  int32_t (*progress)(void* user_data, int32_t permille) = nullptr;
  void* progress_user_data = nullptr;
};

class Model {
 public:
  ~Model();
  static Status Load(const std::string& path, const LoadOptions& options, std::unique_ptr<Model>* out);

  const gguf::GgufFile& file() const { return *file_; }
  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  // The description; for a vocabulary-only load only arch and n_vocab are set.
  const ModelDesc& desc() const { return desc_; }
  const Weights& weights() const { return weights_; }
  bool vocab_only() const { return vocab_only_; }
  Device device() const { return engine_ != nullptr ? engine_->device() : Device::kCpu; }
  // The engine and its weight copy (null for a vocabulary-only load).
  const engine::Engine* engine() const { return engine_.get(); }
  // The forward contexts the model's sessions borrow for their steps (model/forward_pool.h;
  // null for a vocabulary-only load).
  ForwardPool* forwards() const { return forwards_.get(); }
  int32_t default_threads() const { return n_threads_; }
  const std::string& name() const { return name_; }
  const std::string& quant_name() const { return quant_name_; }
  // tokenizer.chat_template, or "" when the file has none.
  const std::string& chat_template() const { return chat_template_; }

 private:
  Model() = default;
  void CopySmallTensors();

  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  ModelDesc desc_;
  Weights weights_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<ForwardPool> forwards_;  // after engine_: destroyed before it
  // On the CPU engine: the small tensors (norms, biases) copied out of the file mapping, and
  // the Weights pointers rebound to them (see CopySmallTensors in model.cpp).
  std::vector<gguf::TensorInfo> small_tensors_;
  std::vector<uint8_t> small_bytes_;
  bool vocab_only_ = false;
  int32_t n_threads_ = 1;
  std::string name_;
  std::string quant_name_;
  std::string chat_template_;
};

// Number of physical cores (hyperthreads share their FP units, so they don't help matmuls).
int32_t PhysicalCores();

}  // namespace zf::model

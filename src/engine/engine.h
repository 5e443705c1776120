// The engine a model runs on, chosen once at load: it owns the engine's copy of the weights
// (the CPU's repacked decode copies, or the GPU's resident copy) and makes each session's
// Backend. The model hands it the tensors its role table bound; it never sees model/ types.
// Immutable after creation: shared by every session of the model.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "engine/backend.h"
#include "engine/ops.h"
#include "gguf/gguf.h"

namespace zf::engine {

class ThreadPool;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual Device device() const = 0;
  virtual const char* name() const = 0;
  // Bytes of the engine's own weight copy (0 when it reads the file mapping).
  virtual size_t weight_bytes() const = 0;
  // A backend for one session with n_threads CPU workers.
  virtual Status CreateBackend(int32_t n_threads, std::unique_ptr<Backend>* out) const = 0;
  // CPU: the thread pool that the backends of n_threads workers run on (shared by the model's
  // sessions), for work a caller splits across them itself (an embedding step's per-input
  // attention); nullptr when there is none (another thread count, a GPU).
  virtual ThreadPool* SharedPool(int32_t /*n_threads*/) const { return nullptr; }
  // CPU: drops the file's pages of repacked tensors again (after the model read neighbours).
  virtual void ReleaseFilePages() const {}
};

struct EngineRequest {
  Device device = Device::kAuto;
  int32_t gpu_index = 0;
  int32_t n_threads = 1;
  std::vector<const Tensor*> tensors;   // every bound file tensor (the GPU copy uploads these)
  std::vector<const Tensor*> matrices;  // what the forward pass multiplies with (views included)
  std::vector<Op> ops;                  // optional ops the model needs (engine/ops.h)
};

// CUDA when asked or (kAuto) available and able to run the model, else the CPU; kAuto logs why
// it fell back, kCuda fails with the reason (kBackend, kUnsupported naming a missing op, or
// kOutOfMemory).
Status CreateEngine(const EngineRequest& request, std::unique_ptr<Engine>* out);

// kFormat naming the tensor and block when t holds a NaN or infinite scale, min or value: a file
// that would load and compute garbage (the engines call it on what they read; quant/scales.h).
Status CheckFinite(const Tensor& t);

// The CUDA engine's availability without preparing weights ("" = available): vocab-only loads.
std::string CudaUnavailable();

}  // namespace zf::engine

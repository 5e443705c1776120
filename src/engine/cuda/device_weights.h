// A model's weights resident on the GPU: every tensor the model bound copied once, in its
// stored (quantized) layout, into one device allocation, and a map from the host address of a
// tensor's data (what model::Weights and the transformer hand to the backend) to its device copy.
// Owned by the Model (shared by its sessions); immutable after Upload, so thread-safe to read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <map>
#include <vector>

#include "common/status.h"
#include "engine/cuda/kernel_library.h"
#include "gguf/gguf.h"

namespace zf::engine::cuda {

class DeviceWeights {
 public:
  ~DeviceWeights();
  DeviceWeights(const DeviceWeights&) = delete;
  DeviceWeights& operator=(const DeviceWeights&) = delete;

  // Finds the kernel library and GPU `device`, checks that every matrix type has a kernel,
  // and uploads the file's tensors. kBackend / kUnsupported / kOutOfMemory with the reason.
  static Status Upload(const std::vector<const gguf::TensorInfo*>& tensors, int32_t device,
                       std::shared_ptr<DeviceWeights>* out);

  const KernelLibrary& library() const { return *lib_; }
  int32_t device() const { return device_; }
  // Device copy of the host address `host`, which may point inside an uploaded tensor (a view of
  // fused or expert rows); nullptr when no uploaded tensor holds it.
  const void* Find(const void* host) const;
  uint64_t bytes() const { return bytes_; }

 private:
  DeviceWeights() = default;
  const KernelLibrary* lib_ = nullptr;
  int32_t device_ = 0;
  void* base_ = nullptr;  // one allocation for all tensors
  uint64_t bytes_ = 0;
  struct Span {
    const uint8_t* device;
    uint64_t bytes;
  };
  std::map<const uint8_t*, Span> map_;  // by host start address
};

}  // namespace zf::engine::cuda

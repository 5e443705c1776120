// Weight upload: one device allocation, tensors at 256-byte aligned offsets (the alignment the
// kernels' vector loads assume), copied in the order the model bound them.
#include "engine/cuda/device_weights.h"

namespace zf::engine::cuda {
namespace {
constexpr uint64_t kAlign = 256;
}

DeviceWeights::~DeviceWeights() {
  if (base_ != nullptr && lib_ != nullptr) lib_->api().free(base_);
}

Status DeviceWeights::Upload(const std::vector<const gguf::TensorInfo*>& tensors, int32_t device,
                             std::shared_ptr<DeviceWeights>* out) {
  out->reset();
  std::string reason;
  const KernelLibrary* lib = KernelLibrary::Default(&reason);
  if (lib == nullptr) return Status(Code::kBackend, reason);
  const KernelApi& a = lib->api();
  if (device < 0 || size_t(device) >= lib->devices().size()) {
    return Status(Code::kBackend, "GPU index " + std::to_string(device) + " out of range: " +
                                      std::to_string(lib->devices().size()) + " CUDA device(s)");
  }
  uint64_t total = 0;
  for (const gguf::TensorInfo* tp : tensors) {
    const gguf::TensorInfo& t = *tp;
    int32_t ok = 0;
    if (t.n_dims >= 2 && (a.supports_type(int32_t(t.type), &ok) != 0 || !ok)) {
      return Status(Code::kUnsupported, "tensor '" + std::string(t.name) + "' has type " + TypeName(t.type) +
                                            ", which the CUDA kernel library cannot compute with");
    }
    total += (t.nbytes + kAlign - 1) / kAlign * kAlign;
  }
  std::shared_ptr<DeviceWeights> w(new DeviceWeights());
  w->lib_ = lib;
  w->device_ = device;
  if (a.set_device(device) != 0) return Status(Code::kBackend, std::string("cannot select the GPU: ") + a.last_error());
  if (a.malloc(&w->base_, total) != 0) {
    return Status(Code::kOutOfMemory, "cannot allocate " + std::to_string(total >> 20) + " MiB of GPU memory for the weights: " +
                                          a.last_error());
  }
  w->bytes_ = total;
  uint64_t off = 0;
  for (const gguf::TensorInfo* tp : tensors) {
    const gguf::TensorInfo& t = *tp;
    void* dst = static_cast<uint8_t*>(w->base_) + off;
    if (a.memcpy_h2d(dst, t.data, t.nbytes, nullptr) != 0) {
      return Status(Code::kBackend, "uploading tensor '" + std::string(t.name) + "': " + a.last_error());
    }
    w->map_[t.data] = Span{static_cast<const uint8_t*>(dst), t.nbytes};
    off += (t.nbytes + kAlign - 1) / kAlign * kAlign;
  }
  if (a.stream_sync(nullptr) != 0) return Status(Code::kBackend, std::string("weight upload: ") + a.last_error());
  *out = std::move(w);
  return Status::Ok();
}

const void* DeviceWeights::Find(const void* host) const {
  const uint8_t* h = static_cast<const uint8_t*>(host);
  auto it = map_.upper_bound(h);  // the first tensor starting after h; h lies in the one before
  if (it == map_.begin()) return nullptr;
  --it;
  const uint64_t off = uint64_t(h - it->first);
  return off < it->second.bytes ? it->second.device + off : nullptr;
}

}  // namespace zf::engine::cuda

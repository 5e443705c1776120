// Engine selection and the two engines' weight copies.
#include "engine/engine.h"

#include "common/log.h"
#include "engine/cpu/packed_weights.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernel_library.h"
#include "engine/thread_pool.h"
#include "quant/quant.h"
#include "quant/scales.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace zf::engine {
namespace {

// Scans the tensors the CPU engine reads from the file mapping (the packed ones were scanned
// while packing): every bound tensor not entirely covered by packed matrices (its views).
Status CheckUnpacked(const EngineRequest& r, const PackedWeights* packed) {
  std::vector<std::pair<const uint8_t*, uint64_t>> spans;  // packed matrices' bytes, by address
  for (const Tensor* m : r.matrices) {
    if (packed != nullptr && packed->Find(*m) != nullptr) spans.emplace_back(m->data, m->nbytes);
  }
  std::sort(spans.begin(), spans.end());
  for (const Tensor* t : r.tensors) {
    uint64_t covered = 0;
    auto it = std::lower_bound(spans.begin(), spans.end(), std::make_pair(t->data, uint64_t{0}));
    for (; it != spans.end() && it->first < t->data + t->nbytes; ++it) covered += it->second;
    if (covered < t->nbytes) ZF_RETURN_IF_ERROR(CheckFinite(*t));
  }
  return Status::Ok();
}

// One thread pool for every session of the model (a session is sequence state, not threads):
// `serve --parallel 16` runs one set of workers, not 16; and the process's one pool of that size
// for every model (SharedThreadPool): a server with several models runs one set of workers, and
// their steps take turns op by op. A session asking for another thread count than the model's
// gets a pool of its own.
class CpuEngine final : public Engine {
 public:
  CpuEngine(std::unique_ptr<PackedWeights> packed, int32_t n_threads)
      : packed_(std::move(packed)), n_threads_(std::max(1, std::min(n_threads, 256))) {}
  Device device() const override { return Device::kCpu; }
  const char* name() const override { return "cpu"; }
  size_t weight_bytes() const override { return packed_ != nullptr ? packed_->bytes() : 0; }
  Status CreateBackend(int32_t n_threads, std::unique_ptr<Backend>* out) const override {
    *out = CreateCpuBackend(n_threads, packed_.get(), SharedPool(n_threads));
    return Status::Ok();
  }
  ThreadPool* SharedPool(int32_t n_threads) const override {
    if (n_threads != n_threads_) return nullptr;
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (pool_ == nullptr) pool_ = SharedThreadPool(n_threads_);  // at the first session
    return pool_.get();
  }
  void ReleaseFilePages() const override {
    if (packed_ != nullptr) packed_->ReleaseFilePages();
  }

 private:
  std::unique_ptr<PackedWeights> packed_;
  int32_t n_threads_;
  mutable std::mutex pool_mu_;
  mutable std::shared_ptr<ThreadPool> pool_;  // taken with the first session (vocab-only loads have none)
};

class CudaEngine final : public Engine {
 public:
  explicit CudaEngine(std::shared_ptr<const cuda::DeviceWeights> w) : w_(std::move(w)) {}
  Device device() const override { return Device::kCuda; }
  const char* name() const override { return "cuda"; }
  size_t weight_bytes() const override { return size_t(w_->bytes()); }
  Status CreateBackend(int32_t, std::unique_ptr<Backend>* out) const override {
    return cuda::CreateCudaBackend(w_, out);
  }

 private:
  std::shared_ptr<const cuda::DeviceWeights> w_;
};

Status CreateCuda(const EngineRequest& r, std::unique_ptr<Engine>* out) {
  std::string missing;  // every op it lacks, so the fallback's INFO line names them all
  for (Op op : r.ops) {
    if (!cuda::Supports(op)) missing += (missing.empty() ? "" : ", ") + std::string(OpName(op));
  }
  if (!missing.empty()) return Unsupported("the CUDA engine lacks " + missing);
  for (const Tensor* t : r.tensors) ZF_RETURN_IF_ERROR(CheckFinite(*t));  // the upload reads them all anyway
  std::shared_ptr<cuda::DeviceWeights> dw;
  ZF_RETURN_IF_ERROR(cuda::DeviceWeights::Upload(r.tensors, r.gpu_index, &dw));
  out->reset(new CudaEngine(std::move(dw)));
  return Status::Ok();
}

}  // namespace

Status CheckFinite(const Tensor& t) {
  const int64_t b = quant::FindNonFiniteBlock(t.type, t.data, t.nbytes);
  if (b < 0) return Status::Ok();
  return FormatError("tensor '" + std::string(t.name) + "' (" + TypeName(t.type) + "): block " + std::to_string(b) +
                     " has a NaN or infinite scale or value");
}

std::string CudaUnavailable() { return cuda::CudaUnavailableReason(); }

Status CreateEngine(const EngineRequest& r, std::unique_ptr<Engine>* out) {
  out->reset();
  if (r.device != Device::kCpu) {
    Status gpu = CreateCuda(r, out);
    if (gpu.ok()) {
      ZF_LOGI("using the CUDA engine on GPU %d", r.gpu_index);
      return Status::Ok();
    }
    if (r.device == Device::kCuda) {
      const Code code = gpu.code() == Code::kOutOfMemory || gpu.code() == Code::kUnsupported ? gpu.code() : Code::kBackend;
      return Status(code, "device=CUDA unavailable: " + gpu.message());
    }
    ZF_LOGI("using the CPU engine: %s", gpu.message().c_str());
  }
  std::unique_ptr<PackedWeights> packed;
  ZF_RETURN_IF_ERROR(PackedWeights::Build(r.matrices, r.n_threads, &packed));
  ZF_RETURN_IF_ERROR(CheckUnpacked(r, packed.get()));
  ZF_LOGI("CPU kernels: %s; packed decode copies: %zu MiB", quant::ActiveIsa(),
          packed != nullptr ? packed->bytes() >> 20 : size_t{0});
  out->reset(new CpuEngine(std::move(packed), r.n_threads));
  return Status::Ok();
}

}  // namespace zf::engine

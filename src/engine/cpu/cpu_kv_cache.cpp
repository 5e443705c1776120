// The CPU engine's KV cache: allocation, row writes, rows in and out as planes (session state,
// the prefix cache), shared blocks mapped in place, and giving forgotten rows' memory back.
//
// Layout: per layer, ctx_stride positions of K rows in k_cache_ (then of V rows in v_cache_),
// each row k_width (v_width) elements of the cache's type. Plane 2l is layer l's K, 2l + 1 its V.
#include <algorithm>
#include <cstring>
#include <new>

#include "engine/cpu/cpu_backend.h"
#include "quant/quant.h"

namespace zf::engine {

Status CpuBackend::InitKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType type) {
  const size_t elem = type == KvType::kF16 ? 2 : 4;
  const int32_t stride = (n_ctx + kKvAlign - 1) / kKvAlign * kKvAlign;
  if (!k_cache_.Allocate(size_t(n_layer) * size_t(stride) * size_t(k_width) * elem) ||
      !v_cache_.Allocate(size_t(n_layer) * size_t(stride) * size_t(v_width) * elem)) {
    return Status(Code::kOutOfMemory, "cannot allocate the KV cache for n_ctx=" + std::to_string(n_ctx));
  }
  try {
    attn_scratch_.assign(size_t(pool_->size()) * AttnScratchPerThread(n_ctx, k_width, v_width), 0.0f);
  } catch (const std::bad_alloc&) {
    return Status(Code::kOutOfMemory, "cannot allocate the KV cache for n_ctx=" + std::to_string(n_ctx));
  }
  n_layer_ = n_layer;
  n_ctx_ = n_ctx;
  ctx_stride_ = stride;
  k_width_ = k_width;
  v_width_ = v_width;
  kv_type_ = type;
  return Status::Ok();
}

size_t CpuBackend::KvOffset(bool v, int32_t layer, int32_t pos) const {
  const size_t elem = kv_type_ == KvType::kF16 ? 2 : 4;
  const size_t width = size_t(v ? v_width_ : k_width_);
  return (size_t(layer) * size_t(ctx_stride_) + size_t(pos)) * width * elem;
}

void CpuBackend::StoreKv(int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) {
  for (int32_t t = 0; t < n_tok; ++t) {
    const float* kr = k + int64_t{t} * k_width_;
    const float* vr = v + int64_t{t} * v_width_;
    uint8_t* kd = k_cache_.data() + KvOffset(false, layer, pos0 + t);
    uint8_t* vd = v_cache_.data() + KvOffset(true, layer, pos0 + t);
    if (kv_type_ == KvType::kF16) {
      quant::QuantizeActivations(GgmlType::F16, kr, kd, k_width_);  // vectorized F32 -> F16
      quant::QuantizeActivations(GgmlType::F16, vr, vd, v_width_);
    } else {
      std::memcpy(kd, kr, size_t(k_width_) * 4);
      std::memcpy(vd, vr, size_t(v_width_) * 4);
    }
  }
}

size_t CpuBackend::KvPlaneBytes(int32_t plane, int32_t n_pos) const {
  const size_t elem = kv_type_ == KvType::kF16 ? 2 : 4;
  return size_t(n_pos) * size_t(plane % 2 == 0 ? k_width_ : v_width_) * elem;
}

Status CpuBackend::ReadKvPlanes(int32_t pos0, int32_t n_pos, uint8_t* const* planes) const {
  if (pos0 < 0 || n_pos < 0 || pos0 > n_ctx_ - n_pos) return InvalidArgument("KV positions out of range");
  for (int32_t p = 0; p < KvPlanes(); ++p) {
    const LazyBuffer& buf = p % 2 == 0 ? k_cache_ : v_cache_;
    std::memcpy(planes[p], buf.data() + KvOffset(p % 2 != 0, p / 2, pos0), KvPlaneBytes(p, n_pos));
  }
  return Status::Ok();
}

Status CpuBackend::WriteKvPlanes(int32_t pos0, int32_t n_pos, const uint8_t* const* planes) {
  if (pos0 < 0 || n_pos < 0 || pos0 > n_ctx_ - n_pos) return InvalidArgument("KV positions out of range");
  for (int32_t p = 0; p < KvPlanes(); ++p) {
    LazyBuffer& buf = p % 2 == 0 ? k_cache_ : v_cache_;
    std::memcpy(buf.data() + KvOffset(p % 2 != 0, p / 2, pos0), planes[p], KvPlaneBytes(p, n_pos));
  }
  return Status::Ok();
}

// Every plane's rows must start and end on a page (rows of a multiple of 64 bytes at block
// boundaries, given ctx_stride_); checked for all planes before any is mapped.
bool CpuBackend::MapKvPlanes(int32_t pos0, int32_t n_pos, int fd, const uint64_t* offsets) {
  if (pos0 < 0 || n_pos <= 0 || pos0 > n_ctx_ - n_pos || KvPlanes() == 0) return false;
  const size_t page = LazyBuffer::PageSize();
  for (int32_t p = 0; p < KvPlanes(); ++p) {
    const size_t begin = KvOffset(p % 2 != 0, p / 2, pos0);
    if (begin % page != 0 || KvPlaneBytes(p, n_pos) % page != 0 || offsets[p] % page != 0) return false;
  }
  for (int32_t p = 0; p < KvPlanes(); ++p) {
    LazyBuffer& buf = p % 2 == 0 ? k_cache_ : v_cache_;
    if (!buf.MapFile(KvOffset(p % 2 != 0, p / 2, pos0), KvPlaneBytes(p, n_pos), fd, offsets[p])) return false;
  }
  return true;
}

void CpuBackend::ReleaseKv(int32_t pos0) {
  if (pos0 < 0 || pos0 >= n_ctx_) return;
  for (int32_t l = 0; l < n_layer_; ++l) {
    for (bool v : {false, true}) {
      (v ? v_cache_ : k_cache_).Release(KvOffset(v, l, pos0), KvOffset(v, l + 1, 0));
    }
  }
}

}  // namespace zf::engine

// The CPU engine's KV cache: allocation, row writes, rows in and out as planes (session state,
// the prefix cache), shared blocks mapped in place, and giving forgotten rows' memory back.
#include "engine/cpu/cpu_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "engine/cpu/kv_quant.h"
#include "quant/quant.h"

namespace zf::engine {

Status CpuKvCache::Create(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type,
                          KvType v_type, std::unique_ptr<KvCache>* out) {
  out->reset();
  if (!KvTypeValid(int32_t(k_type)) || !KvTypeValid(int32_t(v_type))) return InvalidArgument("unknown KV cache type");
  if (k_width % KvBlock(k_type) != 0 || v_width % KvBlock(v_type) != 0) {
    return InvalidArgument(std::string("a ") + KvTypeName(k_width % KvBlock(k_type) != 0 ? k_type : v_type) +
                           " KV cache needs rows of whole 32-element blocks (K width " + std::to_string(k_width) +
                           ", V width " + std::to_string(v_width) + ")");
  }
  std::unique_ptr<CpuKvCache> c(new (std::nothrow) CpuKvCache(n_layer, n_ctx, k_width, v_width, k_type, v_type));
  if (c == nullptr || !c->k_.Allocate(size_t(n_layer) * size_t(c->ctx_stride_) * c->k_row_) ||
      !c->v_.Allocate(size_t(n_layer) * size_t(c->ctx_stride_) * c->v_row_)) {
    return Status(Code::kOutOfMemory, "cannot allocate the KV cache for n_ctx=" + std::to_string(n_ctx));
  }
  *out = std::move(c);
  return Status::Ok();
}

size_t CpuKvCache::Offset(bool v, int32_t layer, int32_t pos) const {
  return (size_t(layer) * size_t(ctx_stride_) + size_t(pos)) * RowBytes(v);
}

namespace {
void StoreRow(KvType t, const float* x, uint8_t* dst, int32_t n) {
  if (kvq::Rotated(t)) {  // rotated copy (kv_quant.h); the buffer grows once per thread
    thread_local std::vector<float> rot;
    if (rot.size() < size_t(n)) rot.resize(size_t(n));
    std::copy(x, x + n, rot.begin());
    kvq::Rotate32(rot.data(), n);
    x = rot.data();
  }
  switch (t) {
    case KvType::kF16: quant::QuantizeActivations(GgmlType::F16, x, dst, n); return;  // vectorized F32 -> F16
    case KvType::kQ8_0: kvq::QuantizeQ8_0(x, dst, n); return;
    case KvType::kQ4_0: kvq::QuantizeQ4_0(x, dst, n); return;
    case KvType::kF32: break;
  }
  std::memcpy(dst, x, size_t(n) * 4);
}
}  // namespace

void CpuKvCache::Store(int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0) {
  const int32_t kw = k_width(), vw = v_width();
  for (int32_t t = 0; t < n_tok; ++t) {
    const float* kr = k + int64_t{t} * kw;
    const float* vr = v + int64_t{t} * vw;
    uint8_t* kd = k_.data() + Offset(false, layer, pos0 + t);
    uint8_t* vd = v_.data() + Offset(true, layer, pos0 + t);
    StoreRow(k_type(), kr, kd, kw);
    StoreRow(v_type(), vr, vd, vw);
  }
}

size_t CpuKvCache::PlaneBytes(int32_t plane, int32_t n_pos) const {
  return size_t(n_pos) * RowBytes(plane % 2 != 0);
}

Status CpuKvCache::ReadPlanes(int32_t pos0, int32_t n_pos, uint8_t* const* planes) const {
  if (pos0 < 0 || n_pos < 0 || pos0 > n_ctx() - n_pos) return InvalidArgument("KV positions out of range");
  for (int32_t p = 0; p < Planes(); ++p) {
    std::memcpy(planes[p], Row(p % 2 != 0, p / 2, pos0), PlaneBytes(p, n_pos));
  }
  return Status::Ok();
}

Status CpuKvCache::WritePlanes(int32_t pos0, int32_t n_pos, const uint8_t* const* planes) {
  if (pos0 < 0 || n_pos < 0 || pos0 > n_ctx() - n_pos) return InvalidArgument("KV positions out of range");
  for (int32_t p = 0; p < Planes(); ++p) {
    LazyBuffer& buf = p % 2 == 0 ? k_ : v_;
    std::memcpy(buf.data() + Offset(p % 2 != 0, p / 2, pos0), planes[p], PlaneBytes(p, n_pos));
  }
  return Status::Ok();
}

// Every plane's rows must start and end on a page (rows of a multiple of 64 bytes at block
// boundaries, given ctx_stride_); checked for all planes before any is mapped.
bool CpuKvCache::MapPlanes(int32_t pos0, int32_t n_pos, int fd, const uint64_t* offsets) {
  if (pos0 < 0 || n_pos <= 0 || pos0 > n_ctx() - n_pos || Planes() == 0) return false;
  const size_t page = LazyBuffer::PageSize();
  for (int32_t p = 0; p < Planes(); ++p) {
    const size_t begin = Offset(p % 2 != 0, p / 2, pos0);
    if (begin % page != 0 || PlaneBytes(p, n_pos) % page != 0 || offsets[p] % page != 0) return false;
  }
  for (int32_t p = 0; p < Planes(); ++p) {
    LazyBuffer& buf = p % 2 == 0 ? k_ : v_;
    if (!buf.MapFile(Offset(p % 2 != 0, p / 2, pos0), PlaneBytes(p, n_pos), fd, offsets[p])) return false;
  }
  return true;
}

void CpuKvCache::Release(int32_t pos0) {
  if (pos0 < 0 || pos0 >= n_ctx()) return;
  for (int32_t l = 0; l < n_layer(); ++l) {
    for (bool v : {false, true}) (v ? v_ : k_).Release(Offset(v, l, pos0), Offset(v, l + 1, 0));
  }
}

}  // namespace zf::engine

// The CPU engine's KV cache (engine/kv_cache.h) in host memory.
//
// Layout: per layer, ctx_stride positions of K rows in k_ (then of V rows in v_), each row
// k_width (v_width) elements of K's (V's) type: KvRowBytes bytes, Q8_0 / Q4_0 rows as ggml's
// blocks (kv_quant.h). ctx_stride is n_ctx rounded up to kAlign, so
// that with rows of a multiple of 64 bytes every layer and every 64-position block starts on a
// page (MapPlanes). Pages are committed as positions fill, or mapped from the prefix cache's
// blocks. Plane 2l is layer l's K, 2l + 1 its V.
#pragma once

#include <memory>

#include "common/lazy_buffer.h"
#include "engine/kv_cache.h"

namespace zf::engine {

class CpuKvCache final : public KvCache {
 public:
  // kOutOfMemory when the address space cannot be reserved.
  // kInvalidArgument when a quantized type's width is not whole 32-element blocks.
  static Status Create(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type,
                       KvType v_type, std::unique_ptr<KvCache>* out);

  // The cache `kv` as a CPU cache; nullptr when another engine made it.
  static const CpuKvCache* Of(const KvCache& kv) {
    return kv.device() == Device::kCpu ? static_cast<const CpuKvCache*>(&kv) : nullptr;
  }
  static CpuKvCache* Of(KvCache& kv) { return kv.device() == Device::kCpu ? static_cast<CpuKvCache*>(&kv) : nullptr; }

  // Bytes of one K (v = false) or V row.
  size_t RowBytes(bool v) const { return v ? v_row_ : k_row_; }
  int32_t ctx_stride() const { return ctx_stride_; }
  // Where the K (v = false) or V row of `layer` at position `pos` starts.
  size_t Offset(bool v, int32_t layer, int32_t pos) const;
  const uint8_t* Row(bool v, int32_t layer, int32_t pos) const { return (v ? v_ : k_).data() + Offset(v, layer, pos); }
  // Writes the k/v rows of positions pos0..pos0+n_tok-1 of `layer` (F32 in, the cache's type stored).
  void Store(int32_t layer, const float* k, const float* v, int32_t n_tok, int32_t pos0);

  int32_t Planes() const override { return k_width() == 0 ? 0 : 2 * n_layer(); }
  size_t PlaneBytes(int32_t plane, int32_t n_pos) const override;
  Status ReadPlanes(int32_t pos0, int32_t n_pos, uint8_t* const* planes) const override;
  Status WritePlanes(int32_t pos0, int32_t n_pos, const uint8_t* const* planes) override;
  bool MapPlanes(int32_t pos0, int32_t n_pos, int fd, const uint64_t* offsets) override;
  void Release(int32_t pos0) override;

  static constexpr int32_t kAlign = 64;

 private:
  CpuKvCache(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type, KvType v_type)
      : KvCache(Device::kCpu, n_layer, n_ctx, k_width, v_width, k_type, v_type),
        ctx_stride_((n_ctx + kAlign - 1) / kAlign * kAlign),
        k_row_(KvRowBytes(k_type, k_width)),
        v_row_(KvRowBytes(v_type, v_width)) {}

  const int32_t ctx_stride_;
  const size_t k_row_, v_row_;
  LazyBuffer k_;  // [n_layer][ctx_stride][k_width]
  LazyBuffer v_;  // [n_layer][ctx_stride][v_width]
};

}  // namespace zf::engine

// A sequence's KV rows as a value: n_layer x n_ctx positions of K rows (k_width elements) and V
// rows (v_width), in the memory of the engine that made it (Backend::CreateKv). A session owns
// its cache and hands it to each forward step; any backend of the same engine computes on it
// (engine::Backend::StoreKv / Attention / AttentionRows), so a backend holds threads and scratch,
// not sequences. Thread-compatible.
//
// Rows as bytes (session state, runtime/session_state.cpp; the prefix cache,
// runtime/prefix_cache.h): the rows of positions [pos0, pos0 + n_pos) form Planes() planes,
// K of layer 0, V of layer 0, K of layer 1, ..., plane p PlaneBytes(p, n_pos) bytes in the
// cache's element types (K's planes in K's, V's in V's). A cache whose engine cannot expose them
// has 0 planes.
//
// K and V each have an element type (llama.cpp's -ctk / -ctv): F32, F16, or ggml's 32-element
// blocks Q8_0 / Q4_0 (an F16 scale per block; a row of w elements is w / 32 blocks, so each
// head's part of a row starts on a block when the head size is a multiple of 32).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "engine/ops.h"

namespace zf::engine {

enum class KvType : int32_t { kF32 = 0, kF16 = 1, kQ8_0 = 2, kQ4_0 = 3 };

// "f32", "f16", "q8_0", "q4_0" (llama.cpp's cache type names).
const char* KvTypeName(KvType t);
// The type named `name` (as KvTypeName); false for another name.
bool ParseKvType(const char* name, KvType* out);
bool KvTypeValid(int32_t t);
// Elements per block: 1 for F32/F16, 32 for Q8_0/Q4_0.
int32_t KvBlock(KvType t);
// Bytes of a row of `width` elements (width a multiple of KvBlock(t)).
size_t KvRowBytes(KvType t, int64_t width);

class KvCache {
 public:
  virtual ~KvCache() = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // The engine whose backends compute on this cache.
  Device device() const { return device_; }
  // Unique in the process (never reused, unlike an address): what a recorded step names.
  uint64_t id() const { return id_; }
  int32_t n_layer() const { return n_layer_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t k_width() const { return k_width_; }
  int32_t v_width() const { return v_width_; }
  KvType k_type() const { return k_type_; }
  KvType v_type() const { return v_type_; }

  virtual int32_t Planes() const { return 0; }
  virtual size_t PlaneBytes(int32_t plane, int32_t n_pos) const { return 0; }
  // Copy the rows of every plane out of / into the cache (planes[p]: plane p's bytes).
  virtual Status ReadPlanes(int32_t pos0, int32_t n_pos, uint8_t* const* planes) const;
  virtual Status WritePlanes(int32_t pos0, int32_t n_pos, const uint8_t* const* planes);
  // Plane p's rows read file `fd` at offsets[p] in place instead of holding a copy, copy-on-write
  // (a later write to a row copies its page first): the prefix cache's shared blocks
  // (runtime/kv_arena.h). False where the engine, the OS or the rows' page alignment does not
  // allow it; the caller then writes the rows (planes already mapped hold the same bytes).
  virtual bool MapPlanes(int32_t pos0, int32_t n_pos, int fd, const uint64_t* offsets) { return false; }
  // Positions [pos0, n_ctx) are forgotten (reset, truncation): their memory may go back to the
  // system; they are rewritten before they are read again.
  virtual void Release(int32_t pos0) {}

  // The planes back to back (0: the engine cannot).
  size_t StateBytes(int32_t n_pos) const;
  Status ReadRows(int32_t pos0, int32_t n_pos, uint8_t* out) const;
  Status WriteRows(int32_t pos0, int32_t n_pos, const uint8_t* in);

 protected:
  KvCache(Device device, int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, KvType k_type,
          KvType v_type)
      : device_(device), id_(NextId()), n_layer_(n_layer), n_ctx_(n_ctx), k_width_(k_width), v_width_(v_width),
        k_type_(k_type), v_type_(v_type) {}

 private:
  static uint64_t NextId();
  const Device device_;
  const uint64_t id_;
  const int32_t n_layer_, n_ctx_, k_width_, v_width_;
  const KvType k_type_, v_type_;
};

}  // namespace zf::engine

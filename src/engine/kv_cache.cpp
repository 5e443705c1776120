// KvCache's defaults (no planes) and its planes back to back.
#include "engine/kv_cache.h"

#include <atomic>
#include <string>
#include <vector>

namespace zf::engine {

const char* KvTypeName(KvType t) {
  switch (t) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
    case KvType::kQ4_0: return "q4_0";
  }
  return "?";
}

bool ParseKvType(const char* name, KvType* out) {
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0, KvType::kQ4_0}) {
    if (std::string(name) == KvTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool KvTypeValid(int32_t t) { return t >= 0 && t <= int32_t(KvType::kQ4_0); }

int32_t KvBlock(KvType t) { return t == KvType::kQ8_0 || t == KvType::kQ4_0 ? 32 : 1; }

size_t KvRowBytes(KvType t, int64_t width) {
  switch (t) {
    case KvType::kF32: return size_t(width) * 4;
    case KvType::kF16: return size_t(width) * 2;
    case KvType::kQ8_0: return size_t(width / 32) * 34;  // F16 scale + 32 int8
    case KvType::kQ4_0: return size_t(width / 32) * 18;  // F16 scale + 16 bytes of nibbles
  }
  return 0;
}

uint64_t KvCache::NextId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Status KvCache::ReadPlanes(int32_t, int32_t, uint8_t* const*) const {
  return Unsupported("this engine cannot read its KV cache");
}

Status KvCache::WritePlanes(int32_t, int32_t, const uint8_t* const*) {
  return Unsupported("this engine cannot write its KV cache");
}

size_t KvCache::StateBytes(int32_t n_pos) const {
  size_t bytes = 0;
  for (int32_t p = 0; p < Planes(); ++p) bytes += PlaneBytes(p, n_pos);
  return bytes;
}

Status KvCache::ReadRows(int32_t pos0, int32_t n_pos, uint8_t* out) const {
  std::vector<uint8_t*> planes(static_cast<size_t>(Planes()));
  for (int32_t p = 0; p < Planes(); out += PlaneBytes(p, n_pos), ++p) planes[size_t(p)] = out;
  return ReadPlanes(pos0, n_pos, planes.data());
}

Status KvCache::WriteRows(int32_t pos0, int32_t n_pos, const uint8_t* in) {
  std::vector<const uint8_t*> planes(static_cast<size_t>(Planes()));
  for (int32_t p = 0; p < Planes(); in += PlaneBytes(p, n_pos), ++p) planes[size_t(p)] = in;
  return WritePlanes(pos0, n_pos, planes.data());
}

}  // namespace zf::engine

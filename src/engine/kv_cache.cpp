// KvCache's defaults (no planes) and its planes back to back.
#include "engine/kv_cache.h"

#include <atomic>
#include <string>
#include <vector>

namespace zf::engine {

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

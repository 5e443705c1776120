// Default activation-memory and step hooks of engine::Backend (host memory, nothing recorded),
// and the KV planes back to back.
#include "engine/backend.h"

#include <cstring>
#include <new>
#include <vector>

namespace zf::engine {

float* Backend::AllocActivations(size_t n) {
  std::unique_ptr<LazyBuffer> b(new (std::nothrow) LazyBuffer());
  if (b == nullptr || !b->Allocate((n == 0 ? 1 : n) * sizeof(float))) return nullptr;
  host_buffers_.push_back(std::move(b));
  return reinterpret_cast<float*>(host_buffers_.back()->data());
}

void Backend::ReadActivations(const float* src, size_t n, float* host) {
  if (src != host) std::memcpy(host, src, n * sizeof(float));
}

size_t Backend::KvStateBytes(int32_t n_pos) const {
  size_t bytes = 0;
  for (int32_t p = 0; p < KvPlanes(); ++p) bytes += KvPlaneBytes(p, n_pos);
  return bytes;
}

Status Backend::ReadKvRows(int32_t pos0, int32_t n_pos, uint8_t* out) const {
  std::vector<uint8_t*> planes(static_cast<size_t>(KvPlanes()));
  for (int32_t p = 0; p < KvPlanes(); out += KvPlaneBytes(p, n_pos), ++p) planes[size_t(p)] = out;
  return ReadKvPlanes(pos0, n_pos, planes.data());
}

Status Backend::WriteKvRows(int32_t pos0, int32_t n_pos, const uint8_t* in) {
  std::vector<const uint8_t*> planes(static_cast<size_t>(KvPlanes()));
  for (int32_t p = 0; p < KvPlanes(); in += KvPlaneBytes(p, n_pos), ++p) planes[size_t(p)] = in;
  return WriteKvPlanes(pos0, n_pos, planes.data());
}

int32_t Backend::Argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace zf::engine

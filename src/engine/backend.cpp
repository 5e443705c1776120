// Default activation-memory and step hooks of engine::Backend (host memory, nothing recorded).
#include "engine/backend.h"

#include <cstring>
#include <new>

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

int32_t Backend::Argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace zf::engine

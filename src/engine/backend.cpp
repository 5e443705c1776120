// Default activation-memory and step hooks of engine::Backend: host memory, nothing recorded.
#include "engine/backend.h"

#include <cstring>
#include <new>

namespace zf::engine {

float* Backend::AllocActivations(size_t n) {
  std::unique_ptr<float[]> p(new (std::nothrow) float[n == 0 ? 1 : n]());
  if (p == nullptr) return nullptr;
  host_buffers_.push_back(std::move(p));
  return host_buffers_.back().get();
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

// LazyBuffer: zero-filled memory whose pages are committed by the OS on first write. A session's
// KV cache reserves n_ctx positions of address space up front but costs resident memory only for
// the positions it has filled, so sixteen serve slots with an 8k context hold what their
// conversations use, not sixteen full caches; Release() gives the pages of forgotten positions
// back.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zf {

class LazyBuffer {
 public:
  LazyBuffer() = default;
  ~LazyBuffer();
  LazyBuffer(const LazyBuffer&) = delete;
  LazyBuffer& operator=(const LazyBuffer&) = delete;

  // Replaces the contents with `bytes` zero bytes; false when the address space is not available.
  bool Allocate(size_t bytes);
  // Returns the whole pages inside [begin, end) to the OS (they read as zero afterwards); the
  // bytes of the range are unspecified from then on.
  void Release(size_t begin, size_t end);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Free();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // data_ came from mmap (else from calloc)
};

}  // namespace zf

// LazyBuffer: zero-filled memory whose pages are committed by the OS on first write. A session's
// KV cache reserves n_ctx positions of address space up front but costs resident memory only for
// the positions it has filled, so sixteen serve slots with an 8k context hold what their
// conversations use, not sixteen full caches; Release() gives the pages of forgotten positions
// back. MapFile() lets a range read another file's pages in place, copy-on-write (the prefix
// cache's shared KV blocks, doc/state.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
  // bytes of the range are unspecified from then on. Ends any MapFile() of those pages.
  void Release(size_t begin, size_t end);
  // Makes [begin, begin + bytes) read the bytes of file `fd` at `offset`, privately: the file is
  // not written, a write to a page copies it first (MAP_PRIVATE). begin, bytes and offset must
  // be multiples of PageSize(). False (the range then holds its old bytes or zeros; the caller
  // writes it) where the buffer is not mapped, the system refuses, or the process's live MapFile
  // ranges would come near vm.max_map_count (each range may cost two memory mappings, and a
  // process out of them cannot even split a mapping back: see lazy_buffer.cpp).
  bool MapFile(size_t begin, size_t bytes, int fd, uint64_t offset);
  static size_t PageSize();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Free();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // data_ came from mmap (else from calloc)
  bool file_pages_ = false;  // some range was MapFile()d (Release must replace, not discard)
  // The live MapFile ranges (counted process-wide against the mapping budget); a range that
  // continues another in memory and in the same file is merged into it, as the kernel merges
  // their mappings.
  struct FileRange {
    size_t begin, end;
    int fd;
    uint64_t offset;  // of begin in the file
  };
  std::vector<FileRange> file_ranges_;
  void ForgetFileRanges(size_t begin, size_t end);  // those inside [begin, end)
};

}  // namespace zf

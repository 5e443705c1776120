#include "common/lazy_buffer.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define ZF_LAZY_MMAP 1
#endif

namespace zf {

namespace {

// Live MapFile ranges in the process, and how many may be: each range can cost two mappings
// (the file's, and the split of the anonymous mapping around it; adjacent ranges of consecutive
// file offsets merge, so this overcounts), and a process at vm.max_map_count gets ENOMEM even
// for the MAP_FIXED that would put zero pages back. A quarter of the limit is left to the rest of
// the process (the weights' mapping, malloc, thread stacks).
std::atomic<int64_t> g_file_ranges{0};

int64_t FileRangeBudget() {
  static const int64_t budget = [] {
    int64_t max_maps = 65530;  // Linux's default
    if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      long long v = 0;
      if (std::fscanf(f, "%lld", &v) == 1 && v > 0) max_maps = v;
      std::fclose(f);
    }
    return max_maps * 3 / 4 / 2;
  }();
  return budget;
}

}  // namespace

LazyBuffer::~LazyBuffer() { Free(); }

void LazyBuffer::ForgetFileRanges(size_t begin, size_t end) {
  const auto inside = [&](const FileRange& r) { return r.begin >= begin && r.end <= end; };
  const auto n = std::count_if(file_ranges_.begin(), file_ranges_.end(), inside);
  file_ranges_.erase(std::remove_if(file_ranges_.begin(), file_ranges_.end(), inside), file_ranges_.end());
  g_file_ranges.fetch_sub(int64_t(n));
}

void LazyBuffer::Free() {
  ForgetFileRanges(0, SIZE_MAX);
#ifdef ZF_LAZY_MMAP
  if (mapped_) munmap(data_, size_);
#endif
  if (!mapped_) std::free(data_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

bool LazyBuffer::Allocate(size_t bytes) {
  Free();
  if (bytes == 0) return true;
#ifdef ZF_LAZY_MMAP
  // Anonymous private pages are zero and take no memory until written; MAP_NORESERVE keeps a
  // large n_ctx from being refused under strict overcommit accounting for pages never touched.
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p != MAP_FAILED) {
    data_ = static_cast<uint8_t*>(p);
    size_ = bytes;
    mapped_ = true;
    return true;
  }
#endif
  data_ = static_cast<uint8_t*>(std::calloc(bytes, 1));  // large callocs are lazily zeroed too
  if (data_ == nullptr) return false;
  size_ = bytes;
  return true;
}

size_t LazyBuffer::PageSize() {
#ifdef ZF_LAZY_MMAP
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
#else
  return 4096;
#endif
}

#ifdef ZF_LAZY_MMAP
namespace {
// Fresh zero pages over [p, p + bytes), replacing whatever was mapped there.
bool MapAnonymous(uint8_t* p, size_t bytes) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
  return mmap(p, bytes, PROT_READ | PROT_WRITE, flags, -1, 0) != MAP_FAILED;
}
}  // namespace
#endif

void LazyBuffer::Release(size_t begin, size_t end) {
  if (end > size_) end = size_;
  if (begin >= end) return;
#ifdef ZF_LAZY_MMAP
  if (mapped_) {
    const size_t page = PageSize();
    const size_t b = (begin + page - 1) / page * page;  // whole pages only: the edges hold live rows
    const size_t e = end == size_ ? end : end / page * page;
    if (b >= e) return;
    ForgetFileRanges(b, e);
    // A file's pages are replaced (MADV_DONTNEED would only drop the copies made by writes and
    // keep reading the file); anonymous ones are simply discarded.
    if (!file_pages_ || !MapAnonymous(data_ + b, e - b)) madvise(data_ + b, e - b, MADV_DONTNEED);
  }
#endif
  // Without paging control the bytes simply stay: the caller no longer reads them.
}

bool LazyBuffer::MapFile(size_t begin, size_t bytes, int fd, uint64_t offset) {
#ifdef ZF_LAZY_MMAP
  const size_t page = PageSize();
  if (!mapped_ || fd < 0 || begin % page != 0 || bytes % page != 0 || offset % page != 0 || bytes == 0 ||
      begin > size_ || bytes > size_ - begin) {
    return false;
  }
  ForgetFileRanges(begin, begin + bytes);  // remapped: those ranges end here
  FileRange* joins = nullptr;  // a range this one continues (the kernel merges the two)
  for (FileRange& r : file_ranges_) {
    if (r.fd == fd && ((r.end == begin && r.offset + (r.end - r.begin) == offset) ||
                       (r.begin == begin + bytes && offset + bytes == r.offset))) {
      joins = &r;
      break;
    }
  }
  if (joins == nullptr && g_file_ranges.fetch_add(1) >= FileRangeBudget()) {
    g_file_ranges.fetch_sub(1);
    return false;
  }
  int flags = MAP_PRIVATE | MAP_FIXED;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
  file_pages_ = true;
  if (mmap(data_ + begin, bytes, PROT_READ | PROT_WRITE, flags, fd, off_t(offset)) != MAP_FAILED) {
    if (joins == nullptr) {
      file_ranges_.push_back(FileRange{begin, begin + bytes, fd, offset});
    } else if (joins->end == begin) {
      joins->end = begin + bytes;
    } else {
      joins->begin = begin;
      joins->offset = offset;
    }
    return true;
  }
  if (joins == nullptr) g_file_ranges.fetch_sub(1);
  // A failed MAP_FIXED may have unmapped the range already: put zero pages back.
  MapAnonymous(data_ + begin, bytes);
  return false;
#else
  (void)begin, (void)bytes, (void)fd, (void)offset;
  return false;
#endif
}

}  // namespace zf

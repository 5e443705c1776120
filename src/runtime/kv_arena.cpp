// KvArena: the memfd, its shared mapping and the slot free list.
#include "runtime/kv_arena.h"

#include "common/lazy_buffer.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace zf::rt {

std::shared_ptr<KvArena> KvArena::Create(const std::vector<size_t>& plane_bytes, int64_t slots) {
#if defined(__linux__) && defined(MFD_CLOEXEC) && defined(FALLOC_FL_PUNCH_HOLE)
  const size_t page = LazyBuffer::PageSize();
  if (plane_bytes.empty() || slots <= 0) return nullptr;
  std::shared_ptr<KvArena> a(new KvArena());
  uint64_t total = 0;
  for (size_t b : plane_bytes) {
    if (b == 0 || b % page != 0) return nullptr;
    a->plane_base_.push_back(total);
    total += uint64_t(b) * uint64_t(slots);
    a->slot_bytes_ += b;
  }
  a->plane_bytes_ = plane_bytes;
  a->fd_ = memfd_create("zerfoo-prefix-cache", MFD_CLOEXEC);
  if (a->fd_ < 0) return nullptr;
  if (ftruncate(a->fd_, off_t(total)) != 0) return nullptr;  // sparse: no memory until written
  int flags = MAP_SHARED;
#ifdef MAP_NORESERVE
  flags |= MAP_NORESERVE;
#endif
  void* p = mmap(nullptr, size_t(total), PROT_READ | PROT_WRITE, flags, a->fd_, 0);
  if (p == MAP_FAILED) return nullptr;
  a->base_ = static_cast<uint8_t*>(p);
  a->size_ = size_t(total);
  a->slots_ = slots;
  for (int64_t s = 0; s < slots; ++s) a->free_.insert(a->free_.end(), s);
  return a;
#else
  (void)plane_bytes, (void)slots;
  return nullptr;
#endif
}

KvArena::~KvArena() {
#if defined(__linux__)
  if (base_ != nullptr) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
#endif
}

int64_t KvArena::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) return -1;
  const int64_t s = *free_.begin();
  free_.erase(free_.begin());
  return s;
}

void KvArena::Release(int64_t slot) {
  if (slot < 0 || slot >= slots_) return;
#if defined(__linux__) && defined(FALLOC_FL_PUNCH_HOLE)
  for (int32_t p = 0; p < planes(); ++p) {  // zero pages again, their memory given back
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(Offset(p, slot)), off_t(plane_bytes_[size_t(p)]));
  }
#endif
  std::lock_guard<std::mutex> lock(mu_);
  free_.insert(slot);
}

int64_t KvArena::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_ - int64_t(free_.size());
}

}  // namespace zf::rt

// KvArena: the prefix cache's KV blocks in one shared-memory file (memfd), so that a session
// maps a cached block's pages into its own KV cache, copy-on-write, instead of copying its rows:
// a prefix used by sixteen sessions is held once (doc/state.md, "Shared blocks").
//
// The idea is vAttention's (Prabhu et al., ASPLOS 2025): the KV cache stays contiguous in
// virtual memory, so the attention kernels are unchanged, and the OS's page tables serve as the
// block tables that PagedAttention keeps by hand. A page-aligned block of 64 positions is whole
// pages of every layer's K and V rows (engine::KvCache::MapPlanes).
//
// Layout: a block is one slot; the file holds plane 0 (layer 0's K rows) of every slot, then
// plane 1 of every slot, and so on: offset(p, s) = base[p] + s * plane_bytes[p]. Blocks of one
// prompt stored in consecutive slots are consecutive in the file, so the kernel merges a
// session's mappings of them into one per plane (the number of mappings per process is bounded
// by vm.max_map_count). A slot's pages take memory only once written and are given back when it
// is released.
//
// Linux only (memfd_create); elsewhere Create returns null and the cache copies rows as before.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

namespace zf::rt {

class KvArena {
 public:
  // An arena of `slots` blocks whose plane p is plane_bytes[p] bytes; null where the system has
  // no memfd, a plane is not whole pages, or the file cannot be made.
  static std::shared_ptr<KvArena> Create(const std::vector<size_t>& plane_bytes, int64_t slots);
  ~KvArena();
  KvArena(const KvArena&) = delete;
  KvArena& operator=(const KvArena&) = delete;

  // A free slot (its pages read as zero), the lowest one; -1 when all are taken.
  int64_t Acquire();
  // The slot's pages given back; it may be handed out again. Only once no session maps it.
  void Release(int64_t slot);

  int fd() const { return fd_; }
  int32_t planes() const { return int32_t(plane_bytes_.size()); }
  const std::vector<size_t>& plane_bytes() const { return plane_bytes_; }
  size_t slot_bytes() const { return slot_bytes_; }
  uint64_t Offset(int32_t plane, int64_t slot) const {
    return plane_base_[size_t(plane)] + uint64_t(slot) * plane_bytes_[size_t(plane)];
  }
  // Plane `plane` of `slot` through the arena's own (shared, writable) mapping of the file.
  uint8_t* Pointer(int32_t plane, int64_t slot) const { return base_ + Offset(plane, slot); }
  // Slots handed out and not released.
  int64_t used() const;

 private:
  KvArena() = default;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t slot_bytes_ = 0;
  std::vector<size_t> plane_bytes_;
  std::vector<uint64_t> plane_base_;
  mutable std::mutex mu_;
  std::set<int64_t> free_;
  int64_t slots_ = 0;
};

}  // namespace zf::rt

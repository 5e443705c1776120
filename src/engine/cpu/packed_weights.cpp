// Builds the packed decode copies (packed_weights.h).
#include "engine/cpu/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "quant/packed.h"
#include "quant/scales.h"
#include "common/switches.h"

namespace zf::engine {
namespace {

bool Packable(const gguf::TensorInfo* t) {
  return t != nullptr && t->n_dims == 2 && quant::PackedGemvAvailable(t->type) &&
         quant::PackedGroupBytes(t->type, t->ne[0]) != 0;
}

size_t PackedBytes(const gguf::TensorInfo& t) {
  return size_t(quant::PackedGroups(t.ne[1])) * quant::PackedGroupBytes(t.type, t.ne[0]);
}

// Drops the whole pages of [from, to) from this process (file-backed mapping: re-read on
// access); returns where the next release should start (the first page not dropped).
const uint8_t* ReleasePages(const uint8_t* from, const uint8_t* to) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t b = (uintptr_t(from) + page - 1) & ~(page - 1);
  const uintptr_t e = uintptr_t(to) & ~(page - 1);
  if (e <= b) return from;
  madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
  return from + (e - uintptr_t(from));
}

}  // namespace

const uint8_t* PackedWeights::FileRows(const gguf::TensorInfo& t, const Matrix* p, int64_t r, int64_t n, uint8_t* buf) {
  const size_t row_bytes = RowSize(t.type, t.ne[0]);
  if (p == nullptr) return t.data + size_t(r) * row_bytes;
  quant::UnpackDecodeGroup(t.type, p->data + size_t(r / quant::kPackRows) * p->group_bytes, t.ne[0], n, buf, row_bytes);
  return buf;
}

void PackedWeights::ReleaseFilePages() const {
  for (const auto& kv : index_) ReleasePages(kv.first->data, kv.first->data + kv.first->nbytes);
}

PackedWeights::~PackedWeights() {
  if (mem_ != nullptr) munmap(mem_, size_);
}

Status PackedWeights::Build(const std::vector<const gguf::TensorInfo*>& matrices, int32_t n_threads,
                           std::unique_ptr<PackedWeights>* out) {
  out->reset();
  if (env::NoPack()) return Status::Ok();
  std::vector<const gguf::TensorInfo*> todo;  // matrices holds each once
  for (const gguf::TensorInfo* t : matrices) {
    if (Packable(t)) todo.push_back(t);
  }
  if (todo.empty()) return Status::Ok();
  size_t total = 0;
  for (const gguf::TensorInfo* t : todo) total += PackedBytes(*t);
  std::unique_ptr<PackedWeights> p(new PackedWeights());
  p->size_ = (total + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
  void* mem = mmap(nullptr, p->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    p->size_ = 0;
    return Status(Code::kOutOfMemory, "cannot allocate " + std::to_string(total) + " bytes for packed weights");
  }
  p->mem_ = mem;
#ifdef MADV_HUGEPAGE
  madvise(mem, p->size_, MADV_HUGEPAGE);  // the decode stream then needs few TLB entries
#endif
  // Work items of up to kChunkGroups groups, taken by n_threads threads: the cost is the
  // first touch of new pages (the kernel zeroes them) and of the file's pages, which both
  // scale with threads. Each item drops its source's whole pages when done, so the resident
  // size never holds both copies of more than a few items.
  struct Item {
    const gguf::TensorInfo* t;
    uint8_t* dst;
    int64_t g0, g1;
  };
  constexpr int64_t kChunkGroups = 64;
  std::vector<Item> items;
  uint8_t* dst = static_cast<uint8_t*>(mem);
  for (const gguf::TensorInfo* t : todo) {
    p->index_[t] = Matrix{dst, quant::PackedGroupBytes(t->type, t->ne[0])};
    const int64_t groups = quant::PackedGroups(t->ne[1]);
    for (int64_t g = 0; g < groups; g += kChunkGroups) items.push_back({t, dst, g, std::min(groups, g + kChunkGroups)});
    dst += PackedBytes(*t);
  }
  // The page cache may hold the file in 2 MiB folios, and a fault anywhere in one can map the
  // whole folio into the process again (one PMD), undoing the releases below: measured 74 MiB of
  // already-released tensors resident again on Gemma 3 after load. With huge mappings off for
  // the span of packed tensors a fault maps at most its fault-around window.
  {
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    uintptr_t b = UINTPTR_MAX, e = 0;
    for (const gguf::TensorInfo* t : todo) {
      b = std::min(b, uintptr_t(t->data));
      e = std::max(e, uintptr_t(t->data + t->nbytes));
    }
    b &= ~(page - 1);
#ifdef MADV_NOHUGEPAGE
    madvise(reinterpret_cast<void*>(b), e - b, MADV_NOHUGEPAGE);
#endif
    (void)e;
  }
  std::atomic<size_t> next{0};
  // Non-finite block scales are refused here, where every byte is read anyway (quant/scales.h).
  std::mutex bad_mu;
  std::string bad;
  const auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < items.size(); i = next.fetch_add(1)) {
      const Item& it = items[i];
      const int64_t k = it.t->ne[0], rows = it.t->ne[1];
      const size_t row_bytes = RowSize(it.t->type, k), gbytes = quant::PackedGroupBytes(it.t->type, k);
      const int64_t rb = it.g0 * quant::kPackRows, re = std::min<int64_t>(rows, it.g1 * quant::kPackRows);
      const int64_t b = quant::FindNonFiniteBlock(it.t->type, it.t->data + size_t(rb) * row_bytes, size_t(re - rb) * row_bytes);
      if (b >= 0) {
        const int64_t per_row = int64_t(row_bytes / GetTypeTraits(it.t->type)->type_size);
        std::lock_guard<std::mutex> lock(bad_mu);
        bad = "tensor '" + std::string(it.t->name) + "' (" + TypeName(it.t->type) + "): block " +
              std::to_string(rb * per_row + b) + " has a NaN or infinite scale or value";
        continue;
      }
      for (int64_t g = it.g0; g < it.g1; ++g) {
        const int64_t r0 = g * quant::kPackRows;
        const int64_t n = std::min<int64_t>(quant::kPackRows, rows - r0);
        quant::PackDecodeGroup(it.t->type, it.t->data + size_t(r0) * row_bytes, row_bytes, k, n, it.dst + size_t(g) * gbytes);
      }
      const int64_t r1 = std::min<int64_t>(rows, it.g1 * quant::kPackRows);
      ReleasePages(it.t->data + size_t(it.g0 * quant::kPackRows) * row_bytes, it.t->data + size_t(r1) * row_bytes);
    }
  };
  std::vector<std::thread> threads;
  try {
    for (int32_t i = 1; i < std::min<int32_t>(n_threads, 64); ++i) threads.emplace_back(worker);
  } catch (const std::system_error&) {
    // Fewer threads than asked (resource limits): the ones started and this one finish the work.
  }
  worker();
  for (std::thread& th : threads) th.join();
  if (!bad.empty()) return FormatError(bad);
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace zf::engine

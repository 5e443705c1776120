// Builds the packed decode copies (packed_weights.h).
#include "engine/cpu/packed_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "quant/packed.h"

namespace zf::engine {
namespace {

bool Packable(const gguf::TensorInfo* t) {
  return t != nullptr && t->n_dims == 2 && t->ne[0] % 32 == 0 && quant::PackedGemvAvailable(t->type);
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

PackedWeights::~PackedWeights() {
  if (mem_ != nullptr) munmap(mem_, size_);
}

Status PackedWeights::Build(const gguf::GgufFile& /*file*/, const model::Weights& w, std::unique_ptr<PackedWeights>* out) {
  out->reset();
  if (std::getenv("ZF_NO_PACK") != nullptr) return Status::Ok();
  std::vector<const gguf::TensorInfo*> todo;
  const auto add = [&](const gguf::TensorInfo* t) {
    if (!Packable(t)) return;
    for (const gguf::TensorInfo* u : todo) {
      if (u == t) return;
    }
    todo.push_back(t);
  };
  add(w.output);
  for (const model::LayerWeights& l : w.layers) {
    for (const gguf::TensorInfo* t : {l.wq, l.wk, l.wv, l.wo, l.ffn_gate, l.ffn_up, l.ffn_down}) add(t);
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
  uint8_t* dst = static_cast<uint8_t*>(mem);
  for (const gguf::TensorInfo* t : todo) {
    const int64_t k = t->ne[0], rows = t->ne[1];
    const size_t row_bytes = RowSize(t->type, k), gbytes = quant::PackedGroupBytes(t->type, k);
    const uint8_t* released = t->data;
    p->index_[t] = Matrix{dst, gbytes};
    for (int64_t g = 0; g < quant::PackedGroups(rows); ++g) {
      const int64_t r0 = g * quant::kPackRows;
      const int64_t n = rows - r0 < quant::kPackRows ? rows - r0 : quant::kPackRows;
      const uint8_t* src = t->data + size_t(r0) * row_bytes;
      quant::PackGroup(t->type, src, row_bytes, k, n, dst + size_t(g) * gbytes);
      const uint8_t* done = src + size_t(n) * row_bytes;
      if ((done - released >= (1 << 20) || g + 1 == quant::PackedGroups(rows))) {
        released = ReleasePages(released, done);  // keeps peak resident memory near the final size
      }
    }
    dst += PackedBytes(*t);
  }
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace zf::engine

// Repacked copies of a model's weight matrices in the CPU decode layout (quant/packed.h), built
// once at load and shared read-only by every session of the model.
//
// Which matrices: those whose type has a packed kernel on this CPU (Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q4_K, Q6_K, IQ4_NL, MXFP4, IQ4_XS with AVX-512 VNNI, AVX2 or NEON). After packing, the engine reads only the packed
// copy: decode through the packed GEMV, prefill by building its tiles from the packed groups
// (or unpacking 16-row tiles back to the file's blocks, exact), the embedding lookup by
// dequantizing a packed row. So the file's pages of those tensors are
// dropped from the process as packing goes (MADV_DONTNEED: a file mapping re-reads them from
// the page cache if ever touched; a --no-mmap copy is freed), and resident memory stays about
// the file's size.
//
// Thread-safety: immutable after Build; Find may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "common/status.h"
#include "gguf/gguf.h"
#include <vector>

namespace zf::engine {

class PackedWeights {
 public:
  struct Matrix {
    const uint8_t* data = nullptr;  // PackedGroups(rows) groups of PackedGroupBytes(type, k)
    size_t group_bytes = 0;
  };

  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // Packs the matrices that have a packed kernel here, with n_threads threads; *out
  // stays null when none does (other CPUs, ZF_NO_AVX512, ZF_NO_PACK). kOutOfMemory when the
  // copy cannot be allocated.
  static Status Build(const std::vector<const gguf::TensorInfo*>& matrices, int32_t n_threads,
                      std::unique_ptr<PackedWeights>* out);

  // Drops the file's pages of every packed tensor from the process again. Build drops them as it
  // goes, but a read of a neighbouring tensor (the model copies its small tensors after
  // packing) maps the pages of its fault-around window back in.
  void ReleaseFilePages() const;

  // The packed copy of tensor t, or nullptr.
  const Matrix* Find(const gguf::TensorInfo& t) const {
    auto it = index_.find(&t);
    return it == index_.end() ? nullptr : &it->second;
  }
  size_t bytes() const { return size_; }

  // Rows [r, r + n) of t in the file's block format (r a multiple of 16, n <= 16): in place from
  // the file, or, when t is packed (`p` = Find(t), its file pages are not resident), unpacked
  // exactly from the packed copy into buf (n rows of RowSize bytes).
  static const uint8_t* FileRows(const gguf::TensorInfo& t, const Matrix* p, int64_t r, int64_t n, uint8_t* buf);

 private:
  PackedWeights() = default;
  void* mem_ = nullptr;
  size_t size_ = 0;
  std::unordered_map<const gguf::TensorInfo*, Matrix> index_;
};

}  // namespace zf::engine

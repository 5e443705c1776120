// GGML tensor types as stored in GGUF files: ids (stable, from the file format) and block layout.
// Shared by the file format (gguf/) and the quant kernels (quant/): it lives below both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zf {

// Values are the on-disk ids of the GGUF format; never renumber.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;        // "Q4_K"
  int64_t block_size;      // elements per block
  size_t type_size;        // bytes per block
};

// Traits of a type id read from a file; nullptr for ids this build does not know.
const GgmlTypeTraits* GetTypeTraits(uint32_t type_id);
inline const GgmlTypeTraits* GetTypeTraits(GgmlType t) { return GetTypeTraits(static_cast<uint32_t>(t)); }
const char* TypeName(GgmlType t);  // "?" when unknown

// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t RowSize(GgmlType t, int64_t n) {
  const GgmlTypeTraits* tr = GetTypeTraits(t);
  return static_cast<size_t>(n / tr->block_size) * tr->type_size;
}

}  // namespace zf

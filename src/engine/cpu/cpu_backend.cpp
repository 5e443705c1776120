// The CPU engine: construction and the embedding lookup. The ops live by
// job in cpu_matmul.cpp (the four matmul strategies and the choice between them),
// cpu_elementwise.cpp (norms, rope, activations) and cpu_attention.cpp (attention), cpu_kv_cache.cpp (the KV cache).
// Numerics follow the reference engine where it matters for parity: activations quantized to the
// weight's vec-dot type, RMS sums in double, iterative rope angles in float, GELU evaluated on
// F16-rounded inputs (the reference uses an F16 table).
#include "engine/cpu/cpu_backend.h"

#include <new>

#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::engine {

CpuBackend::CpuBackend(int32_t n_threads, const PackedWeights* packed, ThreadPool* pool)
    : own_pool_(pool == nullptr ? new ThreadPool(n_threads) : nullptr),
      pool_(pool != nullptr ? pool : own_pool_.get()),
      packed_(packed),
      decode_ranges_(new ChunkRange[size_t(pool_->size())]) {}

void CpuBackend::GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) {
  const int64_t width = table.ne[0];
  const size_t row_bytes = RowSize(table.type, width);
  const PackedWeights::Matrix* p = packed_ != nullptr ? packed_->Find(table) : nullptr;
  for (int32_t t = 0; t < n; ++t) {
    float* dst = out + int64_t{t} * width;
    if (p != nullptr) {  // a packed (tied) output projection: its file copy is not resident
      quant::DequantizePackedRow(table.type, p->data, width, ids[t], dst);
    } else {
      quant::DequantizeRow(table.type, table.data + size_t(ids[t]) * row_bytes, dst, width);
    }
    if (scale != 1.0f) {
      for (int64_t i = 0; i < width; ++i) dst[i] *= scale;
    }
  }
}

std::unique_ptr<Backend> CreateCpuBackend(int32_t n_threads, const PackedWeights* packed, ThreadPool* pool) {
  return std::unique_ptr<Backend>(new CpuBackend(n_threads, packed, pool));
}

}  // namespace zf::engine

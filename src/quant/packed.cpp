// Packing into the row-interleaved decode layout (packed.h), its scalar reference product, and
// the run-time choice of kernel.
#include "quant/packed.h"

#include <cstdlib>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace zf::quant {
namespace {

inline size_t ScaleBytes(int64_t nb) { return (size_t(nb) * kPackRows * 2 + 63) / 64 * 64; }

using GemvPackedFn = void (*)(int64_t, const void*, int64_t, int64_t, int64_t, const void*, float*);

GemvPackedFn PickQ8_0() {
#if defined(__x86_64__) || defined(__i386__)
  if (CpuHasAvx512Vnni() && std::getenv("ZF_NO_AVX512") == nullptr) return avx512::GemvPackedQ8_0;
#endif
  return nullptr;
}

GemvPackedFn FastQ8_0() {
  static const GemvPackedFn fn = PickQ8_0();
  return fn;
}

}  // namespace

bool PackedGemvAvailable(GgmlType t) { return t == GgmlType::Q8_0 && FastQ8_0() != nullptr; }

size_t PackedGroupBytes(GgmlType t, int64_t k) {
  if (t != GgmlType::Q8_0) return 0;
  const int64_t nb = k / kQK;
  return ScaleBytes(nb) + size_t(nb) * kPackRows * kQK;
}

void PackQ8_0Group(const void* src, size_t src_stride, int64_t k, int64_t n, void* dst_group) {
  const int64_t nb = k / kQK;
  auto* dst = static_cast<uint8_t*>(dst_group);
  std::memset(dst, 0, ScaleBytes(nb));  // padding rows' scales and the alignment tail
  auto* scales = reinterpret_cast<uint16_t*>(dst);
  uint8_t* quants = dst + ScaleBytes(nb);
  for (int64_t r = 0; r < n; ++r) {
    const auto* row = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(src) + size_t(r) * src_stride);
    for (int64_t b = 0; b < nb; ++b) {
      scales[b * kPackRows + r] = row[b].d;
      uint8_t* qb = quants + size_t(b) * kPackRows * kQK;
      for (int c = 0; c < kQK / 4; ++c) {  // 4 quants at a time, each biased by +128
        uint32_t v;
        std::memcpy(&v, row[b].qs + 4 * c, 4);
        v ^= 0x80808080u;
        std::memcpy(qb + (c * kPackRows + r) * 4, &v, 4);
      }
    }
  }
  // Padding rows: scale 0 and quants 0 (stored as 128), so they add nothing.
  for (int64_t r = n; r < kPackRows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* qb = quants + size_t(b) * kPackRows * kQK;
      for (int c = 0; c < kQK / 4; ++c) std::memset(qb + (c * kPackRows + r) * 4, 0x80, 4);
    }
  }
}

namespace ref {
void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y) {
  const int64_t nb = k / kQK;
  const size_t gbytes = PackedGroupBytes(GgmlType::Q8_0, k);
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  for (int64_t g = g0; g < g1; ++g) {
    const auto* grp = static_cast<const uint8_t*>(packed) + size_t(g) * gbytes;
    const auto* scales = reinterpret_cast<const uint16_t*>(grp);
    const uint8_t* quants = grp + ScaleBytes(nb);
    for (int64_t r = 0; r < kPackRows && g * kPackRows + r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* qb = quants + size_t(b) * kPackRows * kQK;
        int32_t dot = 0;
        for (int c = 0; c < kQK / 4; ++c) {
          for (int i = 0; i < 4; ++i) dot += (int32_t(qb[(c * kPackRows + r) * 4 + i]) - 128) * ab[b].qs[4 * c + i];
        }
        sum += Fp16ToFp32(scales[b * kPackRows + r]) * Fp16ToFp32(ab[b].d) * float(dot);
      }
      y[(g - g0) * kPackRows + r] = sum;
    }
  }
}
}  // namespace ref

void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y) {
  if (GemvPackedFn fn = FastQ8_0()) {
    fn(k, packed, g0, g1, rows, a, y);
  } else {
    ref::GemvPackedQ8_0(k, packed, g0, g1, rows, a, y);
  }
}

}  // namespace zf::quant

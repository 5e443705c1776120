// Portable parts of the packed prefill GEMM (see gemm_packed.h): exact unpacking into the
// row-interleaved tile layout, the activation tables, and the scalar reference product.
#include "quant/gemm_packed.h"

#include <cstring>

#include "quant/blocks.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

inline size_t GroupBytes(int group) { return size_t(kPackRows) * size_t(group) + 2 * size_t(kPackRows) * 4; }

// Q8_0: signed quants shifted to unsigned; the shift goes into m (exact: -128 * d).
void UnpackQ8_0(const void* row, int64_t k, float* d, float* m, uint8_t* q) {
  const auto* x = static_cast<const BlockQ8_0*>(row);
  for (int64_t b = 0; b < k / 32; ++b) {
    d[b] = Fp16ToFp32(x[b].d);
    m[b] = -128.0f * d[b];
    for (int i = 0; i < 32; ++i) q[32 * b + i] = uint8_t(int(x[b].qs[i]) + 128);
  }
}

// Q6_K in 16-element groups: d_j = d * scales[j] (a 16-bit float times an int8: exact), the
// 6-bit quant unsigned (0..63) and m_j = -32 * d_j (element layout as in the reference
// dequantizer: e = 128h + 32g + l).
void UnpackQ6_K(const void* row, int64_t k, float* d, float* m, uint8_t* q) {
  const auto* x = static_cast<const BlockQ6_K*>(row);
  for (int64_t s = 0; s < k / 256; ++s) {
    const float dd = Fp16ToFp32(x[s].d);
    for (int j = 0; j < 16; ++j) {
      d[16 * s + j] = dd * float(x[s].scales[j]);
      m[16 * s + j] = -32.0f * d[16 * s + j];
    }
    Q6KValues(x[s], q + 256 * s);
  }
}

}  // namespace

int PackGroup(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q8_0: case GgmlType::Q4_K: case GgmlType::Q5_K:
      return 32;
    case GgmlType::Q6_K:
      return 16;
    default:
      return 0;
  }
}

int PackOffset(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: return 8;
    case GgmlType::Q5_0: return 16;
    case GgmlType::Q8_0: return 128;
    case GgmlType::Q6_K: return 32;
    default: return 0;
  }
}

size_t PackedTileBytes(int64_t k, int group) { return size_t(k / group) * GroupBytes(group); }

void ClearTilePaddingRows(void* tile, int64_t rows, int64_t k, int group) {
  auto* out = static_cast<uint8_t*>(tile);
  const size_t gb = GroupBytes(group), pad = size_t(4 * (kPackRows - rows));
  for (int64_t gi = 0; gi < k / group; ++gi) {
    uint8_t* o = out + size_t(gi) * gb;
    for (int c = 0; c < group / 4; ++c) std::memset(o + 64 * c + 4 * rows, 0, pad);
    std::memset(o + 16 * group + 4 * rows, 0, pad);
    std::memset(o + 16 * group + 64 + 4 * rows, 0, pad);
  }
}

namespace ref {
void PackTile(GgmlType t, const void* w, size_t w_stride, int64_t rows, int64_t k, void* dst, void* scratch) {
  const int group = PackGroup(t);
  const int64_t ng = k / group;
  const size_t gb = GroupBytes(group);
  auto* out = static_cast<uint8_t*>(dst);
  auto* q = static_cast<uint8_t*>(scratch);
  auto* d = reinterpret_cast<float*>(q + k);  // k is a multiple of 32: float-aligned
  float* m = d + ng;
  if (rows < kPackRows) std::memset(out, 0, PackedTileBytes(k, group));
  for (int64_t r = 0; r < rows; ++r) {
    const void* row = static_cast<const uint8_t*>(w) + size_t(r) * w_stride;
    if (t == GgmlType::Q8_0) {
      UnpackQ8_0(row, k, d, m, q);
    } else if (t == GgmlType::Q6_K) {
      UnpackQ6_K(row, k, d, m, q);
    } else {
      UnpackAffine32(t, row, k, d, m, q);
    }
    for (int64_t g = 0; g < ng; ++g) {
      uint8_t* o = out + size_t(g) * gb;
      for (int c = 0; c < group / 4; ++c) std::memcpy(o + 64 * c + 4 * r, q + g * group + 4 * c, 4);
      std::memcpy(o + size_t(16 * group) + 4 * size_t(r), &d[g], 4);
      std::memcpy(o + size_t(16 * group) + 64 + 4 * size_t(r), &m[g], 4);
    }
  }
}

}  // namespace ref

void Q8_0Scales(const void* a, int64_t k, int group, int offset, float* ad, float* asum, int32_t* aoff) {
  const auto* x = static_cast<const BlockQ8_0*>(a);
  const int per = 32 / group;  // groups per block: 1 or 2
  for (int64_t b = 0; b < k / 32; ++b) {
    const float s = Fp16ToFp32(x[b].d);
    ad[b] = s;
    for (int h = 0; h < per; ++h) {
      int32_t sum = 0;
      for (int i = 0; i < group; ++i) sum += x[b].qs[h * group + i];
      asum[b * per + h] = s * float(sum);
      if (offset != 0) aoff[b * per + h] = -offset * sum;
    }
  }
}

namespace ref {

// The definition: per group, d * ad * (integer dot) + m * asum (or d * ad * (integer dot + aoff)),
// summed over the groups in order.
void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  const int64_t ng = k / group, nb = k / 32;
  const size_t gb = GroupBytes(group);
  const auto* base = static_cast<const uint8_t*>(tile);
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto* at = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(a.q) + size_t(t) * a.q_stride);
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* o = base + size_t(g) * gb;
        const int64_t e0 = g * group;
        int32_t dot = 0;
        for (int i = 0; i < group; ++i) {
          const int64_t e = e0 + i;
          dot += int32_t(o[64 * (i / 4) + 4 * r + i % 4]) * int32_t(at[e / 32].qs[e % 32]);
        }
        float dr, mr;
        std::memcpy(&dr, o + size_t(16 * group) + 4 * size_t(r), 4);
        std::memcpy(&mr, o + size_t(16 * group) + 64 + 4 * size_t(r), 4);
        if (a.aoff != nullptr) {  // fixed offset: exact in the integer dot
          sum += dr * a.ad[t * nb + e0 / 32] * float(dot + a.aoff[t * ng + g]);
        } else {
          sum += dr * a.ad[t * nb + e0 / 32] * float(dot) + mr * a.asum[t * ng + g];
        }
      }
      y[t * y_stride + r] = sum;
    }
  }
}

}  // namespace ref
}  // namespace zf::quant

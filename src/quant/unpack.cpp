// Exact unpacking of affine block formats into 32-element groups for the prefill GEMM:
// w[32g + i] = d[g] * q[32g + i] + m[g], q in [0, 31]. Only integer unpacking and products of
// a 16-bit float with a small integer (exact in float) happen here, so the GEMM sees exactly
// the values the reference dequantizes.
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant.h"

namespace zf::quant {
namespace {

// Nibble layout of the 32-element legacy blocks: element i is the low nibble of qs[i] (i < 16)
// or the high nibble of qs[i - 16]; Q5 adds bit i of qh as 0x10.
inline void Legacy(const uint8_t* qs, const uint8_t* qh, uint8_t* q) {
  uint32_t h = 0;
  if (qh != nullptr) std::memcpy(&h, qh, 4);
  for (int i = 0; i < 16; ++i) {
    q[i] = uint8_t((qs[i] & 0x0F) | (((h >> i) & 1u) << 4));
    q[i + 16] = uint8_t((qs[i] >> 4) | (((h >> (i + 16)) & 1u) << 4));
  }
}

template <typename Block, bool kHasQh>
void KQuant(const Block* x, int64_t nsb, float* d, float* m, uint8_t* q) {
  for (int64_t s = 0; s < nsb; ++s) {
    uint8_t sc[8], mn[8];
    UnpackScaleMinK4(x[s].scales, sc, mn);
    const float dd = Fp16ToFp32(x[s].d), dm = Fp16ToFp32(x[s].dmin);
    for (int c = 0; c < 4; ++c) {  // 64 elements: sub-blocks 2c (low nibbles) and 2c+1 (high)
      const uint8_t* qs = x[s].qs + 32 * c;
      uint8_t* lo = q + 256 * s + 64 * c;
      uint8_t* hi = lo + 32;
      for (int l = 0; l < 32; ++l) {
        uint8_t a = qs[l] & 0x0F, b = qs[l] >> 4;
        if constexpr (kHasQh) {
          a = uint8_t(a | (((x[s].qh[l] >> (2 * c)) & 1u) << 4));
          b = uint8_t(b | (((x[s].qh[l] >> (2 * c + 1)) & 1u) << 4));
        }
        lo[l] = a;
        hi[l] = b;
      }
      for (int j = 0; j < 2; ++j) {
        d[8 * s + 2 * c + j] = dd * float(sc[2 * c + j]);
        m[8 * s + 2 * c + j] = -dm * float(mn[2 * c + j]);
      }
    }
  }
}

}  // namespace

bool IsAffine32(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q4_K: case GgmlType::Q5_K:
      return true;
    default:
      return false;
  }
}

bool UnpackAffine32(GgmlType t, const void* row, int64_t k, float* d, float* m, uint8_t* q) {
  const int64_t nb = k / 32;
  switch (t) {
    case GgmlType::Q4_0: {
      const auto* x = static_cast<const BlockQ4_0*>(row);
      for (int64_t b = 0; b < nb; ++b) {
        d[b] = Fp16ToFp32(x[b].d);
        m[b] = -8.0f * d[b];
        Legacy(x[b].qs, nullptr, q + 32 * b);
      }
      return true;
    }
    case GgmlType::Q4_1: {
      const auto* x = static_cast<const BlockQ4_1*>(row);
      for (int64_t b = 0; b < nb; ++b) {
        d[b] = Fp16ToFp32(x[b].d);
        m[b] = Fp16ToFp32(x[b].m);
        Legacy(x[b].qs, nullptr, q + 32 * b);
      }
      return true;
    }
    case GgmlType::Q5_0: {
      const auto* x = static_cast<const BlockQ5_0*>(row);
      for (int64_t b = 0; b < nb; ++b) {
        d[b] = Fp16ToFp32(x[b].d);
        m[b] = -16.0f * d[b];
        Legacy(x[b].qs, x[b].qh, q + 32 * b);
      }
      return true;
    }
    case GgmlType::Q5_1: {
      const auto* x = static_cast<const BlockQ5_1*>(row);
      for (int64_t b = 0; b < nb; ++b) {
        d[b] = Fp16ToFp32(x[b].d);
        m[b] = Fp16ToFp32(x[b].m);
        Legacy(x[b].qs, x[b].qh, q + 32 * b);
      }
      return true;
    }
    case GgmlType::Q4_K:
      KQuant<BlockQ4_K, false>(static_cast<const BlockQ4_K*>(row), k / 256, d, m, q);
      return true;
    case GgmlType::Q5_K:
      KQuant<BlockQ5_K, true>(static_cast<const BlockQ5_K*>(row), k / 256, d, m, q);
      return true;
    default:
      return false;
  }
}

}  // namespace zf::quant

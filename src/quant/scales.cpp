// Scans GGUF tensor data for non-finite scales (scales.h).
#include "quant/scales.h"

#include <cstring>

#include "quant/blocks.h"

namespace zf::quant {
namespace {

inline bool Fp16NonFinite(uint16_t h) { return (h & 0x7C00u) == 0x7C00u; }
inline bool Bf16NonFinite(uint16_t h) { return (h & 0x7F80u) == 0x7F80u; }

inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Blocks of `bytes` bytes whose fp16 fields sit at the given offsets (one or two).
int64_t ScanFp16(const uint8_t* data, size_t nbytes, size_t bytes, size_t off0, long off1) {
  const size_t n = nbytes / bytes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* b = data + i * bytes;
    if (Fp16NonFinite(Load16(b + off0)) || (off1 >= 0 && Fp16NonFinite(Load16(b + off1)))) return int64_t(i);
  }
  return -1;
}

}  // namespace

int64_t FindNonFiniteBlock(GgmlType type, const uint8_t* data, size_t nbytes) {
  switch (type) {
    case GgmlType::F32: {
      for (size_t i = 0; i < nbytes / 4; ++i) {
        uint32_t v;
        std::memcpy(&v, data + 4 * i, 4);
        if ((v & 0x7F800000u) == 0x7F800000u) return int64_t(i);
      }
      return -1;
    }
    case GgmlType::F16:
      for (size_t i = 0; i < nbytes / 2; ++i) {
        if (Fp16NonFinite(Load16(data + 2 * i))) return int64_t(i);
      }
      return -1;
    case GgmlType::BF16:
      for (size_t i = 0; i < nbytes / 2; ++i) {
        if (Bf16NonFinite(Load16(data + 2 * i))) return int64_t(i);
      }
      return -1;
    case GgmlType::Q4_0: return ScanFp16(data, nbytes, sizeof(BlockQ4_0), offsetof(BlockQ4_0, d), -1);
    case GgmlType::Q4_1: return ScanFp16(data, nbytes, sizeof(BlockQ4_1), offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m));
    case GgmlType::Q5_0: return ScanFp16(data, nbytes, sizeof(BlockQ5_0), offsetof(BlockQ5_0, d), -1);
    case GgmlType::Q5_1: return ScanFp16(data, nbytes, sizeof(BlockQ5_1), offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m));
    case GgmlType::Q8_0: return ScanFp16(data, nbytes, sizeof(BlockQ8_0), offsetof(BlockQ8_0, d), -1);
    case GgmlType::Q2_K:
      return ScanFp16(data, nbytes, sizeof(BlockQ2_K), offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin));
    case GgmlType::Q3_K: return ScanFp16(data, nbytes, sizeof(BlockQ3_K), offsetof(BlockQ3_K, d), -1);
    case GgmlType::Q4_K:
      return ScanFp16(data, nbytes, sizeof(BlockQ4_K), offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin));
    case GgmlType::Q5_K:
      return ScanFp16(data, nbytes, sizeof(BlockQ5_K), offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin));
    case GgmlType::Q6_K: return ScanFp16(data, nbytes, sizeof(BlockQ6_K), offsetof(BlockQ6_K, d), -1);
    case GgmlType::IQ4_NL: return ScanFp16(data, nbytes, sizeof(BlockIQ4_NL), offsetof(BlockIQ4_NL, d), -1);
    case GgmlType::IQ4_XS: return ScanFp16(data, nbytes, sizeof(BlockIQ4_XS), offsetof(BlockIQ4_XS, d), -1);
    case GgmlType::MXFP4:
      // E8M0 has no infinity; 0xFF is its NaN, and exponents from 253 up make the block's
      // largest values (12 * 2^(e - 128)) overflow a float.
      for (size_t i = 0; i < nbytes / sizeof(BlockMXFP4); ++i) {
        if (data[i * sizeof(BlockMXFP4) + offsetof(BlockMXFP4, e)] >= 253) return int64_t(i);
      }
      return -1;
    default: return -1;  // types the engine does not compute with are refused elsewhere
  }
}

}  // namespace zf::quant

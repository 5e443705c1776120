// Byte layouts of the GGUF quantized blocks (facts of the file format) used by the CPU kernels.
//
// Field order and sizes must match the on-disk blocks exactly: rows are read in place from the
// memory-mapped file. Half-precision fields are stored as raw IEEE binary16 bits (uint16_t).
// Plain data; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <cstring>

namespace zf::quant {

constexpr int kQK = 32;    // elements per legacy block (Q4_0 .. Q8_1)
constexpr int kQK_K = 256;  // elements per K-quant super-block

// d * (q - 8), q in [0, 15]; element j in the low nibble of qs[j], j + 16 in the high nibble.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// d * q + m, same nibble order as Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
// d * (q - 16), q = nibble | (bit j of qh as little-endian uint32) << 4.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// d * q + m, 5-bit q as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// d * q.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
// Activation block for Q4_1/Q5_1: d * q, and s = fp16(d * sum(q)) for the weights' min term.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16: d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), 2-bit q.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
// 16 sub-blocks of 16: d * (s6 - 32) * (q2 - (hmask bit ? 0 : 4)), 6-bit scales packed in 12 bytes.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 8 sub-blocks of 32: d * sc * q - dmin * m, 6-bit sc/m packed in 12 bytes, 4-bit q.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
// As Q4_K with a fifth bit per element in qh (bit j for sub-block j).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// 16 sub-blocks of 16: d * scales[j] * (q - 32), q = 4 low bits (ql) | 2 high bits (qh) << 4.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
// Activation block for the K quants: d * q with a float d, plus the sums of each 16 quants
// (used for the weights' min / offset terms).
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// d * kValuesIQ4NL[q]: Q4_0's layout with a non-linear 4-bit codebook.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
// 8 sub-blocks of 32: d * (ls - 32) * kValuesIQ4NL[q], ls 6 bits: the low 4 in scales_l (nibble
// j % 2 of byte j / 2), the top 2 in bits 2j, 2j + 1 of scales_h. Sub-block j's quants are
// qs[16j..16j+15], low nibbles first (Q4_0's order within each sub-block).
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
// OCP MX FP4: 32 E2M1 values sharing an E8M0 exponent e; w = 2^(e - 128) * kValuesMXFP4[q]
// (the codebook holds the E2M1 values doubled, hence the extra halving). Q4_0's nibble order.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block size");
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block size");
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block size");
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 block size");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block size");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block size");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block size");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block size");
static_assert(sizeof(BlockQ8_1) == 36, "Q8_1 block size");
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block size");
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block size");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block size");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block size");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block size");

// Internal linkage: files compiled for different ISAs include these (see packed_layout.h).
namespace {

// The codebooks of the format (values fixed by the file format; all fit int8).
constexpr int8_t kValuesIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
constexpr int8_t kValuesMXFP4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) exactly, as a float built from its bits (e = 0 and 1 give subnormals): MXFP4's
// scale with the codebook's doubling folded in.
inline float E8M0ToFp32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e - 1) << 23);
  float f;
  static_assert(sizeof(f) == sizeof(bits), "float is 32 bits");
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The same 256 values as a table built at compile time (powers of two: every halving and
// doubling is exact), for kernels that look the scale up. A table with a run-time constructor
// must not live in the ISA-specific files: its static initializer would run, with their
// instructions, on CPUs without them.
struct E8M0HalfTable {
  float v[256];
};
constexpr E8M0HalfTable MakeE8M0HalfTable() {
  E8M0HalfTable t{};
  float x = 1.0f;
  for (int i = 0; i < 128; ++i) x *= 0.5f;  // 2^-128 (a subnormal, as E8M0ToFp32Half(0))
  for (int e = 0; e < 256; ++e) {
    t.v[e] = x;
    if (e < 255) x *= 2.0f;  // 2^128 would overflow
  }
  return t;
}
constexpr E8M0HalfTable kE8M0Half = MakeE8M0HalfTable();

// The 6-bit scale of IQ4_XS sub-block j, still biased by +32.
inline int IQ4XSScale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | (((b.scales_h >> (2 * j)) & 3) << 4);
}

// Q6_K's 6-bit values in element order, q in [0, 63] (w = d * scales[e / 16] * (q - 32)): the
// low 4 bits from ql, the top 2 from qh, as the reference dequantizer lays them out.
inline void Q6KValues(const BlockQ6_K& x, uint8_t* q) {
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = x.ql + 64 * n;
    const uint8_t* qh = x.qh + 32 * n;
    uint8_t* o = q + 128 * n;
    for (int l = 0; l < 32; ++l) {
      o[l] = uint8_t((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
      o[l + 32] = uint8_t((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
      o[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      o[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block size");

// Unpacks the 8 six-bit scales and 8 six-bit mins of a Q4_K/Q5_K block. Bytes 0-3 hold the low
// 6 bits of scales 0-3 (top 2 bits: high bits of scales 4-7), bytes 4-7 the same for mins, and
// bytes 8-11 the low 4 bits of scales 4-7 (low nibble) and mins 4-7 (high nibble).
inline void UnpackScaleMinK4(const uint8_t* s, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0F) | ((s[j] >> 6) << 4));
    m[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

// Unpacks the 16 six-bit Q3_K scales (still biased by +32): low 4 bits from bytes 0-7 (low
// nibbles for scales 0-7, high nibbles for 8-15), high 2 bits from bytes 8-11.
inline void UnpackScalesQ3K(const uint8_t* s, int8_t* out) {
  for (int i = 0; i < 16; ++i) {
    const int lo = (i < 8) ? (s[i] & 0x0F) : (s[i - 8] >> 4);
    const int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    out[i] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}

}  // namespace

}  // namespace zf::quant

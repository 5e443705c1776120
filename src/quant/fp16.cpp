// IEEE binary16 and bfloat16 <-> binary32 conversions, written with integer bit manipulation so
// they are exact and identical on every compiler and ISA (no dependence on F16C or _Float16);
// AArch64 uses its hardware half conversions instead (quant.h), which give the same values.
#include <cstring>

#include "quant/quant.h"

namespace zf::quant {
namespace {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

#if !defined(__aarch64__)  // AArch64: inline hardware conversions (quant.h)
float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return BitsFloat(sign | 0x7F800000u | (mant << 13));  // inf / NaN (payload kept)
  if (exp != 0) return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return BitsFloat(sign);  // +-0
  // Subnormal half: mant * 2^-24. Normalize so the leading 1 lands in bit 10.
  int e = 113;  // exponent (biased for fp32) of 2^-14
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return BitsFloat(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13));
}

uint16_t Fp32ToFp16(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {  // NaN: keep the top payload bits and force the quiet bit
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  // 65520 is the midpoint between 65504 (largest half) and 65536; the tie rounds to the even
  // neighbour, which is the overflow, so everything from there on becomes infinity.
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a < 0x38800000u) {  // below 2^-14: a half subnormal (or zero) in units of 2^-24
    const uint32_t e = a >> 23;
    if (e < 102) return sign;  // < 2^-25: rounds to zero (2^-25 itself is handled below)
    const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value / 2^-24 = mant * 2^(e - 126)
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3FFu);
  const uint32_t rem = a & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry into the exponent is correct
  return static_cast<uint16_t>(sign | h);
}
#endif

float Bf16ToFp32(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

uint16_t Fp32ToBf16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; the carry may run into the exponent (up to inf).
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

void Fp16ToFp32Row(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(src[i]);
}

void Fp32ToFp16Row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp32ToFp16(src[i]);
}

void Bf16ToFp32Row(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(src[i]);
}

void Fp32ToBf16Row(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp32ToBf16(src[i]);
}

}  // namespace zf::quant

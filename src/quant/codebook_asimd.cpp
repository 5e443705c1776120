// AArch64 baseline Advanced SIMD (every ARMv8-A CPU, no compiler flags) dot products of the
// codebook formats: IQ4_NL and MXFP4 against Q8_0, IQ4_XS against Q8_K. The 4-bit indices
// become int8 values by one TBL, the products are summed exactly in int32 lanes (Dot32,
// neon_inline.h; |value| <= 127): every integer sum is exact, and each block's float
// step is the reference's (sum += float(sumi) * scale), so the results are bit-identical to
// it. Picked at run time on every aarch64 CPU (quant.cpp); elsewhere this file is empty.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/neon_inline.h"

namespace zf::quant::asimd {
namespace {

// Sum of the 32 products of one block's codebook values (16 packed index bytes, low nibbles
// first) with 32 int8 activations.
inline int32_t BlockSum(const int8x16_t book, const uint8_t* qs, const int8_t* a) {
  const uint8x16_t q = vld1q_u8(qs);
  const int8x16_t lo = vqtbl1q_s8(book, vandq_u8(q, vdupq_n_u8(0x0F)));
  const int8x16_t hi = vqtbl1q_s8(book, vshrq_n_u8(q, 4));
  return vaddvq_s32(Dot32(lo, hi, vld1q_s8(a), vld1q_s8(a + 16)));
}

inline float ScaleOf(const BlockIQ4_NL& b) { return Fp16ToFp32(b.d); }
inline float ScaleOf(const BlockMXFP4& b) { return kE8M0Half.v[b.e]; }

template <typename Block>
float DotQ8_0(int64_t n, const void* w, const void* a, const int8_t* values) {
  const Block* x = static_cast<const Block*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  const int8x16_t book = vld1q_s8(values);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    const int32_t sumi = BlockSum(book, x[i].qs, y[i].qs);
    sum += static_cast<float>(sumi) * (ScaleOf(x[i]) * Fp16ToFp32(y[i].d));
  }
  return sum;
}

}  // namespace

float VecDotIQ4_NL(int64_t n, const void* w, const void* a) { return DotQ8_0<BlockIQ4_NL>(n, w, a, kValuesIQ4NL); }
float VecDotMXFP4(int64_t n, const void* w, const void* a) { return DotQ8_0<BlockMXFP4>(n, w, a, kValuesMXFP4); }

float VecDotIQ4_XS(int64_t n, const void* w, const void* a) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  const int8x16_t book = vld1q_s8(kValuesIQ4NL);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int32_t isum = 0;
    for (int j = 0; j < kQK_K / 32; ++j) {
      isum += (IQ4XSScale(x[i], j) - 32) * BlockSum(book, x[i].qs + 16 * j, y[i].qs + 32 * j);
    }
    sum += (Fp16ToFp32(x[i].d) * y[i].d) * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace zf::quant::asimd

#endif  // __aarch64__

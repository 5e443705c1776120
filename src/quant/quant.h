// Quantized formats: dequantization, activation quantization and dot products (CPU).
//
// Weights stay in their GGUF blocks. A matrix-vector product quantizes the activation row once
// to the weight type's "vec dot type" (as the reference engine does: Q8_0 for Q4_0/Q5_0/Q8_0/
// IQ4_NL/MXFP4, Q8_1 for Q4_1/Q5_1, Q8_K for the K quants and IQ4_XS, F16 for F16, BF16 for
// BF16, F32 for F32) and runs an integer dot product per weight row. Every function has a scalar
// reference implementation (quant_ref*.cpp) and may have SIMD versions (quant_avx2.cpp) picked
// once at run time from the CPU features; all functions are thread-safe (pure functions of
// their arguments).
//
// Preconditions (callers validate tensor shapes/types once at load time; checked by assert in
// debug builds only because these are the hot loops): n is a multiple of the block size of the
// type, buffers hold RowSize(type, n) bytes, and the type is supported.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/ggml_types.h"

namespace zf::quant {

// True if DequantizeRow/VecDot support this weight type (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4).
bool IsSupported(GgmlType t);

// Dequantizes n elements (a multiple of the block size) from src into dst. Also accepts the
// activation types Q8_1 and Q8_K (used by tests and debugging).
void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n);

// The activation format VecDot expects for weight type t (Q8_0, Q8_1, Q8_K, F16, BF16 or F32).
// Returns t itself for unsupported types.
GgmlType VecDotType(GgmlType weight_type);

// Quantizes n floats into `act_type` blocks (act_type is a VecDotType result; F32 copies). dst
// holds RowSize(act_type, n) bytes.
void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n);

// Dot product of one weight row (n elements of weight_type) with one activation row already in
// VecDotType(weight_type). n is a multiple of the block size.
float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row);

// The kernel VecDot would call for this weight type (nullptr if unsupported), so a GEMV loop
// over rows can look it up once instead of switching on the type per row.
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* act_row);
VecDotFn GetVecDotFn(GgmlType weight_type);

// Name of the instruction set the dispatching functions use: "avx512-vnni", "avx2", "neon-dotprod",
// "neon" (aarch64 without the dot product) or "scalar".
const char* ActiveIsa();

// Multi-token product on Q8_0 rows (prefill): y[t * y_stride + r] = dot(weight row r,
// activation row t) for r < rows, t < n_tok; rows of k elements, strides in bytes. Same value
// as VecDot(Q8_0, ...) per pair, but each weight block is loaded once for several tokens.
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
              size_t a_stride, int64_t n_tok, float* y, int64_t y_stride);

// y += a * x over n floats (attention's weighted sum of V rows).
void AxpyF32(int64_t n, float a, const float* x, float* y);

// Decode product: y[r] = VecDot(t, k, weight row r, a) for r < rows (row stride in bytes), with
// several rows per pass where a kernel exists.
void Gemv(GgmlType t, int64_t k, const void* w, size_t stride, int64_t rows, const void* a, float* y);

// Exact unpacking of Q4_0, Q4_1, Q5_0, Q5_1, Q4_K and Q5_K rows into 32-element affine groups:
// w[32g + i] = d[g] * q[32g + i] + m[g], q in [0, 31] (k/32 groups). False for other types.
bool UnpackAffine32(GgmlType t, const void* row, int64_t k, float* d, float* m, uint8_t* q);
bool IsAffine32(GgmlType t);  // the types UnpackAffine32 accepts

// Prefill product on unpacked affine rows and Q8_0 activations: y[t * y_stride + r] =
// sum_g d[r,g] * da[t,g] * (q[r,g] . a[t,g]) + m[r,g] * asum[t,g], where asum[t,g] is
// da[t,g] * (sum of a[t,g]'s quants). Row r's d/m start at r * k/32, its q at r * k.
struct AffineRows {
  const float* d;
  const float* m;
  const uint8_t* q;
};
// True when GemmAffine has a SIMD kernel on this CPU (else requantizing to Q8_0 is faster).
bool HasFastGemmAffine();
void GemmAffine(int64_t k, const AffineRows& w, int64_t rows, const void* a, size_t a_stride,
                const float* asum, int64_t n_tok, float* y, int64_t y_stride);
// Per-block activation sums for GemmAffine: asum[g] = d[g] * sum(qs[g]) of one Q8_0 row.
void Q8_0BlockSums(const void* a, int64_t k, float* asum);

// Scalar reference versions (always available; the SIMD paths are tested against them).
namespace ref {
void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n);
void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n);
float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row);
}  // namespace ref

// IEEE half and bfloat16 conversions (portable bit manipulation; exact for every input).
#if defined(__aarch64__)
// Every AArch64 CPU converts half precision in hardware (FCVT): inline, so the loops over these
// (F16 KV cache rows, the portable attention and F16 dot products) vectorize. Same values as
// the portable code (round to nearest even, FPCR's default), except that a signaling NaN comes
// back quiet. Measured under qemu (guest instructions, SmolLM2 decode): the out-of-line
// portable conversions were 25% of the instructions once the matmuls ran on NEON.
inline float Fp16ToFp32(uint16_t h) {
  __fp16 x;
  std::memcpy(&x, &h, sizeof(x));
  return float(x);
}
inline uint16_t Fp32ToFp16(float f) {
  const __fp16 x = static_cast<__fp16>(f);
  uint16_t h;
  std::memcpy(&h, &x, sizeof(h));
  return h;
}
#else
float Fp16ToFp32(uint16_t h);
uint16_t Fp32ToFp16(float f);  // round to nearest even; overflow -> inf; NaN stays a quiet NaN
#endif
float Bf16ToFp32(uint16_t h);
uint16_t Fp32ToBf16(float f);  // round to nearest even; NaN stays a quiet NaN

// Row conversions (used for F16/BF16 activations and dequantization).
void Fp16ToFp32Row(const uint16_t* src, float* dst, int64_t n);
void Fp32ToFp16Row(const float* src, uint16_t* dst, int64_t n);
void Bf16ToFp32Row(const uint16_t* src, float* dst, int64_t n);
void Fp32ToBf16Row(const float* src, uint16_t* dst, int64_t n);

}  // namespace zf::quant

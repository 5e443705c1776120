// Internal: the per-type kernels behind quant.h (scalar reference and SIMD), for dispatch/tests.
//
// All kernels are pure functions of their arguments (thread-safe). n is the number of elements
// and must be a multiple of the type's block size; rows need only the natural alignment of the
// block struct (2 bytes, 4 for Q8_K).
#pragma once

#include <cstdint>

#include "quant/quant.h"

namespace zf::quant {

using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);

namespace ref {
// Dot products, weight row first, activation row (in the vec-dot type) second.
float VecDotF32(int64_t n, const void* w, const void* a);
float VecDotF16(int64_t n, const void* w, const void* a);
float VecDotBF16(int64_t n, const void* w, const void* a);
float VecDotQ4_0(int64_t n, const void* w, const void* a);  // x Q8_0
float VecDotQ4_1(int64_t n, const void* w, const void* a);  // x Q8_1
float VecDotQ5_0(int64_t n, const void* w, const void* a);  // x Q8_0
float VecDotQ5_1(int64_t n, const void* w, const void* a);  // x Q8_1
float VecDotQ8_0(int64_t n, const void* w, const void* a);  // x Q8_0
float VecDotQ2_K(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotQ3_K(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotQ4_K(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotQ5_K(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotQ6_K(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotIQ4_NL(int64_t n, const void* w, const void* a);  // x Q8_0
float VecDotIQ4_XS(int64_t n, const void* w, const void* a);  // x Q8_K
float VecDotMXFP4(int64_t n, const void* w, const void* a);   // x Q8_0

// Activation quantizers (the reference rounding: roundf for Q8_0/Q8_1, nearest-even for Q8_K).
void QuantizeQ8_0(const float* src, void* dst, int64_t n);
void QuantizeQ8_1(const float* src, void* dst, int64_t n);
void QuantizeQ8_K(const float* src, void* dst, int64_t n);

// Type -> kernel tables of the scalar reference; nullptr for unsupported types.
VecDotFn GetVecDotFn(GgmlType weight_type);
QuantizeFn GetQuantizeFn(GgmlType act_type);
DequantizeFn GetDequantizeFn(GgmlType t);
}  // namespace ref

#if defined(__x86_64__) || defined(__i386__)
// The kernels of quant_x86.inc, built twice: AVX2 + FMA + F16C (namespace avx2, call only when
// CpuHasAvx2Fma16()) and with AVX-512 VL + VNNI products (namespace vnni, quant_vnni_avx512.cpp,
// call only when CpuHasAvx512Vnni()). The Quantize* kernels are bit-identical to the reference
// quantizers (same float operations, same rounding).
#define ZF_DECLARE_X86_KERNELS \
  float VecDotF32(int64_t n, const void* w, const void* a); \
  float VecDotF16(int64_t n, const void* w, const void* a); \
  float VecDotBF16(int64_t n, const void* w, const void* a); \
  float VecDotQ4_0(int64_t n, const void* w, const void* a); \
  float VecDotQ4_1(int64_t n, const void* w, const void* a); \
  float VecDotQ5_0(int64_t n, const void* w, const void* a); \
  float VecDotQ5_1(int64_t n, const void* w, const void* a); \
  float VecDotQ8_0(int64_t n, const void* w, const void* a); \
  float VecDotQ4_K(int64_t n, const void* w, const void* a); \
  float VecDotQ5_K(int64_t n, const void* w, const void* a); \
  float VecDotQ6_K(int64_t n, const void* w, const void* a); \
  float VecDotIQ4_NL(int64_t n, const void* w, const void* a); \
  float VecDotIQ4_XS(int64_t n, const void* w, const void* a); \
  float VecDotMXFP4(int64_t n, const void* w, const void* a); \
  void QuantizeQ8_0(const float* src, void* dst, int64_t n); \
  void QuantizeQ8_1(const float* src, void* dst, int64_t n); \
  void QuantizeQ8_K(const float* src, void* dst, int64_t n); \
  void QuantizeF16(const float* src, void* dst, int64_t n); \
  void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a, \
                size_t a_stride, int64_t n_tok, float* y, int64_t y_stride); \
  void DequantizeF16(const void* src, float* dst, int64_t n); \
  bool Gemv(GgmlType t, int64_t n, const void* w, size_t stride, int64_t rows, const void* a, float* y); \
  void AxpyF32(int64_t n, float a, const float* x, float* y);
namespace avx2 {
ZF_DECLARE_X86_KERNELS
}  // namespace avx2
namespace vnni {
ZF_DECLARE_X86_KERNELS
}  // namespace vnni
#undef ZF_DECLARE_X86_KERNELS
#endif

#if defined(__aarch64__)
// AArch64 baseline Advanced SIMD (quant_asimd.cpp): every aarch64 CPU.
namespace asimd {
float VecDotF32(int64_t n, const void* w, const void* a);
float VecDotF16(int64_t n, const void* w, const void* a);
// codebook_asimd.cpp: bit-identical to the reference.
float VecDotIQ4_NL(int64_t n, const void* w, const void* a);
float VecDotIQ4_XS(int64_t n, const void* w, const void* a);
float VecDotMXFP4(int64_t n, const void* w, const void* a);
// dot_q8_asimd.cpp: bit-identical to the reference (GemmQ8_0: each result a VecDotQ8_0's bits).
float VecDotQ4_0(int64_t n, const void* w, const void* a);
float VecDotQ8_0(int64_t n, const void* w, const void* a);
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a, size_t a_stride,
              int64_t n_tok, float* y, int64_t y_stride);
}  // namespace asimd
// The same Q4_0 / Q8_0 kernels with the ARMv8.2 dot product (dot_q8_neon.cpp; the same bits);
// only call when CpuHasNeonDotprod().
namespace neon {
float VecDotQ4_0(int64_t n, const void* w, const void* a);
float VecDotQ8_0(int64_t n, const void* w, const void* a);
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a, size_t a_stride,
              int64_t n_tok, float* y, int64_t y_stride);
}  // namespace neon
#endif

// True when the CPU (and OS) support AVX2, FMA and F16C.
bool CpuHasAvx2Fma16();
// True on aarch64 when the CPU has the ARMv8.2 dot product (SDOT/UDOT).
bool CpuHasNeonDotprod();
// True on AMD Zen 4 (family 19h with AVX-512), whose decode kernels stream best without the
// software prefetch other CPUs need (packed_layout.h, PrefetchPlan).
bool CpuIsZen4();

// The instruction set of every CPU kernel family, chosen once per process (isa.cpp) from the CPU
// and the ZF_NO_AVX512 / ZF_NO_NEON switches, so the quant tables, attention and activations
// always agree. kAvx512 means AVX-512 F/BW/VL + VNNI on top of AVX2.
enum class Isa { kScalar, kAvx2, kAvx512, kNeon, kNeonDot };
Isa SelectedIsa();

// AVX-512 F/BW/VL/VNNI kernels (quant_avx512.cpp); only call when CpuHasAvx512Vnni() is true.
namespace avx512 {
float VecDotQ8_0(int64_t n, const void* w, const void* a);
void GemvQ8_0(int64_t k, const void* w, size_t stride, int64_t rows, const void* a, float* y);
// Decode GEMV: Q8_0 here, the other 32-element formats through vnni::Gemv.
bool Gemv(GgmlType t, int64_t n, const void* w, size_t stride, int64_t rows, const void* a, float* y);
void GemmQ8_0(int64_t k, const void* w, size_t w_stride, int64_t rows, const void* a,
              size_t a_stride, int64_t n_tok, float* y, int64_t y_stride);
void GemmAffine(int64_t k, const AffineRows& w, int64_t rows, const void* a, size_t a_stride,
                const float* asum, int64_t n_tok, float* y, int64_t y_stride);
}  // namespace avx512
bool CpuHasAvx512Vnni();

}  // namespace zf::quant

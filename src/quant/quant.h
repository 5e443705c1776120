// Quantized formats: dequantization, activation quantization and dot products (CPU).
//
// Weights stay in their GGUF blocks. A matrix-vector product quantizes the activation row once
// to the weight type's "vec dot type" (as the reference engine does: Q8_0 for Q4_0/Q5_0/Q8_0,
// Q8_1 for Q4_1/Q5_1, Q8_K for the K quants, F16 for F16, BF16 for BF16, F32 for F32) and runs an
// integer dot product per weight row. Every function has a scalar reference implementation
// (quant_ref.cpp) and may have SIMD versions picked at run time; all are thread-safe.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace zf::quant {

// True if DequantizeRow/VecDot support this weight type.
bool IsSupported(GgmlType t);

// Dequantizes n elements (a multiple of the block size) from src into dst.
void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n);

// The activation format VecDot expects for weight type t (Q8_0, Q8_1, Q8_K, F16, BF16 or F32).
GgmlType VecDotType(GgmlType weight_type);

// Quantizes n floats into `act_type` blocks (act_type is a VecDotType result; F32 copies).
void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n);

// Dot product of one weight row (n elements of weight_type) with one activation row already in
// VecDotType(weight_type). n is a multiple of the block size.
float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row);

// Scalar reference versions (always available; the SIMD paths are tested against them).
namespace ref {
void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n);
void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n);
float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row);
}  // namespace ref

// IEEE half and bfloat16 conversions.
float Fp16ToFp32(uint16_t h);
uint16_t Fp32ToFp16(float f);  // round to nearest even
float Bf16ToFp32(uint16_t h);
uint16_t Fp32ToBf16(float f);  // round to nearest even

}  // namespace zf::quant

// GGUF block layouts on the device and one primitive over them: dequantize the 32-element group
// g of a row (every supported type divides into 32-element groups: legacy blocks are one group,
// K-quant super-blocks are eight). GEMV, GEMM and get_rows are all written on top of it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "zfk.h"

namespace zfk {

// Byte sizes of one block and its element count, as stored in GGUF files.
struct BlockQ4_0 { __half d; uint8_t qs[16]; };
struct BlockQ4_1 { __half d, m; uint8_t qs[16]; };
struct BlockQ5_0 { __half d; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { __half d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { __half d; int8_t qs[32]; };
struct BlockQ4_K { __half d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5_K { __half d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; __half d; };
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22, "GGUF layout");
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144, "GGUF layout");
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210, "GGUF layout");

// Bytes per 32-element group position: row bytes = k / block_elems * block_bytes.
__host__ __device__ constexpr int BlockElems(int type) {
  return (type == ZFK_TYPE_Q4_K || type == ZFK_TYPE_Q5_K || type == ZFK_TYPE_Q6_K) ? 256
         : (type == ZFK_TYPE_F32 || type == ZFK_TYPE_F16 || type == ZFK_TYPE_BF16) ? 1 : 32;
}
__host__ __device__ constexpr int BlockBytes(int type) {
  return type == ZFK_TYPE_F32 ? 4 : type == ZFK_TYPE_F16 ? 2 : type == ZFK_TYPE_BF16 ? 2
       : type == ZFK_TYPE_Q4_0 ? 18 : type == ZFK_TYPE_Q4_1 ? 20 : type == ZFK_TYPE_Q5_0 ? 22
       : type == ZFK_TYPE_Q5_1 ? 24 : type == ZFK_TYPE_Q8_0 ? 34 : type == ZFK_TYPE_Q4_K ? 144
       : type == ZFK_TYPE_Q5_K ? 176 : type == ZFK_TYPE_Q6_K ? 210 : 0;
}
inline size_t RowBytes(int type, int64_t k) { return size_t(k / BlockElems(type)) * size_t(BlockBytes(type)); }

__host__ __device__ __forceinline__ uint32_t Load32Unaligned(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (12 packed bytes).
__host__ __device__ __forceinline__ void ScaleMinK4(int j, const uint8_t* q, float* sc, float* m) {
  if (j < 4) {
    *sc = float(q[j] & 63);
    *m = float(q[j + 4] & 63);
  } else {
    *sc = float((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = float((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// v[0..32) = elements 32g .. 32g+31 of a row stored as `Type` blocks. Host-callable too, so
// tests/kernels_host checks it against the CPU engine's dequantization without a GPU.
template <int Type>
__host__ __device__ __forceinline__ void DequantGroup(const uint8_t* row, int g, float* v) {
  if constexpr (Type == ZFK_TYPE_F32) {
    const float4* p = reinterpret_cast<const float4*>(row) + g * 8;  // rows are 16-byte aligned
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float4 f = p[i];
      v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
    }
  } else if constexpr (Type == ZFK_TYPE_F16) {
    const __half* p = reinterpret_cast<const __half*>(row) + g * 32;
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = __half2float(p[i]);
  } else if constexpr (Type == ZFK_TYPE_BF16) {
    const __nv_bfloat16* p = reinterpret_cast<const __nv_bfloat16*>(row) + g * 32;
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = __bfloat162float(p[i]);
  } else if constexpr (Type == ZFK_TYPE_Q4_0) {
    const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[g];
    const float d = __half2float(b.d);
    const uint16_t* q = reinterpret_cast<const uint16_t*>(b.qs);  // 2-byte aligned: 8 loads, not 16
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t w = q[i];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t byte = (w >> (8 * h)) & 0xFF;
        v[2 * i + h] = d * float(int(byte & 0xF) - 8);
        v[2 * i + h + 16] = d * float(int(byte >> 4) - 8);
      }
    }
  } else if constexpr (Type == ZFK_TYPE_Q4_1) {
    const BlockQ4_1& b = reinterpret_cast<const BlockQ4_1*>(row)[g];
    const float d = __half2float(b.d), m = __half2float(b.m);
    const uint32_t* q = reinterpret_cast<const uint32_t*>(b.qs);  // 4-byte aligned: 4 loads, not 16
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t w = q[i];
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const uint32_t byte = (w >> (8 * h)) & 0xFF;
        v[4 * i + h] = d * float(byte & 0xF) + m;
        v[4 * i + h + 16] = d * float(byte >> 4) + m;
      }
    }
  } else if constexpr (Type == ZFK_TYPE_Q5_0 || Type == ZFK_TYPE_Q5_1) {
    using B = std::conditional_t<Type == ZFK_TYPE_Q5_0, BlockQ5_0, BlockQ5_1>;
    const B& b = reinterpret_cast<const B*>(row)[g];
    const float d = __half2float(b.d);
    float m = -16.0f * d;  // Q5_0: q - 16
    if constexpr (Type == ZFK_TYPE_Q5_1) m = __half2float(b.m);
    const uint32_t qh = Load32Unaligned(b.qh);
    const uint16_t* q = reinterpret_cast<const uint16_t*>(b.qs);  // 2-byte aligned: 8 loads, not 16
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t w = q[i];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * i + h;
        const uint32_t byte = (w >> (8 * h)) & 0xFF;
        const int x0 = int(byte & 0xF) | int(((qh >> j) << 4) & 0x10);
        const int x1 = int(byte >> 4) | int((qh >> (j + 12)) & 0x10);
        v[j] = d * float(x0) + m;
        v[j + 16] = d * float(x1) + m;
      }
    }
  } else if constexpr (Type == ZFK_TYPE_Q8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[g];
    const float d = __half2float(b.d);
    const uint16_t* q = reinterpret_cast<const uint16_t*>(b.qs);  // 2-byte aligned: 16 loads, not 32
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t w = q[i];
      v[2 * i] = d * float(int8_t(w & 0xFF));
      v[2 * i + 1] = d * float(int8_t(w >> 8));
    }
  } else if constexpr (Type == ZFK_TYPE_Q4_K || Type == ZFK_TYPE_Q5_K) {
    using B = std::conditional_t<Type == ZFK_TYPE_Q4_K, BlockQ4_K, BlockQ5_K>;
    const B& b = reinterpret_cast<const B*>(row)[g >> 3];
    const int sub = g & 7;  // sub-block: 64-element chunk sub/2, low (even) or high (odd) nibbles
    float sc, mn;
    ScaleMinK4(sub, b.scales, &sc, &mn);
    const float d = __half2float(b.d) * sc, m = __half2float(b.dmin) * mn;
    // qs (and Q5_K's qh) start 16-byte aligned in the 144/176-byte super-blocks: 32-bit loads.
    const uint32_t* q = reinterpret_cast<const uint32_t*>(b.qs + 32 * (sub >> 1));
    const int shift = (sub & 1) * 4;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t w = q[i];
      uint32_t hb = 0;
      if constexpr (Type == ZFK_TYPE_Q5_K) hb = reinterpret_cast<const uint32_t*>(b.qh)[i];
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        int x = int((w >> (8 * h + shift)) & 0xF);
        if constexpr (Type == ZFK_TYPE_Q5_K) x += int((hb >> (8 * h + sub)) & 1) << 4;
        v[4 * i + h] = d * float(x) - m;
      }
    }
  } else if constexpr (Type == ZFK_TYPE_Q6_K) {
    const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[g >> 3];
    const int sub = g & 7;
    const int half = sub >> 2, r = sub & 3;  // r picks one of the four 32-element interleaves
    // ql and qh start at even offsets in the 210-byte super-blocks: 16-bit loads.
    const uint16_t* ql = reinterpret_cast<const uint16_t*>(b.ql + 64 * half + (r & 1) * 32);
    const uint16_t* qh = reinterpret_cast<const uint16_t*>(b.qh + 32 * half);
    const int nib = (r >> 1) * 4, hs = 2 * r;
    const float d = __half2float(b.d);
    const float d0 = d * float(b.scales[8 * half + 2 * r]), d1 = d * float(b.scales[8 * half + 1 + 2 * r]);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t lo = ql[i], hi = qh[i];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int l = 2 * i + h;
        const int x = int(((lo >> (8 * h + nib)) & 0xF) | (((hi >> (8 * h + hs)) & 3) << 4)) - 32;
        v[l] = (l < 16 ? d0 : d1) * float(x);
      }
    }
  }
}

// Calls f.template operator()<Type>() (f: a functor struct, C++17 has no template lambdas) for
// a runtime type id; false if unsupported.
template <typename F>
bool DispatchType(int type, F&& f) {
  switch (type) {
    case ZFK_TYPE_F32: f.template operator()<ZFK_TYPE_F32>(); return true;
    case ZFK_TYPE_F16: f.template operator()<ZFK_TYPE_F16>(); return true;
    case ZFK_TYPE_BF16: f.template operator()<ZFK_TYPE_BF16>(); return true;
    case ZFK_TYPE_Q4_0: f.template operator()<ZFK_TYPE_Q4_0>(); return true;
    case ZFK_TYPE_Q4_1: f.template operator()<ZFK_TYPE_Q4_1>(); return true;
    case ZFK_TYPE_Q5_0: f.template operator()<ZFK_TYPE_Q5_0>(); return true;
    case ZFK_TYPE_Q5_1: f.template operator()<ZFK_TYPE_Q5_1>(); return true;
    case ZFK_TYPE_Q8_0: f.template operator()<ZFK_TYPE_Q8_0>(); return true;
    case ZFK_TYPE_Q4_K: f.template operator()<ZFK_TYPE_Q4_K>(); return true;
    case ZFK_TYPE_Q5_K: f.template operator()<ZFK_TYPE_Q5_K>(); return true;
    case ZFK_TYPE_Q6_K: f.template operator()<ZFK_TYPE_Q6_K>(); return true;
    default: return false;
  }
}

}  // namespace zfk

// Scalar reference dot products: weight row (GGUF blocks) x activation row (vec-dot type).
//
// The integer part of each block is exact (int32); floats enter only through the per-block scales,
// in the reference's formulation: sum over blocks of d_w * d_a * sum(q_w * q_a) (+ min terms).
// These are the ground truth the SIMD kernels are tested against; clarity over speed.
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace zf::quant::ref {
namespace {

inline float H(uint16_t h) { return Fp16ToFp32(h); }

}  // namespace

// Float rows accumulate in double, as the reference's scalar path does (ggml_float).
float VecDotF32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(y[i]);
  return static_cast<float>(sum);
}

float VecDotF16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += static_cast<double>(Fp16ToFp32(x[i])) * static_cast<double>(Fp16ToFp32(y[i]));
  }
  return static_cast<float>(sum);
}

float VecDotBF16(int64_t n, const void* w, const void* a) {
  const uint16_t* x = static_cast<const uint16_t*>(w);
  const uint16_t* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += static_cast<double>(Bf16ToFp32(x[i])) * static_cast<double>(Bf16ToFp32(y[i]));
  }
  return static_cast<float>(sum);
}

float VecDotQ4_0(int64_t n, const void* w, const void* a) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
      sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d));
  }
  return sum;
}

float VecDotQ4_1(int64_t n, const void* w, const void* a) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j];
      sumi += (x[i].qs[j] >> 4) * y[i].qs[j + kQK / 2];
    }
    // (d q + m) . (d_a q_a) = d d_a sum(q q_a) + m * (d_a sum(q_a)) and s holds d_a sum(q_a).
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d)) + H(x[i].m) * H(y[i].s);
  }
  return sum;
}

namespace {
inline int Q5Value(const uint8_t* qs, uint32_t qh, int j) {
  const int lo = (j < 16) ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}
}  // namespace

float VecDotQ5_0(int64_t n, const void* w, const void* a) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += (Q5Value(x[i].qs, qh, j) - 16) * y[i].qs[j];
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d));
  }
  return sum;
}

float VecDotQ5_1(int64_t n, const void* w, const void* a) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += Q5Value(x[i].qs, qh, j) * y[i].qs[j];
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d)) + H(x[i].m) * H(y[i].s);
  }
  return sum;
}

float VecDotQ8_0(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x[i].qs[j] * y[i].qs[j];
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d));
  }
  return sum;
}

float VecDotQ2_K(int64_t n, const void* w, const void* a) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    // Min term: sum_j (dmin * m_j) * (d_a * bsums_j), exact in integers up to the two scales.
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * (x[i].scales[j] >> 4);
    int isum = 0;
    for (int e = 0; e < kQK_K; e += 16) {  // sub-block of 16 elements: e = 128h + 32s + l0
      const int h = e / 128, s = (e / 32) % 4, l0 = e % 32;
      int sub = 0;
      for (int l = 0; l < 16; ++l) sub += ((x[i].qs[32 * h + l0 + l] >> (2 * s)) & 3) * y[i].qs[e + l];
      isum += (x[i].scales[e / 16] & 0x0F) * sub;
    }
    const float dall = y[i].d * H(x[i].d);
    const float dmin = y[i].d * H(x[i].dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float VecDotQ3_K(int64_t n, const void* w, const void* a) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int8_t sc[16];
    UnpackScalesQ3K(x[i].scales, sc);
    int isum = 0;
    for (int e = 0; e < kQK_K; e += 16) {
      const int h = e / 128, s = (e / 32) % 4, l0 = e % 32;
      int sub = 0;
      for (int l = 0; l < 16; ++l) {
        const int lo = (x[i].qs[32 * h + l0 + l] >> (2 * s)) & 3;
        const int hi = (x[i].hmask[l0 + l] >> (4 * h + s)) & 1;
        sub += (lo - (hi ? 0 : 4)) * y[i].qs[e + l];
      }
      isum += sc[e / 16] * sub;
    }
    sum += (H(x[i].d) * y[i].d) * static_cast<float>(isum);
  }
  return sum;
}

namespace {
// Shared by Q4_K and Q5_K: value of element e (without the fifth bit) of a 4-bit K block.
inline int K4Nibble(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return ((e / 32) & 1) ? (byte >> 4) : (byte & 0x0F);
}
}  // namespace

float VecDotQ4_K(int64_t n, const void* w, const void* a) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(x[i].scales, sc, m);
    int summs = 0;  // sum_j m_j * sum(q_a in sub-block j), from the activation's bsums
    for (int j = 0; j < 8; ++j) summs += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    int isum = 0;
    for (int j = 0; j < 8; ++j) {
      int sub = 0;
      for (int l = 0; l < 32; ++l) sub += K4Nibble(x[i].qs, 32 * j + l) * y[i].qs[32 * j + l];
      isum += sc[j] * sub;
    }
    const float d = H(x[i].d) * y[i].d;
    const float dmin = H(x[i].dmin) * y[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float VecDotQ5_K(int64_t n, const void* w, const void* a) {
  const BlockQ5_K* x = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(x[i].scales, sc, m);
    int summs = 0;
    for (int j = 0; j < 8; ++j) summs += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
    int isum = 0;
    for (int j = 0; j < 8; ++j) {
      int sub = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = K4Nibble(x[i].qs, 32 * j + l) | (((x[i].qh[l] >> j) & 1) << 4);
        sub += q * y[i].qs[32 * j + l];
      }
      isum += sc[j] * sub;
    }
    const float d = H(x[i].d) * y[i].d;
    const float dmin = H(x[i].dmin) * y[i].d;
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sum;
}

float VecDotQ6_K(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int e0 = 0; e0 < kQK_K; e0 += 16) {
      int sub = 0;
      for (int e = e0; e < e0 + 16; ++e) {
        const int h = e / 128, g = (e / 32) % 4, l = e % 32;
        const uint8_t lbyte = x[i].ql[64 * h + 32 * (g & 1) + l];
        const int lo = (g >= 2) ? (lbyte >> 4) : (lbyte & 0x0F);
        const int hi = (x[i].qh[32 * h + l] >> (2 * g)) & 3;
        sub += ((lo | (hi << 4)) - 32) * y[i].qs[e];
      }
      isum += x[i].scales[e0 / 16] * sub;
    }
    sum += (H(x[i].d) * y[i].d) * static_cast<float>(isum);
  }
  return sum;
}

// Codebook formats against Q8_0 (IQ4_NL, MXFP4) and Q8_K (IQ4_XS): integer sums of codebook
// value times activation quant, scaled per block (per 32-element sub-block for IQ4_XS).
float VecDotIQ4_NL(int64_t n, const void* w, const void* a) {
  const BlockIQ4_NL* x = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += kValuesIQ4NL[x[i].qs[j] & 0x0F] * y[i].qs[j];
      sumi += kValuesIQ4NL[x[i].qs[j] >> 4] * y[i].qs[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * (H(x[i].d) * H(y[i].d));
  }
  return sum;
}

float VecDotMXFP4(int64_t n, const void* w, const void* a) {
  const BlockMXFP4* x = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += kValuesMXFP4[x[i].qs[j] & 0x0F] * y[i].qs[j];
      sumi += kValuesMXFP4[x[i].qs[j] >> 4] * y[i].qs[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * (E8M0ToFp32Half(x[i].e) * H(y[i].d));
  }
  return sum;
}

float VecDotIQ4_XS(int64_t n, const void* w, const void* a) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK_K / 32; ++j) {
      const uint8_t* qs = x[i].qs + 16 * j;
      const int8_t* q8 = y[i].qs + 32 * j;
      int sub = 0;
      for (int l = 0; l < 16; ++l) {
        sub += kValuesIQ4NL[qs[l] & 0x0F] * q8[l];
        sub += kValuesIQ4NL[qs[l] >> 4] * q8[l + 16];
      }
      isum += (IQ4XSScale(x[i], j) - 32) * sub;
    }
    sum += (H(x[i].d) * y[i].d) * static_cast<float>(isum);
  }
  return sum;
}

VecDotFn GetVecDotFn(GgmlType weight_type) {
  switch (weight_type) {
    case GgmlType::F32: return VecDotF32;
    case GgmlType::F16: return VecDotF16;
    case GgmlType::BF16: return VecDotBF16;
    case GgmlType::Q4_0: return VecDotQ4_0;
    case GgmlType::IQ4_NL: return VecDotIQ4_NL;
    case GgmlType::IQ4_XS: return VecDotIQ4_XS;
    case GgmlType::MXFP4: return VecDotMXFP4;
    case GgmlType::Q4_1: return VecDotQ4_1;
    case GgmlType::Q5_0: return VecDotQ5_0;
    case GgmlType::Q5_1: return VecDotQ5_1;
    case GgmlType::Q8_0: return VecDotQ8_0;
    case GgmlType::Q2_K: return VecDotQ2_K;
    case GgmlType::Q3_K: return VecDotQ3_K;
    case GgmlType::Q4_K: return VecDotQ4_K;
    case GgmlType::Q5_K: return VecDotQ5_K;
    case GgmlType::Q6_K: return VecDotQ6_K;
    default: return nullptr;
  }
}

float VecDot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row) {
  VecDotFn fn = GetVecDotFn(weight_type);
  return fn ? fn(n, weight_row, act_row) : 0.0f;
}

}  // namespace zf::quant::ref

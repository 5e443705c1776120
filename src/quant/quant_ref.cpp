// Scalar reference: dequantization of every supported type and activation quantization.
//
// Float expressions are written in the same order as the format's reference dequantizers
// (e.g. (d * sc) * q - (dmin * m)) so results are bit-identical to them; no FMA contraction.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace zf::quant::ref {
namespace {

inline float H(uint16_t h) { return Fp16ToFp32(h); }

void DequantF32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void DequantF16(const void* src, float* dst, int64_t n) {
  Fp16ToFp32Row(static_cast<const uint16_t*>(src), dst, n);
}
void DequantBF16(const void* src, float* dst, int64_t n) {
  Bf16ToFp32Row(static_cast<const uint16_t*>(src), dst, n);
}

void DequantQ4_0(const void* src, float* y, int64_t n) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

// The three codebook formats: one float multiply per element, as the reference dequantizer.
void DequantIQ4_NL(const void* src, float* y, int64_t n) {
  const BlockIQ4_NL* x = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kValuesIQ4NL[x[i].qs[j] & 0x0F]);
      y[j + kQK / 2] = d * static_cast<float>(kValuesIQ4NL[x[i].qs[j] >> 4]);
    }
  }
}

void DequantIQ4_XS(const void* src, float* y, int64_t n) {
  const BlockIQ4_XS* x = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    for (int j = 0; j < kQK_K / 32; ++j, y += 32) {
      const float dl = d * static_cast<float>(IQ4XSScale(x[i], j) - 32);
      const uint8_t* qs = x[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(kValuesIQ4NL[qs[l] & 0x0F]);
        y[l + 16] = dl * static_cast<float>(kValuesIQ4NL[qs[l] >> 4]);
      }
    }
  }
}

void DequantMXFP4(const void* src, float* y, int64_t n) {
  const BlockMXFP4* x = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = E8M0ToFp32Half(x[i].e);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(kValuesMXFP4[x[i].qs[j] & 0x0F]) * d;
      y[j + kQK / 2] = static_cast<float>(kValuesMXFP4[x[i].qs[j] >> 4]) * d;
    }
  }
}

void DequantQ4_1(const void* src, float* y, int64_t n) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    const float m = H(x[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0F) * d + m;
      y[j + kQK / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

// The 5-bit value of element j (0..31) of a Q5 block.
inline int Q5Value(const uint8_t* qs, uint32_t qh, int j) {
  const int lo = (j < 16) ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}

void DequantQ5_0(const void* src, float* y, int64_t n) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(Q5Value(x[i].qs, qh, j) - 16) * d;
  }
}

void DequantQ5_1(const void* src, float* y, int64_t n) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    const float m = H(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(Q5Value(x[i].qs, qh, j)) * d + m;
  }
}

void DequantQ8_0(const void* src, float* y, int64_t n) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void DequantQ8_1(const void* src, float* y, int64_t n) {
  const BlockQ8_1* x = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = H(x[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void DequantQ2_K(const void* src, float* y, int64_t n) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    const float dmin = H(x[i].dmin);
    // Element e = 128*h + 32*s + l takes bits 2s..2s+1 of qs[32*h + l]; sub-block e / 16.
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, s = (e / 32) % 4, l = e % 32;
      const uint8_t sc = x[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0x0F);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const int q = (x[i].qs[32 * h + l] >> (2 * s)) & 3;
      y[e] = dl * static_cast<float>(q) - ml;
    }
    y += kQK_K;
  }
}

void DequantQ3_K(const void* src, float* y, int64_t n) {
  const BlockQ3_K* x = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    int8_t sc[16];
    UnpackScalesQ3K(x[i].scales, sc);
    // Element e = 128*h + 32*s + l: low bits from qs[32*h + l] >> 2s, high bit (h*4 + s) of
    // hmask[l]; a clear high bit means q - 4.
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, s = (e / 32) % 4, l = e % 32;
      const int lo = (x[i].qs[32 * h + l] >> (2 * s)) & 3;
      const int hi = (x[i].hmask[l] >> (4 * h + s)) & 1;
      const float dl = d * static_cast<float>(sc[e / 16]);
      y[e] = dl * static_cast<float>(lo - (hi ? 0 : 4));
    }
    y += kQK_K;
  }
}

void DequantQ4_K(const void* src, float* y, int64_t n) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    const float dmin = H(x[i].dmin);
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(x[i].scales, sc, m);
    // Chunk c of 64: low nibbles of qs[32c..32c+31] (sub-block 2c), then high nibbles (2c+1).
    for (int e = 0; e < kQK_K; ++e) {
      const int sb = e / 32, c = e / 64, l = e % 32;
      const uint8_t byte = x[i].qs[32 * c + l];
      const int q = (sb & 1) ? (byte >> 4) : (byte & 0x0F);
      const float d1 = d * static_cast<float>(sc[sb]);
      const float m1 = dmin * static_cast<float>(m[sb]);
      y[e] = d1 * static_cast<float>(q) - m1;
    }
    y += kQK_K;
  }
}

void DequantQ5_K(const void* src, float* y, int64_t n) {
  const BlockQ5_K* x = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    const float dmin = H(x[i].dmin);
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(x[i].scales, sc, m);
    for (int e = 0; e < kQK_K; ++e) {
      const int sb = e / 32, c = e / 64, l = e % 32;
      const uint8_t byte = x[i].qs[32 * c + l];
      const int lo = (sb & 1) ? (byte >> 4) : (byte & 0x0F);
      const int q = lo | (((x[i].qh[l] >> sb) & 1) << 4);
      const float d1 = d * static_cast<float>(sc[sb]);
      const float m1 = dmin * static_cast<float>(m[sb]);
      y[e] = d1 * static_cast<float>(q) - m1;
    }
    y += kQK_K;
  }
}

void DequantQ6_K(const void* src, float* y, int64_t n) {
  const BlockQ6_K* x = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = H(x[i].d);
    // Element e = 128*h + 32*g + l: nibble g/2 of ql[64*h + 32*(g&1) + l], bits 2g..2g+1 of
    // qh[32*h + l] on top; value q - 32, scale scales[e / 16].
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, g = (e / 32) % 4, l = e % 32;
      const uint8_t lbyte = x[i].ql[64 * h + 32 * (g & 1) + l];
      const int lo = (g >= 2) ? (lbyte >> 4) : (lbyte & 0x0F);
      const int hi = (x[i].qh[32 * h + l] >> (2 * g)) & 3;
      const float ds = d * static_cast<float>(x[i].scales[e / 16]);
      y[e] = ds * static_cast<float>((lo | (hi << 4)) - 32);
    }
    y += kQK_K;
  }
}

void DequantQ8_K(const void* src, float* y, int64_t n) {
  const BlockQ8_K* x = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, y += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) y[j] = static_cast<float>(x[i].qs[j]) * x[i].d;
  }
}

// Round to nearest, ties to even, as the reference's nearest_int (the 1.5*2^23 trick), valid for
// |v| < 2^22; written portably without depending on the FPU rounding mode.
inline int NearestInt(float v) {
  const float r = std::nearbyint(v);  // default rounding mode: nearest-even
  return static_cast<int>(r);
}

// Clamps a scaled activation to the int8 range before it is converted: a NaN or infinite
// activation (from a broken model) must not reach a float-to-int conversion, which is undefined
// behaviour in C++. NaN maps to -127; finite inputs already lie within the range.
inline float Clamp127(float v) { return v >= -127.0f ? (v <= 127.0f ? v : 127.0f) : -127.0f; }

void QuantF32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void QuantF16(const float* src, void* dst, int64_t n) {
  Fp32ToFp16Row(src, static_cast<uint16_t*>(dst), n);
}
void QuantBF16(const float* src, void* dst, int64_t n) {
  Fp32ToBf16Row(src, static_cast<uint16_t*>(dst), n);
}

}  // namespace

void QuantizeQ8_0(const float* x, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(Clamp127(x[j] * id)));
  }
}

void QuantizeQ8_1(const float* x, void* dst, int64_t n) {
  BlockQ8_1* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::round(Clamp127(x[j] * id)));
      sum += y[i].qs[j];
    }
    // s carries d * sum(q) so that Q4_1/Q5_1 dot products add m * s for the weights' offset.
    y[i].s = Fp32ToFp16(static_cast<float>(sum) * d);
  }
}

void QuantizeQ8_K(const float* x, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // The signed value of largest magnitude (first one on ties) sets the scale so that it maps
    // to exactly -127 (the reference uses -127/max, not 127/amax; the sign matters for rounding).
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = NearestInt(Clamp127(iscale * x[j]));
      y[i].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int b = 0; b < kQK_K / 16; ++b) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[i].qs[16 * b + j];
      y[i].bsums[b] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

QuantizeFn GetQuantizeFn(GgmlType act_type) {
  switch (act_type) {
    case GgmlType::F32: return QuantF32;
    case GgmlType::F16: return QuantF16;
    case GgmlType::BF16: return QuantBF16;
    case GgmlType::Q8_0: return QuantizeQ8_0;
    case GgmlType::Q8_1: return QuantizeQ8_1;
    case GgmlType::Q8_K: return QuantizeQ8_K;
    default: return nullptr;
  }
}

DequantizeFn GetDequantizeFn(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return DequantF32;
    case GgmlType::F16: return DequantF16;
    case GgmlType::BF16: return DequantBF16;
    case GgmlType::Q4_0: return DequantQ4_0;
    case GgmlType::IQ4_NL: return DequantIQ4_NL;
    case GgmlType::IQ4_XS: return DequantIQ4_XS;
    case GgmlType::MXFP4: return DequantMXFP4;
    case GgmlType::Q4_1: return DequantQ4_1;
    case GgmlType::Q5_0: return DequantQ5_0;
    case GgmlType::Q5_1: return DequantQ5_1;
    case GgmlType::Q8_0: return DequantQ8_0;
    case GgmlType::Q8_1: return DequantQ8_1;
    case GgmlType::Q2_K: return DequantQ2_K;
    case GgmlType::Q3_K: return DequantQ3_K;
    case GgmlType::Q4_K: return DequantQ4_K;
    case GgmlType::Q5_K: return DequantQ5_K;
    case GgmlType::Q6_K: return DequantQ6_K;
    case GgmlType::Q8_K: return DequantQ8_K;
    default: return nullptr;
  }
}

void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n) {
  if (DequantizeFn fn = GetDequantizeFn(t)) fn(src, dst, n);
}

void QuantizeActivations(GgmlType act_type, const float* src, void* dst, int64_t n) {
  if (QuantizeFn fn = GetQuantizeFn(act_type)) fn(src, dst, n);
}

}  // namespace zf::quant::ref

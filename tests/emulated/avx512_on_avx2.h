// AVX-512 intrinsics on an AVX2 machine, for testing only: SIMDe's portable implementations
// (Debian's libsimde-dev) under the native names, plus the few that SIMDe 0.7.4 does not alias
// (element-wise, obviously correct versions). Included first by the *_emulated.cpp wrappers,
// which compile an AVX-512 kernel file unchanged so its logic runs, slowly, where no AVX-512
// CPU is available (QEMU's TCG cannot execute AVX-512 either). Sessions of this project run on
// AVX2-only and AVX-512 machines in turn; without this, an AVX-512 kernel changed on an AVX2
// machine would ship untested.
#pragma once

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <immintrin.h>

#include <cstdint>

// F16 -> F32 of 16 values: two F16C conversions (the test binaries are built with -mf16c).
static inline simde__m512 zf_emu_mm512_cvtph_ps(simde__m256i h) {
  // Whole-object copies: under clang SIMDe's private members are vector types, whose elements
  // have no address.
  const simde__m256i_private a = simde__m256i_to_private(h);
  __m128i lo, hi;
  __builtin_memcpy(&lo, reinterpret_cast<const char*>(&a), 16);
  __builtin_memcpy(&hi, reinterpret_cast<const char*>(&a) + 16, 16);
  alignas(64) float f[16];
  _mm256_storeu_ps(f, _mm256_cvtph_ps(lo));
  _mm256_storeu_ps(f + 8, _mm256_cvtph_ps(hi));
  simde__m512_private r;
  __builtin_memcpy(&r, f, sizeof f);
  return simde__m512_from_private(r);
}
static inline simde__m512 zf_emu_mm512_maskz_loadu_ps(simde__mmask16 k, const void* p) {
  simde__m512_private r;
  for (int i = 0; i < 16; ++i) r.f32[i] = (k >> i) & 1 ? static_cast<const float*>(p)[i] : 0.0f;
  return simde__m512_from_private(r);
}
static inline void zf_emu_mm512_mask_storeu_ps(void* p, simde__mmask16 k, simde__m512 v) {
  const simde__m512_private a = simde__m512_to_private(v);
  for (int i = 0; i < 16; ++i) {
    if ((k >> i) & 1) static_cast<float*>(p)[i] = a.f32[i];
  }
}
static inline simde__m512 zf_emu_mm512_cvtepi32_ps(simde__m512i v) {
  const simde__m512i_private a = simde__m512i_to_private(v);
  simde__m512_private r;
  for (int i = 0; i < 16; ++i) r.f32[i] = static_cast<float>(a.i32[i]);
  return simde__m512_from_private(r);
}
static inline simde__m512i zf_emu_mm512_cvtepi8_epi32(simde__m128i v) {
  const simde__m128i_private a = simde__m128i_to_private(v);
  simde__m512i_private r;
  for (int i = 0; i < 16; ++i) r.i32[i] = a.i8[i];
  return simde__m512i_from_private(r);
}
static inline simde__m512i zf_emu_mm512_cvtepu8_epi32(simde__m128i v) {
  const simde__m128i_private a = simde__m128i_to_private(v);
  simde__m512i_private r;
  for (int i = 0; i < 16; ++i) r.i32[i] = a.u8[i];
  return simde__m512i_from_private(r);
}

static inline simde__m256i zf_emu_mm256_maskz_set1_epi8(uint32_t k, char v) {
  simde__m256i_private r;
  for (int i = 0; i < 32; ++i) r.i8[i] = (k >> i) & 1 ? static_cast<int8_t>(v) : 0;
  return simde__m256i_from_private(r);
}
// Truncation toward zero; values out of int32 range give INT32_MIN, as VCVTTPS2DQ does.
static inline simde__m512i zf_emu_mm512_cvttps_epi32(simde__m512 v) {
  const simde__m512_private a = simde__m512_to_private(v);
  simde__m512i_private r;
  for (int i = 0; i < 16; ++i) {
    const float f = a.f32[i];
    r.i32[i] = (f >= -2147483648.0f && f < 2147483648.0f) ? static_cast<int32_t>(f) : INT32_MIN;
  }
  return simde__m512i_from_private(r);
}
static inline simde__m128i zf_emu_mm512_cvtepi32_epi8(simde__m512i v) {  // truncating (VPMOVDB)
  const simde__m512i_private a = simde__m512i_to_private(v);
  simde__m128i_private r;
  for (int i = 0; i < 16; ++i) r.i8[i] = static_cast<int8_t>(a.i32[i]);
  return simde__m128i_from_private(r);
}
static inline int32_t zf_emu_mm512_reduce_add_epi32(simde__m512i v) {
  const simde__m512i_private a = simde__m512i_to_private(v);
  uint32_t s = 0;
  for (int i = 0; i < 16; ++i) s += static_cast<uint32_t>(a.i32[i]);
  return static_cast<int32_t>(s);
}
static inline float zf_emu_mm512_reduce_max_ps(simde__m512 v) {
  const simde__m512_private a = simde__m512_to_private(v);
  float m = a.f32[0];
  for (int i = 1; i < 16; ++i) m = a.f32[i] > m ? a.f32[i] : m;
  return m;
}
// Pairwise, in the order GCC's _mm512_reduce_add_ps adds (halves, then quarters, ...).
static inline float zf_emu_mm512_reduce_add_ps(simde__m512 v) {
  simde__m512_private a = simde__m512_to_private(v);
  for (int w = 8; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) a.f32[i] += a.f32[i + w];
  }
  return a.f32[0];
}

// SIMDe 0.7.4 reads VRNDSCALEPS's immediate wrongly (it kept 3 fraction bits for
// _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); here: scale bits 7:4 must be 0, bits 1:0 the mode.
static inline simde__m512 zf_emu_mm512_roundscale_ps(simde__m512 v, int imm) {
  simde__m512_private a = simde__m512_to_private(v);
  for (int i = 0; i < 16; ++i) {
    const float f = a.f32[i];
    switch (imm & 3) {
      case 0: a.f32[i] = __builtin_nearbyintf(f); break;  // the default mode: nearest even
      case 1: a.f32[i] = __builtin_floorf(f); break;
      case 2: a.f32[i] = __builtin_ceilf(f); break;
      default: a.f32[i] = __builtin_truncf(f); break;
    }
  }
  return simde__m512_from_private(a);
}
static inline simde__m512i zf_emu_mm512_srai_epi32(simde__m512i v, unsigned int n) {  // arithmetic shift
  simde__m512i_private a = simde__m512i_to_private(v);
  for (int i = 0; i < 16; ++i) a.i32[i] = n > 31 ? (a.i32[i] < 0 ? -1 : 0) : (a.i32[i] >> n);
  return simde__m512i_from_private(a);
}

#undef _mm512_srai_epi32
#define _mm512_srai_epi32(v, n) zf_emu_mm512_srai_epi32(v, n)
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps(h) zf_emu_mm512_cvtph_ps(h)
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps(k, p) zf_emu_mm512_maskz_loadu_ps(k, p)
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps(p, k, v) zf_emu_mm512_mask_storeu_ps(p, k, v)
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps(v) zf_emu_mm512_cvtepi32_ps(v)
#undef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32(v) zf_emu_mm512_cvtepi8_epi32(v)
#undef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32(v) zf_emu_mm512_cvtepu8_epi32(v)
#undef _cvtu64_mask64
#define _cvtu64_mask64(x) static_cast<simde__mmask64>(x)
#define __mmask16 simde__mmask16
#undef _mm256_maskz_set1_epi8
#define _mm256_maskz_set1_epi8(k, v) zf_emu_mm256_maskz_set1_epi8(k, v)
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32(v) zf_emu_mm512_cvttps_epi32(v)
#undef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8(v) zf_emu_mm512_cvtepi32_epi8(v)
#undef _mm512_reduce_add_epi32
#define _mm512_reduce_add_epi32(v) zf_emu_mm512_reduce_add_epi32(v)
#undef _mm512_reduce_max_ps
#define _mm512_reduce_max_ps(v) zf_emu_mm512_reduce_max_ps(v)
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps(v) zf_emu_mm512_reduce_add_ps(v)
#define __mmask32 uint32_t
#define __mmask64 simde__mmask64
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps(v, imm) zf_emu_mm512_roundscale_ps(v, imm)

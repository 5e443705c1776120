// AVX-512 VNNI kernel of the packed prefill GEMM (layout and definition in gemm_packed.h).
//
// Register tile: 16 weight rows (the lanes) x up to 8 tokens. Per G-element group the G/4 weight
// chunks stay in registers (8 for G = 32) while each token's group is consumed: G/4 VPDPBUSD
// with a 32-bit broadcast of the activation bytes into one int32 accumulator (started at the
// token's -c * sum for fixed-offset formats), then one conversion, a multiply and one FMA
// (d * ad), plus one FMA (m * asum) for formats with a free m. That is
// 0.5 float operations per VPDPBUSD instead of 3 in the row-major kernels, and 8 independent
// token chains hide the VPDPBUSD latency. 8 weight + 8 float + 8 int registers + d, m fit in
// the 32 ZMM registers. Results differ from the scalar reference only by float rounding order.
#if defined(__x86_64__) || defined(__i386__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "quant/gemm_packed.h"

namespace zf::quant::avx512 {
namespace {

constexpr size_t kQ8Block = 34;  // bytes of a Q8_0 block: F16 scale + 32 quants

inline int32_t Load32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int G, int T, bool kOff>
void Tile(const uint8_t* tile, int64_t k, const uint8_t* a, size_t a_stride, const float* ad, const float* asum,
          const int32_t* aoff, float* y, int64_t y_stride, __mmask16 rmask) {
  constexpr int C = G / 4;
  constexpr size_t kGroupBytes = size_t(16 * G + 128);
  const int64_t ng = k / G, nb = k / 32;
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* p = tile + size_t(g) * kGroupBytes;
    __m512i w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) w[c] = _mm512_loadu_si512(p + 64 * c);
    const __m512 d = _mm512_loadu_ps(p + 16 * G);
    const __m512 m = kOff ? _mm512_setzero_ps() : _mm512_loadu_ps(p + 16 * G + 64);
    const int64_t b = (g * G) / 32;
    const uint8_t* ag = a + size_t(b) * kQ8Block + 2 + size_t((g * G) % 32);
    // Fully unrolled so that the T accumulators stay in registers (GCC otherwise interchanges
    // the loops and keeps them in memory).
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const uint8_t* aq = ag + size_t(j) * a_stride;
      const __m512i s0 = kOff ? _mm512_set1_epi32(aoff[j * ng + g]) : _mm512_setzero_si512();
      __m512i s = _mm512_dpbusd_epi32(s0, w[0], _mm512_set1_epi32(Load32(aq)));
#pragma GCC unroll 8
      for (int c = 1; c < C; ++c) s = _mm512_dpbusd_epi32(s, w[c], _mm512_set1_epi32(Load32(aq + 4 * c)));
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ad[j * nb + b])), _mm512_cvtepi32_ps(s), acc[j]);
      if (!kOff) acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(asum[j * ng + g]), acc[j]);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_mask_storeu_ps(y + j * y_stride, rmask, acc[j]);
}

template <int G, bool kOff>
void Run(const uint8_t* tile, int64_t k, int64_t rows, const PackedActs& pa, int64_t n_tok, float* y,
         int64_t y_stride) {
  const __mmask16 rmask = rows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
  const int64_t nb = k / 32, ng = k / G;
  const auto* a = static_cast<const uint8_t*>(pa.q);
  const size_t as = pa.q_stride;
  int64_t t = 0;
  for (; t + 8 <= n_tok; t += 8) {
    Tile<G, 8, kOff>(tile, k, a + size_t(t) * as, as, pa.ad + t * nb, pa.asum + t * ng, pa.aoff + (kOff ? t * ng : 0),
                     y + t * y_stride, y_stride, rmask);
  }
  const uint8_t* at = a + size_t(t) * as;
  const float* adt = pa.ad + t * nb;
  const float* ast = pa.asum + t * ng;
  const int32_t* aot = pa.aoff + (kOff ? t * ng : 0);
  float* yt = y + t * y_stride;
  switch (n_tok - t) {
    case 7: Tile<G, 7, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 6: Tile<G, 6, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 5: Tile<G, 5, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 4: Tile<G, 4, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 3: Tile<G, 3, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 2: Tile<G, 2, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    case 1: Tile<G, 1, kOff>(tile, k, at, as, adt, ast, aot, yt, y_stride, rmask); break;
    default: break;
  }
}

}  // namespace

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  const auto* tp = static_cast<const uint8_t*>(tile);
  const bool off = a.aoff != nullptr;
  if (group == 32) {
    off ? Run<32, true>(tp, k, rows, a, n_tok, y, y_stride) : Run<32, false>(tp, k, rows, a, n_tok, y, y_stride);
  } else {
    off ? Run<16, true>(tp, k, rows, a, n_tok, y, y_stride) : Run<16, false>(tp, k, rows, a, n_tok, y, y_stride);
  }
}

}  // namespace zf::quant::avx512

#endif  // x86

// AVX-512 VNNI kernel of the packed prefill GEMM (layout and definition in gemm_packed.h).
//
// Register tile: 16 weight rows (the lanes) x up to 8 tokens. Per G-element group the G/4 weight
// chunks stay in registers (8 for G = 32) while each token's group is consumed: G/4 VPDPBUSD
// with a 32-bit broadcast of the activation bytes into one int32 accumulator, then one
// conversion and two FMAs (d * ad, and m * asum) into the token's float accumulator. That is
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

template <int G, int T>
void Tile(const uint8_t* tile, int64_t k, const uint8_t* a, size_t a_stride, const float* ad, const float* asum,
          float* y, int64_t y_stride, __mmask16 rmask) {
  constexpr int C = G / 4;
  constexpr size_t kGroupBytes = size_t(16 * G + 128);
  const int64_t ng = k / G, nb = k / 32;
  __m512 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* p = tile + size_t(g) * kGroupBytes;
    __m512i w[C];
    for (int c = 0; c < C; ++c) w[c] = _mm512_loadu_si512(p + 64 * c);
    const __m512 d = _mm512_loadu_ps(p + 16 * G);
    const __m512 m = _mm512_loadu_ps(p + 16 * G + 64);
    const int64_t b = (g * G) / 32;
    const uint8_t* ag = a + size_t(b) * kQ8Block + 2 + size_t((g * G) % 32);
    for (int j = 0; j < T; ++j) {
      const uint8_t* aq = ag + size_t(j) * a_stride;
      __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], _mm512_set1_epi32(Load32(aq)));
      for (int c = 1; c < C; ++c) s = _mm512_dpbusd_epi32(s, w[c], _mm512_set1_epi32(Load32(aq + 4 * c)));
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ad[j * nb + b])), _mm512_cvtepi32_ps(s), acc[j]);
      acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(asum[j * ng + g]), acc[j]);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_mask_storeu_ps(y + j * y_stride, rmask, acc[j]);
}

template <int G>
void Run(const uint8_t* tile, int64_t k, int64_t rows, const uint8_t* a, size_t a_stride, const float* ad,
         const float* asum, int64_t n_tok, float* y, int64_t y_stride) {
  const __mmask16 rmask = rows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
  const int64_t nb = k / 32, ng = k / G;
  int64_t t = 0;
  for (; t + 8 <= n_tok; t += 8) {
    Tile<G, 8>(tile, k, a + size_t(t) * a_stride, a_stride, ad + t * nb, asum + t * ng, y + t * y_stride, y_stride,
               rmask);
  }
  const uint8_t* at = a + size_t(t) * a_stride;
  const float* adt = ad + t * nb;
  const float* ast = asum + t * ng;
  float* yt = y + t * y_stride;
  switch (n_tok - t) {
    case 7: Tile<G, 7>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 6: Tile<G, 6>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 5: Tile<G, 5>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 4: Tile<G, 4>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 3: Tile<G, 3>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 2: Tile<G, 2>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    case 1: Tile<G, 1>(tile, k, at, a_stride, adt, ast, yt, y_stride, rmask); break;
    default: break;
  }
}

}  // namespace

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const void* a, size_t a_stride,
                const float* ad, const float* asum, int64_t n_tok, float* y, int64_t y_stride) {
  const auto* tp = static_cast<const uint8_t*>(tile);
  const auto* ap = static_cast<const uint8_t*>(a);
  if (group == 32) {
    Run<32>(tp, k, rows, ap, a_stride, ad, asum, n_tok, y, y_stride);
  } else {
    Run<16>(tp, k, rows, ap, a_stride, ad, asum, n_tok, y, y_stride);
  }
}

}  // namespace zf::quant::avx512

#endif  // x86

// AVX2 kernel of the packed prefill GEMM (layout and definition in gemm_packed.h).
//
// Register tile: one half of a tile (8 weight rows, the int32/float lanes) x 3 tokens. Per
// G-element group the G/4 weight chunks of the half stay in registers while each token's group
// is consumed: VPMADDUBSW against a 32-bit broadcast of the activation bytes gives int16 pairs,
// which add up in int16 as long as they provably fit (quants <= 31 for G = 32: 4 chunks of
// pairs <= 2 x 31 x 127; quants <= 63 for G = 16, Q6_K: 2 chunks), then one VPMADDWD to int32,
// the token's -c * sum, one conversion and one FMA (d * ad), plus one FMA (m * asum) for
// formats with a free m. Q8_0 tiles (quants q + 128, offset 128) would saturate VPMADDUBSW, so
// that case flips the bias back and uses the sign trick (|q| x sign(a, q)) without the offset.
// Results differ from the scalar reference only by float rounding order.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "quant/gemm_packed.h"

namespace zf::quant::avx2 {
namespace {

constexpr size_t kQ8Block = 34;  // bytes of a Q8_0 block: F16 scale + 32 quants
constexpr int kTokens = 3;       // tokens per register tile (G/4 weights + 3 accumulators + temps fit in 16)

inline int32_t Load32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __m256i Load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Rows [0, valid) of 8.
inline void Store8(float* out, int valid, __m256 v) {
  if (valid >= 8) {
    _mm256_storeu_ps(out, v);
    return;
  }
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  for (int r = 0; r < valid; ++r) out[r] = tmp[r];
}

// kSigned: Q8_0 (the bias flipped back, no offset term); kOff: a fixed offset (aoff starts the
// integer dot); otherwise a free m (m * asum).
template <int G, int T, bool kOff, bool kSigned>
void Tile(const uint8_t* tile, int64_t k, int h, const uint8_t* a, size_t a_stride, const float* ad, const float* asum,
          const int32_t* aoff, float* y, int64_t y_stride, int valid) {
  constexpr int C = G / 4;
  constexpr int kRun = G == 32 ? 4 : 2;  // chunks whose int16 pairs may add before VPMADDWD
  constexpr size_t kGroupBytes = size_t(16 * G + 128);
  const int64_t ng = k / G, nb = k / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T];
  for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t* p = tile + size_t(g) * kGroupBytes;
    __m256i w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      w[c] = Load(p + 64 * c + 32 * h);
      if (kSigned) w[c] = _mm256_xor_si256(w[c], _mm256_set1_epi8(char(0x80)));
    }
    const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(p + 16 * G) + 8 * h);
    const int64_t b = (g * G) / 32;
    const uint8_t* ag = a + size_t(b) * kQ8Block + 2 + size_t((g * G) % 32);
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
      const uint8_t* aq = ag + size_t(j) * a_stride;
      __m256i s = kOff && !kSigned ? _mm256_set1_epi32(aoff[j * ng + g]) : _mm256_setzero_si256();
      if (kSigned) {
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
          const __m256i x = _mm256_set1_epi32(Load32(aq + 4 * c));
          const __m256i p16 = _mm256_maddubs_epi16(_mm256_abs_epi8(w[c]), _mm256_sign_epi8(x, w[c]));
          s = _mm256_add_epi32(s, _mm256_madd_epi16(p16, ones));
        }
      } else {
#pragma GCC unroll 8
        for (int c0 = 0; c0 < C; c0 += kRun) {
          __m256i p16 = _mm256_maddubs_epi16(w[c0], _mm256_set1_epi32(Load32(aq + 4 * c0)));
#pragma GCC unroll 4
          for (int c = c0 + 1; c < c0 + kRun; ++c) {
            p16 = _mm256_add_epi16(p16, _mm256_maddubs_epi16(w[c], _mm256_set1_epi32(Load32(aq + 4 * c))));
          }
          s = _mm256_add_epi32(s, _mm256_madd_epi16(p16, ones));
        }
      }
      acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(ad[j * nb + b])), _mm256_cvtepi32_ps(s), acc[j]);
      if (!kOff) {
        const __m256 m = _mm256_loadu_ps(reinterpret_cast<const float*>(p + 16 * G + 64) + 8 * h);
        acc[j] = _mm256_fmadd_ps(m, _mm256_set1_ps(asum[j * ng + g]), acc[j]);
      }
    }
  }
  for (int j = 0; j < T; ++j) Store8(y + j * y_stride + 8 * h, valid, acc[j]);
}

template <int G, bool kOff, bool kSigned>
void RunTiles(const uint8_t* tile, int64_t k, int64_t rows, const PackedActs& pa, int64_t n_tok, float* y,
              int64_t y_stride) {
  const int64_t nb = k / 32, ng = k / G;
  const auto* a = static_cast<const uint8_t*>(pa.q);
  const size_t as = pa.q_stride;
  for (int h = 0; h < 2; ++h) {
    const int valid = int(rows - 8 * h);
    if (valid <= 0) break;
    ForTokenTiles<kTokens>(n_tok, [&](int64_t t, auto tokens) {
      Tile<G, decltype(tokens)::value, kOff, kSigned>(tile, k, h, a + size_t(t) * as, as, pa.ad + t * nb,
                                                      pa.asum + t * ng, pa.aoff + (kOff && !kSigned ? t * ng : 0),
                                                      y + t * y_stride, y_stride, valid);
    });
  }
}

struct Runs {  // for DispatchSignedGemm (gemm_packed.h)
  template <int G, bool kOff, bool kSigned> static constexpr auto Run = RunTiles<G, kOff, kSigned>;
};

}  // namespace

void GemmPacked(const void* tile, int64_t k, int group, int64_t rows, const PackedActs& a, int64_t n_tok, float* y,
                int64_t y_stride) {
  DispatchSignedGemm<Runs>(tile, k, group, rows, a, n_tok, y, y_stride);
}

}  // namespace zf::quant::avx2

#endif  // x86

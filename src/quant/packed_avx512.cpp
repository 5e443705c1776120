// AVX-512 VNNI kernel for the packed (16 rows interleaved) Q8_0 decode product, packed.h.
// Per 32-element block and 16 rows: 8 VPDPBUSD (4 weights x 16 rows each, the activation's 4
// quants broadcast from memory), one F16->F32 scale vector, one multiply and one FMA. Compiled
// with AVX-512 flags (file name suffix); called only after the run-time check in packed.cpp.
#if defined(__x86_64__) || defined(__i386__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>
#include <utility>

#include "quant/blocks.h"
#include "quant/packed.h"

namespace zf::quant::avx512 {

void GemvPackedQ8_0(int64_t k, const void* packed, int64_t g0, int64_t g1, int64_t rows, const void* a,
                    float* y) {
  const int64_t nb = k / kQK;
  const size_t gbytes = PackedGroupBytes(GgmlType::Q8_0, k);
  const size_t scale_bytes = gbytes - size_t(nb) * kPackRows * kQK;
  const auto* ab = static_cast<const BlockQ8_0*>(a);
  // Activation staging, once per call: block scales as floats, the quants as 8 dwords per block
  // (aligned, for the broadcasts), and -128 x the quant sum that undoes the weights' +128 bias.
  constexpr int64_t kMaxBlocks = 256;  // rows up to 8192 elements on the stack
  alignas(64) int32_t aq[kMaxBlocks * 8];
  alignas(64) float ad[kMaxBlocks];
  alignas(64) int32_t corr[kMaxBlocks];
  for (int64_t b0 = 0; b0 < nb; b0 += kMaxBlocks) {
    // Very long rows: several passes over the blocks, adding into y.
    const int64_t n = nb - b0 < kMaxBlocks ? nb - b0 : kMaxBlocks;
    for (int64_t b = 0; b < n; ++b) {
      std::memcpy(aq + b * 8, ab[b0 + b].qs, kQK);
      int32_t s = 0;
      for (int i = 0; i < kQK; ++i) s += ab[b0 + b].qs[i];
      corr[b] = -128 * s;
      ad[b] = _cvtsh_ss(ab[b0 + b].d);
    }
    for (int64_t g = g0; g < g1; ++g) {
      const auto* grp = static_cast<const uint8_t*>(packed) + size_t(g) * gbytes;
      const auto* scales = reinterpret_cast<const uint16_t*>(grp) + b0 * kPackRows;
      const uint8_t* q = grp + scale_bytes + size_t(b0) * kPackRows * kQK;
      // One block: 16 rows' dots in int32 lanes, times (weight scale x activation scale).
      const auto block = [&](int64_t b) {
        const uint8_t* qb = q + size_t(b) * kPackRows * kQK;
        const int32_t* x = aq + b * 8;
        __m512i s0 = _mm512_set1_epi32(corr[b]), s1 = _mm512_setzero_si512();
        s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qb + 0 * 64), _mm512_set1_epi32(x[0]));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qb + 1 * 64), _mm512_set1_epi32(x[1]));
        s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qb + 2 * 64), _mm512_set1_epi32(x[2]));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qb + 3 * 64), _mm512_set1_epi32(x[3]));
        s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qb + 4 * 64), _mm512_set1_epi32(x[4]));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qb + 5 * 64), _mm512_set1_epi32(x[5]));
        s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512(qb + 6 * 64), _mm512_set1_epi32(x[6]));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512(qb + 7 * 64), _mm512_set1_epi32(x[7]));
        const __m512 d = _mm512_mul_ps(
            _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales + b * kPackRows))),
            _mm512_set1_ps(ad[b]));
        return std::make_pair(d, _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)));
      };
      __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
      int64_t b = 0;
      for (; b + 2 <= n; b += 2) {  // two accumulators: the FMA chain is not the bottleneck
        const auto p0 = block(b), p1 = block(b + 1);
        acc0 = _mm512_fmadd_ps(p0.first, p0.second, acc0);
        acc1 = _mm512_fmadd_ps(p1.first, p1.second, acc1);
      }
      if (b < n) {
        const auto p0 = block(b);
        acc0 = _mm512_fmadd_ps(p0.first, p0.second, acc0);
      }
      const __m512 sum = _mm512_add_ps(acc0, acc1);
      float* out = y + (g - g0) * kPackRows;
      const int64_t valid = rows - g * kPackRows;
      const __mmask16 m = valid >= kPackRows ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
      if (b0 == 0) {
        _mm512_mask_storeu_ps(out, m, sum);
      } else {
        _mm512_mask_storeu_ps(out, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), sum));
      }
    }
  }
}

}  // namespace zf::quant::avx512

#endif  // x86

// Internal: inline AVX2 helpers shared by the *_avx2.cpp kernel files of the packed layouts.
// Include only from files compiled with AVX2 flags (called after the run-time CPU check).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace zf::quant::avx2 {

// Byte j = 0x10 where bit j of the 32-bit mask is set, else 0: one half's (8 rows x 4
// elements) Q5 fifth bits from a packed lane mask (packed.h, hmask).
inline __m256i FifthBits(uint32_t bits) {
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuf);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

}  // namespace zf::quant::avx2

// Seeded random test inputs shared by the unit tests: float vectors and weight rows of a quant
// type with valid block scales.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"

namespace zf::testing {

// n floats from N(0, scale^2).
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// `rows` rows of k elements of type t: random bytes, made valid blocks by finite F16 words at
// the scale fields: d in [0.5, 1.4] x scale, and the min (Q4_1, Q5_1; Q4_K and Q5_K: dmin) in
// [-0.9, 0] x scale.
inline std::vector<uint8_t> RandomQuantRows(GgmlType t, int64_t rows, int64_t k, float scale, uint32_t seed) {
  std::vector<uint8_t> v(RowSize(t, k) * size_t(rows));
  std::mt19937 rng(seed);
  for (auto& b : v) b = uint8_t(rng());
  const size_t block = GetTypeTraits(t)->type_size;
  const bool has_min = t == GgmlType::Q4_1 || t == GgmlType::Q5_1 || t == GgmlType::Q4_K || t == GgmlType::Q5_K;
  for (size_t off = 0; off + block <= v.size(); off += block) {
    if (t == GgmlType::MXFP4) {  // an E8M0 exponent near scale / 4 (the codebook reaches 12)
      v[off] = uint8_t(std::min(252, std::max(0, 126 + std::ilogb(scale) + int(rng() % 3))));
      continue;
    }
    const uint16_t d = quant::Fp32ToFp16(scale * (0.5f + 0.1f * float(rng() % 10)));
    const uint16_t m = quant::Fp32ToFp16(-scale * 0.1f * float(rng() % 10));
    std::memcpy(&v[off + (t == GgmlType::Q6_K ? 208 : 0)], &d, 2);  // Q6_K keeps d last
    if (has_min) std::memcpy(&v[off + 2], &m, 2);
  }
  return v;
}

}  // namespace zf::testing

// Gated-FFN activation kernels: gate[i] = silu(gate[i]) * up[i], scalar reference + AVX-512.
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>

namespace zf::engine::act {

// With the fastest kernel this CPU has.
void SiluMul(float* gate, const float* up, int64_t n);

void SiluMulRef(float* gate, const float* up, int64_t n);  // x / (1 + exp(-x)) with std::exp

// GELU through a table over every F16 input (as the reference): gate[i] = g(gate[i]) * up[i] with
// g(x) = 0 for x <= -10, x for x >= 10, else table[F16 bits of x (nearest even)]. Returns false
// when there is no SIMD kernel (the caller keeps its scalar loop).
bool GeluTableMul(const float* table, float* gate, const float* up, int64_t n);

#if defined(__x86_64__) || defined(__i386__)
void SiluMulAvx512(float* gate, const float* up, int64_t n);  // activation_avx512.cpp; AVX-512 F
void GeluTableMulAvx512(const float* table, float* gate, const float* up, int64_t n);
#endif

}  // namespace zf::engine::act

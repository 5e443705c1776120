// Gated-FFN activation kernels: gate[i] = silu(gate[i]) * up[i], scalar reference, AVX-512,
// AVX2 and NEON.
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>

namespace zf::engine::act {

// With the fastest kernel this CPU has.
void SiluMul(float* gate, const float* up, int64_t n);

void SiluMulRef(float* gate, const float* up, int64_t n);  // x / (1 + exp(-x)) with std::exp
#if defined(__x86_64__) || defined(__i386__)
void SiluMulAvx512(float* gate, const float* up, int64_t n);  // activation_avx512.cpp; AVX-512 F
void SiluMulAvx2(float* gate, const float* up, int64_t n);    // activation_avx2.cpp; AVX2 + FMA
#endif
#if defined(__aarch64__)
void SiluMulAsimd(float* gate, const float* up, int64_t n);  // activation_asimd.cpp; every aarch64 CPU
#endif

}  // namespace zf::engine::act

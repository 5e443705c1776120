// src/engine/cpu/attention_avx512.cpp and activation_avx512.cpp unchanged, on SIMDe's AVX-512
// (avx512_on_avx2.h), their entry points renamed so they link beside the real kernels.
#include "emulated/avx512_on_avx2.h"

#define RunBlockAvx512 RunBlockAvx512Emulated
#define RunDecodeAvx512 RunDecodeAvx512Emulated
#define SiluMulAvx512 SiluMulAvx512Emulated
#include "engine/cpu/attention_avx512.cpp"   // NOLINT(bugprone-suspicious-include)
#include "engine/cpu/activation_avx512.cpp"  // NOLINT(bugprone-suspicious-include)

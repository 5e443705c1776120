// src/engine/cpu/recurrent_avx512.cpp unchanged, on SIMDe's AVX-512 (avx512_on_avx2.h), its
// entry points renamed so they link beside the real kernels.
#include "emulated/avx512_on_avx2.h"

#define DeltaRuleAvx512 DeltaRuleAvx512Emulated
#define ScanAvx512 ScanAvx512Emulated
#include "engine/cpu/recurrent_avx512.cpp"  // NOLINT(bugprone-suspicious-include)

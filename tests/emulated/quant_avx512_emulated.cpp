// src/quant/quant_avx512.cpp and quant_vnni_avx512.cpp (the row-layout AVX-512 kernels)
// unchanged, on SIMDe's AVX-512 (avx512_on_avx2.h), in the namespaces
// zf::quant::avx512_emulated and zf::quant::vnni_emulated so they link beside the real ones.
#include "emulated/avx512_on_avx2.h"

#define avx512 avx512_emulated
#define vnni vnni_emulated
#include "quant/quant_avx512.cpp"       // NOLINT(bugprone-suspicious-include)
#include "quant/quant_vnni_avx512.cpp"  // NOLINT(bugprone-suspicious-include)

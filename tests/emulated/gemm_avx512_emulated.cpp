// src/quant/gemm_avx512.cpp unchanged, on SIMDe's AVX-512 (avx512_on_avx2.h), in the
// namespace zf::quant::avx512_emulated so it links beside the real kernels.
#include "emulated/avx512_on_avx2.h"

#define avx512 avx512_emulated
#include "quant/gemm_avx512.cpp"  // NOLINT(bugprone-suspicious-include)

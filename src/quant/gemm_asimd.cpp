// Packed prefill GEMM for aarch64 CPUs without the dot product: gemm_neon.inc on baseline NEON.
#define ZF_NEON_NS asimd
#include "quant/gemm_neon.inc"

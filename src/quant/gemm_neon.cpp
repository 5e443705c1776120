// Packed prefill GEMM with the ARMv8.2 dot product (see gemm_neon.inc).
#define ZF_NEON_NS neon
#include "quant/gemm_neon.inc"

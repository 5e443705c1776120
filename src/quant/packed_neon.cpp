// Packed decode GEMV with the ARMv8.2 dot product (see packed_neon.inc).
#define ZF_NEON_NS neon
#include "quant/packed_neon.inc"

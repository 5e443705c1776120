// Q8_0 / Q4_0 dot products with the ARMv8.2 dot product (see dot_q8_neon.inc).
#define ZF_NEON_NS neon
#include "quant/dot_q8_neon.inc"

// Q8_0 / Q4_0 dot products on baseline NEON, every aarch64 CPU (see dot_q8_neon.inc).
#define ZF_NEON_NS asimd
#include "quant/dot_q8_neon.inc"

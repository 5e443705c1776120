// Packed decode GEMV for aarch64 CPUs without the dot product: packed_neon.inc on baseline NEON.
#define ZF_NEON_NS asimd
#include "quant/packed_neon.inc"

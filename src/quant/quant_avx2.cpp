// AVX2 + FMA + F16C kernels (see quant_x86.inc).
#define ZF_X86_NS avx2
#include "quant/quant_x86.inc"

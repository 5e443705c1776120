// The AVX2 kernels recompiled with AVX-512 VL + VNNI (see quant_x86.inc).
#define ZF_X86_NS vnni
#include "quant/quant_x86.inc"

// The AVX2 kernels recompiled with AVX-512 VL + VNNI, the activation quantizers on 16 lanes
// (see quant_x86.inc).
// The AVX-512 header first: its pragmas silence GCC 12's false warnings inside the 16-lane
// quantizers' intrinsics (quant_x86.inc).
#include "quant/avx512_intrinsics.h"
#define ZF_X86_NS vnni
#include "quant/quant_x86.inc"

// Internal: the intrinsics header for the *_avx512.cpp kernel files (compiled with AVX-512
// flags, called only after the run-time CPU check), with GCC 12's false "(maybe)
// uninitialized" warnings inside its own AVX-512 intrinsics silenced for those files only.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

/*
 * The plain-C interface between libzerfoo.so and the CUDA kernel library
 * (libzerfoo_kernels.so, built by nvcc from kernels/). libzerfoo.so never links it: the CUDA
 * engine dlopens the library at run time and resolves these symbols by name. Required symbols
 * must all be present; optional kernels may be missing (the engine then uses a slower path).
 * Every function returns 0 on success or a nonzero status; zfk_last_error() describes the last
 * failure on the calling thread.
 */
#ifndef ZFK_H
#define ZFK_H

#include <stddef.h>
#include <stdint.h>

#define ZFK_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* ---- required ---- */
int32_t zfk_abi_version(void);                /* ZFK_ABI_VERSION the library was built for */
const char* zfk_last_error(void);             /* thread-local description of the last error */
int32_t zfk_device_count(int32_t* count);     /* fails when the NVIDIA driver is missing */
/* Compute capability (e.g. 9, 0), memory and name of a device. */
int32_t zfk_device_info(int32_t device, int32_t* cc_major, int32_t* cc_minor, uint64_t* total_mem,
                        char* name, size_t name_cap);
/* Whether the library holds code (SASS or PTX) that runs on this compute capability. */
int32_t zfk_supports_cc(int32_t cc_major, int32_t cc_minor, int32_t* supported);

/* ---- optional kernels (names listed in src/engine/cuda/kernel_library.cpp) ---- */

#ifdef __cplusplus
}
#endif

#endif /* ZFK_H */

/* A stand-in for libzerfoo_kernels.so (kernels/zfk.h) so the CUDA loader's discovery, symbol
 * and version checks are tested on machines without a GPU. Behaviour is set by environment
 * variables: FAKE_ZFK_ABI (default 1), FAKE_ZFK_DEVICES (default 1; -1 = "driver missing"),
 * FAKE_ZFK_CC (default 90, i.e. 9.0), FAKE_ZFK_MAX_CC (highest supported, default 90).
 * Built twice: complete, and with -DFAKE_ZFK_BROKEN (no zfk_device_info). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int env_int(const char* name, int def) {
  const char* v = getenv(name);
  return v != NULL ? atoi(v) : def;
}

EXPORT int32_t zfk_abi_version(void) { return env_int("FAKE_ZFK_ABI", 1); }
EXPORT const char* zfk_last_error(void) { return "fake: NVIDIA driver not found (libcuda.so.1)"; }
EXPORT int32_t zfk_device_count(int32_t* count) {
  int n = env_int("FAKE_ZFK_DEVICES", 1);
  if (n < 0) return 1;
  *count = n;
  return 0;
}
#ifndef FAKE_ZFK_BROKEN
EXPORT int32_t zfk_device_info(int32_t device, int32_t* cc_major, int32_t* cc_minor, uint64_t* total_mem,
                               char* name, size_t name_cap) {
  int cc = env_int("FAKE_ZFK_CC", 90);
  *cc_major = cc / 10;
  *cc_minor = cc % 10;
  *total_mem = 80ull << 30;
  snprintf(name, name_cap, "Fake GPU %d", (int)device);
  return 0;
}
#endif
EXPORT int32_t zfk_supports_cc(int32_t cc_major, int32_t cc_minor, int32_t* supported) {
  *supported = cc_major * 10 + cc_minor <= env_int("FAKE_ZFK_MAX_CC", 90);
  return 0;
}
EXPORT int32_t zfk_gemv_q4_k(void) { return 0; } /* one optional kernel present */

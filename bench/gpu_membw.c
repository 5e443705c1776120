/* GPU copy-bandwidth probe through the kernel library (no CUDA header or library needed):
 * device-to-device copies of a 1 GiB buffer, median of 20, reported as GB/s of bytes read +
 * written. The ceiling decode speed is measured against (weights bytes per token / bandwidth).
 *   cc -O2 bench/gpu_membw.c -Ikernels -ldl -o gpu_membw && ./gpu_membw build/libzerfoo_kernels.so */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "zfk.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

#define SYM(name) name##_fn name = (name##_fn)dlsym(h, #name)
typedef int32_t (*zfk_malloc_fn)(void**, size_t);
typedef int32_t (*zfk_memcpy_d2d_fn)(void*, const void*, size_t, void*);
typedef int32_t (*zfk_stream_sync_fn)(void*);
typedef const char* (*zfk_last_error_fn)(void);

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "libzerfoo_kernels.so";
  void* h = dlopen(path, RTLD_NOW);
  if (h == NULL) return fprintf(stderr, "%s\n", dlerror()), 1;
  SYM(zfk_malloc); SYM(zfk_memcpy_d2d); SYM(zfk_stream_sync); SYM(zfk_last_error);
  if (!zfk_malloc || !zfk_memcpy_d2d || !zfk_stream_sync || !zfk_last_error) return fprintf(stderr, "missing symbols\n"), 1;
  const size_t bytes = (size_t)1 << 30;
  void *a = NULL, *b = NULL;
  if (zfk_malloc(&a, bytes) || zfk_malloc(&b, bytes)) return fprintf(stderr, "%s\n", zfk_last_error()), 1;
  double t[20];
  for (int i = -2; i < 20; ++i) { /* two warm-up copies */
    const double t0 = now();
    if (zfk_memcpy_d2d(b, a, bytes, NULL) || zfk_stream_sync(NULL)) return fprintf(stderr, "%s\n", zfk_last_error()), 1;
    if (i >= 0) t[i] = now() - t0;
  }
  qsort(t, 20, sizeof t[0], cmp);
  printf("{\"probe\": \"d2d copy\", \"bytes\": %zu, \"median_s\": %.6f, \"gbps_read_plus_write\": %.1f}\n", bytes,
         t[10], 2.0 * (double)bytes / t[10] / 1e9);
  return 0;
}

/* A stand-in for libzerfoo_kernels.so (kernels/zfk.h) so the CUDA loader and the CUDA engine's
 * plumbing (device selection, weight upload, session creation, graph capture and its fallback)
 * are tested on machines without a GPU. "Device memory" is host memory; kernels validate their
 * arguments and do nothing else, so the numbers a model produces through it are meaningless.
 * Behaviour is set by environment variables: FAKE_ZFK_ABI (default ZFK_ABI_VERSION),
 * FAKE_ZFK_DEVICES (default 1; -1 = "driver missing"), FAKE_ZFK_CC (default 90, i.e. 9.0),
 * FAKE_ZFK_MAX_CC (highest supported, default 90), FAKE_ZFK_GRAPH_FAIL=1 (graph capture fails),
 * FAKE_ZFK_LOG=path (appends the name of every call that launches work or captures a graph).
 * Built twice: complete, and with -DFAKE_ZFK_BROKEN (no zfk_device_info). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zfk.h"

#define EXPORT __attribute__((visibility("default")))

static int env_int(const char* name, int def) {
  const char* v = getenv(name);
  return v != NULL ? atoi(v) : def;
}

static void trace(const char* what) {
  const char* path = getenv("FAKE_ZFK_LOG");
  if (path == NULL) return;
  FILE* f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "%s\n", what);
  fclose(f);
}

static int capturing = 0;
static int graph_token;

EXPORT int32_t zfk_abi_version(void) { return env_int("FAKE_ZFK_ABI", ZFK_ABI_VERSION); }
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
EXPORT int32_t zfk_supports_type(int32_t type, int32_t* supported) {
  *supported = type == ZFK_TYPE_F32 || type == ZFK_TYPE_F16 || type == ZFK_TYPE_Q4_0 || type == ZFK_TYPE_Q4_1 ||
               type == ZFK_TYPE_Q5_0 || type == ZFK_TYPE_Q8_0 || type == ZFK_TYPE_Q4_K || type == ZFK_TYPE_Q6_K;
  return 0;
}

/* ---- runtime on host memory ---- */
EXPORT int32_t zfk_set_device(int32_t device) { return device < 0; }
EXPORT int32_t zfk_malloc(void** p, size_t bytes) {
  *p = calloc(1, bytes ? bytes : 1);
  return *p == NULL;
}
EXPORT int32_t zfk_free(void* p) {
  free(p);
  return 0;
}
EXPORT int32_t zfk_memcpy_h2d(void* d, const void* h, size_t n, void* s) {
  (void)s;
  if (n) memcpy(d, h, n);
  return 0;
}
EXPORT int32_t zfk_memcpy_d2h(void* h, const void* d, size_t n, void* s) {
  (void)s;
  if (n) memcpy(h, d, n);
  return 0;
}
EXPORT int32_t zfk_memcpy_d2d(void* d, const void* src, size_t n, void* s) {
  (void)s;
  if (n) memmove(d, src, n);
  return 0;
}
EXPORT int32_t zfk_memset(void* d, int32_t b, size_t n, void* s) {
  (void)s;
  memset(d, b, n);
  return 0;
}
EXPORT int32_t zfk_stream_create(void** s) {
  *s = &graph_token;
  return 0;
}
EXPORT int32_t zfk_stream_destroy(void* s) { return 0 * (s != NULL); }
EXPORT int32_t zfk_stream_sync(void* s) { return 0 * (s != NULL); }
EXPORT int32_t zfk_graph_begin(void* s) {
  (void)s;
  trace("graph_begin");
  capturing = 1;
  return 0;
}
EXPORT int32_t zfk_graph_end(void* s, void** graph, int32_t* n_nodes) {
  (void)s;
  trace("graph_end");
  capturing = 0;
  *graph = NULL;
  *n_nodes = 0;
  if (env_int("FAKE_ZFK_GRAPH_FAIL", 0)) return ZFK_ERR_CUDA;
  *graph = &graph_token;
  *n_nodes = 7;
  return 0;
}
EXPORT int32_t zfk_graph_launch(void* g, void* s) {
  (void)s;
  trace("graph_launch");
  return g == NULL;
}
EXPORT int32_t zfk_graph_destroy(void* g) { return 0 * (g != NULL); }

/* ---- kernels: argument checks only ---- */
#define KERNEL(name) trace(capturing ? "captured " #name : #name)
EXPORT int32_t zfk_get_rows(int32_t type, const void* t, int64_t w, const int32_t* ids, int32_t n, float sc, float* o,
                            void* s) {
  (void)type, (void)w, (void)n, (void)sc, (void)s;
  KERNEL(get_rows);
  return !t || !ids || !o;
}
EXPORT int32_t zfk_matmul(int32_t type, const void* w, int64_t k, int64_t m, const float* x, int32_t n, float* y,
                          void* s) {
  (void)type, (void)s;
  KERNEL(matmul);
  return !w || !x || !y || k <= 0 || m <= 0 || n <= 0;
}
EXPORT int32_t zfk_rms_norm(const float* x, const float* w, int32_t r, int32_t n, float e, float* y, void* s) {
  (void)r, (void)n, (void)e, (void)s;
  KERNEL(rms_norm);
  return !x || !w || !y;
}
EXPORT int32_t zfk_add(float* x, const float* y, int64_t n, void* s) {
  (void)n, (void)s;
  KERNEL(add);
  return !x || !y;
}
EXPORT int32_t zfk_add_bias(float* x, const float* b, int32_t r, int32_t n, void* s) {
  (void)r, (void)n, (void)s;
  KERNEL(add_bias);
  return !x || !b;
}
EXPORT int32_t zfk_softcap(float* x, int64_t n, float c, void* s) {
  (void)n, (void)c, (void)s;
  KERNEL(softcap);
  return !x;
}
EXPORT int32_t zfk_gated_act(int32_t a, float* g, const float* u, int64_t n, void* s) {
  (void)a, (void)n, (void)s;
  KERNEL(gated_act);
  return !g || !u;
}
EXPORT int32_t zfk_rope(float* x, int32_t t, int32_t h, int32_t d, const int32_t* pos, const zfk_rope_params* p,
                        void* s) {
  (void)t, (void)h, (void)d, (void)s;
  if (p != NULL && p->d_norm_w != NULL) {
    KERNEL(rms_norm+rope);
  } else {
    KERNEL(rope);
  }
  return !x || !pos || !p;
}
EXPORT int32_t zfk_store_kv(const zfk_kv_layer* kv, const float* k, const float* v, int32_t n, const int32_t* pos,
                            void* s) {
  (void)n, (void)s;
  KERNEL(store_kv);
  return !kv || !k || !v || !pos;
}
EXPORT int32_t zfk_attention(const zfk_kv_layer* kv, const zfk_attn_params* p, const float* q, int32_t n,
                             const int32_t* pos, float* out, float* work, void* s) {
  (void)n, (void)s;
  KERNEL(attention);
  return !kv || !p || !q || !pos || !out || !work;
}
EXPORT int32_t zfk_attention_workspace(const zfk_kv_layer* kv, const zfk_attn_params* p, size_t* n) {
  *n = (size_t)p->n_head * (size_t)((kv->n_ctx + 255) / 256) * (size_t)(p->head_dim_v + 2);
  return 0;
}
/* Optional: add_rms_norm is present, argmax is not (the engine falls back to the host). */
EXPORT int32_t zfk_add_rms_norm(float* x, const float* h, const float* w, int32_t r, int32_t n, float e, float* y,
                                void* s) {
  (void)r, (void)n, (void)e, (void)s;
  KERNEL(add_rms_norm);
  return !x || !h || !w || !y;
}

/*
 * The plain-C interface between libzerfoo.so and the CUDA kernel library
 * (libzerfoo_kernels.so, built by nvcc from kernels/). libzerfoo.so never links it: the CUDA
 * engine dlopens the library at run time and resolves these symbols by name. Required symbols
 * must all be present; optional kernels may be missing (the engine then uses a slower path).
 * Every function returns ZFK_OK (0) on success or a nonzero status; zfk_last_error() describes
 * the last failure on the calling thread. Bad arguments return ZFK_ERR_ARG; nothing aborts.
 *
 * The library also wraps the few CUDA runtime calls the engine needs (memory, streams, graph
 * capture) so that exactly one CUDA runtime (linked statically into the kernel library) is in
 * the process and src/ includes no CUDA header. A `stream` is a cudaStream_t passed as void*
 * (NULL = the legacy default stream); a `graph` is a cudaGraphExec_t passed as void*.
 *
 * Pointers named d_* are device memory; pointers named h_* are host memory. Kernels read
 * positions and token ids from device memory so that a captured decode step can be replayed for
 * every token without re-capture (the host writes them before each launch).
 */
#ifndef ZFK_H
#define ZFK_H

#include <stddef.h>
#include <stdint.h>

/* 2: runtime wrappers and the forward-pass kernels became required. */
#define ZFK_ABI_VERSION 2

#define ZFK_OK 0
#define ZFK_ERR_CUDA 1        /* a CUDA runtime call failed (the message has cudaGetErrorString) */
#define ZFK_ERR_ARG 2         /* invalid argument (NULL pointer, bad size, unknown enum) */
#define ZFK_ERR_UNSUPPORTED 3 /* e.g. a weight type this library has no kernel for */

/* GGUF tensor type ids (ggml_type values) accepted by zfk_get_rows / zfk_matmul. */
#define ZFK_TYPE_F32 0
#define ZFK_TYPE_F16 1
#define ZFK_TYPE_Q4_0 2
#define ZFK_TYPE_Q4_1 3
#define ZFK_TYPE_Q5_0 6
#define ZFK_TYPE_Q5_1 7
#define ZFK_TYPE_Q8_0 8
#define ZFK_TYPE_Q4_K 12
#define ZFK_TYPE_Q5_K 13
#define ZFK_TYPE_Q6_K 14
#define ZFK_TYPE_BF16 30

#define ZFK_ROPE_NORM 0 /* rotate pairs (2i, 2i+1) */
#define ZFK_ROPE_NEOX 1 /* rotate pairs (i, i + n_rot/2) */

#define ZFK_ACT_SILU 0
#define ZFK_ACT_GELU_TANH 1

#ifdef __cplusplus
extern "C" {
#endif

/* ---- required: library and devices ---- */
int32_t zfk_abi_version(void);                /* ZFK_ABI_VERSION the library was built for */
const char* zfk_last_error(void);             /* thread-local description of the last error */
int32_t zfk_device_count(int32_t* count);     /* fails when the NVIDIA driver is missing */
/* Compute capability (e.g. 9, 0), memory and name of a device. */
int32_t zfk_device_info(int32_t device, int32_t* cc_major, int32_t* cc_minor, uint64_t* total_mem,
                        char* name, size_t name_cap);
/* Whether the library holds code (SASS or PTX) that runs on this compute capability. */
int32_t zfk_supports_cc(int32_t cc_major, int32_t cc_minor, int32_t* supported);
/* Whether zfk_get_rows / zfk_matmul accept this ZFK_TYPE_* id. */
int32_t zfk_supports_type(int32_t type, int32_t* supported);

/* ---- required: runtime (thin wrappers over the CUDA runtime) ---- */
int32_t zfk_set_device(int32_t device);
int32_t zfk_malloc(void** d_ptr, size_t bytes);  /* *d_ptr = NULL on failure */
int32_t zfk_free(void* d_ptr);                   /* NULL is a no-op */
/* Copies in stream order; h2d from pageable memory returns once the source was read. */
int32_t zfk_memcpy_h2d(void* d_dst, const void* h_src, size_t bytes, void* stream);
int32_t zfk_memcpy_d2h(void* h_dst, const void* d_src, size_t bytes, void* stream);
int32_t zfk_memcpy_d2d(void* d_dst, const void* d_src, size_t bytes, void* stream);
int32_t zfk_memset(void* d_dst, int32_t byte, size_t bytes, void* stream);
int32_t zfk_stream_create(void** stream);
int32_t zfk_stream_destroy(void* stream);
int32_t zfk_stream_sync(void* stream);
/* Graph capture of everything launched on `stream` (thread-local capture mode). */
int32_t zfk_graph_begin(void* stream);
/* Ends the capture and instantiates it. On failure *graph = NULL, the stream is usable again
 * and the status/message say why (nothing captured was executed). *n_nodes = captured nodes. */
int32_t zfk_graph_end(void* stream, void** graph, int32_t* n_nodes);
int32_t zfk_graph_launch(void* graph, void* stream);
int32_t zfk_graph_destroy(void* graph); /* NULL is a no-op */

/* ---- required: forward-pass kernels (all asynchronous on `stream`) ---- */

/* d_out[t, :] = scale * dequantized row d_ids[t] of the [n_rows x width] table, t < n. */
int32_t zfk_get_rows(int32_t type, const void* d_table, int64_t width, const int32_t* d_ids, int32_t n,
                     float scale, float* d_out, void* stream);
/* d_y[t, r] = sum_i W[r, i] * d_x[t, i] for r < m, t < n_tok; W is m rows of k elements stored
 * as GGUF blocks of `type`. Small n_tok: warp-per-row GEMV; large n_tok: tensor-core GEMM. */
int32_t zfk_matmul(int32_t type, const void* d_w, int64_t k, int64_t m, const float* d_x, int32_t n_tok,
                   float* d_y, void* stream);
/* d_y[r, :] = d_x[r, :] / rms(d_x[r, :]) * d_w (d_y may alias d_x). */
int32_t zfk_rms_norm(const float* d_x, const float* d_w, int32_t rows, int32_t n, float eps, float* d_y,
                     void* stream);
int32_t zfk_add(float* d_x, const float* d_y, int64_t n, void* stream);                   /* x += y */
int32_t zfk_add_bias(float* d_x, const float* d_b, int32_t rows, int32_t n, void* stream); /* x[r,:] += b */
int32_t zfk_softcap(float* d_x, int64_t n, float cap, void* stream); /* x = cap * tanh(x / cap) */
/* d_gate[i] = act(d_gate[i]) * d_up[i] (ZFK_ACT_*). */
int32_t zfk_gated_act(int32_t act, float* d_gate, const float* d_up, int64_t n, void* stream);

typedef struct zfk_rope_params {
  int32_t n_rot;              /* rotated dimensions at the start of each head */
  int32_t style;              /* ZFK_ROPE_NORM or ZFK_ROPE_NEOX */
  float base;
  float freq_scale;           /* position multiplier */
  const float* d_freq_factors; /* optional [n_rot/2] divisors, NULL = none */
  const float* d_norm_w;      /* optional [head_dim]: RMS-normalize each head first (QK-norm) */
  float norm_eps;
  int32_t pad_;
} zfk_rope_params;
/* In place on d_x [n_tok x n_heads x head_dim]; token t is at position d_pos[t]. */
int32_t zfk_rope(float* d_x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* d_pos,
                 const zfk_rope_params* p, void* stream);

/* One layer of an F16 KV cache: n_ctx rows of k_width (v_width) halves. */
typedef struct zfk_kv_layer {
  void* d_k;
  void* d_v;
  int32_t n_ctx;
  int32_t k_width; /* n_head_kv * head_dim_k */
  int32_t v_width; /* n_head_kv * head_dim_v */
  int32_t pad_;
} zfk_kv_layer;
/* Rows d_k/d_v [n_tok x width] (F32) go to cache positions d_pos[t]. */
int32_t zfk_store_kv(const zfk_kv_layer* kv, const float* d_k, const float* d_v, int32_t n_tok,
                     const int32_t* d_pos, void* stream);

typedef struct zfk_attn_params {
  int32_t n_head;
  int32_t n_head_kv;
  int32_t head_dim_k; /* <= 256 */
  int32_t head_dim_v; /* <= 256 */
  float scale;        /* multiplies q.k */
  float softcap;      /* 0 = off */
  int32_t window;     /* 0 = causal; else a query sees its last `window` positions */
  int32_t pad_;
} zfk_attn_params;
/* Causal attention of n_tok queries d_q [n_tok x n_head*head_dim_k] at positions d_pos[t]
 * (increasing) over the cache; d_out [n_tok x n_head*head_dim_v]. Decode (n_tok == 1) splits
 * the KV length over blocks (flash-decoding) and combines the partial softmaxes; d_work holds
 * at least zfk_attention_workspace() floats. */
int32_t zfk_attention(const zfk_kv_layer* kv, const zfk_attn_params* p, const float* d_q, int32_t n_tok,
                      const int32_t* d_pos, float* d_out, float* d_work, void* stream);
int32_t zfk_attention_workspace(const zfk_kv_layer* kv, const zfk_attn_params* p, size_t* n_floats);

/* ---- optional kernels (names listed in src/engine/cuda/kernel_library.cpp) ---- */

/* x += h, then y = rms_norm(x) * w (one pass over x instead of three). */
int32_t zfk_add_rms_norm(float* d_x, const float* d_h, const float* d_w, int32_t rows, int32_t n, float eps,
                         float* d_y, void* stream);
/* *d_index = argmax of d_x[0..n) (first of equal maxima), computed on the device. */
int32_t zfk_argmax(const float* d_x, int32_t n, int32_t* d_index, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* ZFK_H */

// The library's own entry points and thin CUDA runtime wrappers (devices, memory, streams,
// graph capture), so that libzerfoo.so needs no CUDA header and the process holds one runtime.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "common.cuh"

#ifndef ZFK_SASS_ARCHS
#define ZFK_SASS_ARCHS 80, 90  // set by CMake from the -gencode list
#endif
#ifndef ZFK_PTX_ARCH
#define ZFK_PTX_ARCH 90
#endif

namespace zfk {
namespace {
thread_local std::string g_error;
}

int32_t Fail(int32_t status, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_error = buf;
  return status;
}

int32_t Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return ZFK_OK;
  return Fail(ZFK_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

}  // namespace zfk

using zfk::Check;
using zfk::Fail;
using zfk::S;

ZFK_EXPORT int32_t zfk_abi_version(void) { return ZFK_ABI_VERSION; }
ZFK_EXPORT const char* zfk_last_error(void) { return zfk::g_error.c_str(); }

ZFK_EXPORT int32_t zfk_device_count(int32_t* count) {
  if (count == nullptr) return Fail(ZFK_ERR_ARG, "zfk_device_count: count is NULL");
  *count = 0;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice) return ZFK_OK;
  if (e != cudaSuccess) return Check(e, "cudaGetDeviceCount (is the NVIDIA driver >= 580 installed?)");
  *count = n;
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_device_info(int32_t device, int32_t* cc_major, int32_t* cc_minor, uint64_t* total_mem,
                                   char* name, size_t name_cap) {
  if (!cc_major || !cc_minor || !total_mem || (!name && name_cap)) return Fail(ZFK_ERR_ARG, "zfk_device_info: NULL output");
  cudaDeviceProp p;
  if (int32_t s = Check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties")) return s;
  *cc_major = p.major;
  *cc_minor = p.minor;
  *total_mem = p.totalGlobalMem;
  if (name_cap > 0) snprintf(name, name_cap, "%s", p.name);
  return ZFK_OK;
}

// SASS for arch a runs on the same major with minor >= a's; the PTX is JIT-compiled for any
// newer compute capability.
ZFK_EXPORT int32_t zfk_supports_cc(int32_t cc_major, int32_t cc_minor, int32_t* supported) {
  if (supported == nullptr) return Fail(ZFK_ERR_ARG, "zfk_supports_cc: supported is NULL");
  const int cc = cc_major * 10 + cc_minor;
  const int sass[] = {ZFK_SASS_ARCHS};
  *supported = cc >= ZFK_PTX_ARCH;
  for (int a : sass) {
    if (cc_major == a / 10 && cc_minor >= a % 10) *supported = 1;
  }
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_supports_type(int32_t type, int32_t* supported) {
  if (supported == nullptr) return Fail(ZFK_ERR_ARG, "zfk_supports_type: supported is NULL");
  switch (type) {
    case ZFK_TYPE_F32: case ZFK_TYPE_F16: case ZFK_TYPE_BF16: case ZFK_TYPE_Q4_0: case ZFK_TYPE_Q4_1:
    case ZFK_TYPE_Q5_0: case ZFK_TYPE_Q5_1: case ZFK_TYPE_Q8_0: case ZFK_TYPE_Q4_K: case ZFK_TYPE_Q5_K:
    case ZFK_TYPE_Q6_K:
      *supported = 1;
      break;
    default:
      *supported = 0;
  }
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_set_device(int32_t device) { return Check(cudaSetDevice(device), "cudaSetDevice"); }

ZFK_EXPORT int32_t zfk_malloc(void** d_ptr, size_t bytes) {
  if (d_ptr == nullptr) return Fail(ZFK_ERR_ARG, "zfk_malloc: d_ptr is NULL");
  *d_ptr = nullptr;
  if (bytes == 0) bytes = 1;  // a distinct, freeable pointer
  cudaError_t e = cudaMalloc(d_ptr, bytes);
  if (e != cudaSuccess) {
    *d_ptr = nullptr;
    return Fail(ZFK_ERR_CUDA, "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(e));
  }
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_free(void* d_ptr) { return d_ptr ? Check(cudaFree(d_ptr), "cudaFree") : ZFK_OK; }

static int32_t Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, void* stream, const char* what) {
  if (bytes == 0) return ZFK_OK;
  if (dst == nullptr || src == nullptr) return Fail(ZFK_ERR_ARG, "%s: NULL pointer", what);
  return Check(cudaMemcpyAsync(dst, src, bytes, kind, S(stream)), what);
}

ZFK_EXPORT int32_t zfk_memcpy_h2d(void* d_dst, const void* h_src, size_t bytes, void* stream) {
  return Copy(d_dst, h_src, bytes, cudaMemcpyHostToDevice, stream, "zfk_memcpy_h2d");
}
ZFK_EXPORT int32_t zfk_memcpy_d2h(void* h_dst, const void* d_src, size_t bytes, void* stream) {
  return Copy(h_dst, d_src, bytes, cudaMemcpyDeviceToHost, stream, "zfk_memcpy_d2h");
}
ZFK_EXPORT int32_t zfk_memcpy_d2d(void* d_dst, const void* d_src, size_t bytes, void* stream) {
  return Copy(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, stream, "zfk_memcpy_d2d");
}
ZFK_EXPORT int32_t zfk_memset(void* d_dst, int32_t byte, size_t bytes, void* stream) {
  if (bytes == 0) return ZFK_OK;
  if (d_dst == nullptr) return Fail(ZFK_ERR_ARG, "zfk_memset: NULL pointer");
  return Check(cudaMemsetAsync(d_dst, byte, bytes, S(stream)), "zfk_memset");
}

ZFK_EXPORT int32_t zfk_stream_create(void** stream) {
  if (stream == nullptr) return Fail(ZFK_ERR_ARG, "zfk_stream_create: stream is NULL");
  cudaStream_t s = nullptr;
  if (int32_t st = Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate")) return st;
  *stream = s;
  return ZFK_OK;
}
ZFK_EXPORT int32_t zfk_stream_destroy(void* stream) {
  return stream ? Check(cudaStreamDestroy(S(stream)), "cudaStreamDestroy") : ZFK_OK;
}
ZFK_EXPORT int32_t zfk_stream_sync(void* stream) { return Check(cudaStreamSynchronize(S(stream)), "cudaStreamSynchronize"); }

// Thread-local mode: other threads' unrelated CUDA calls (another session) neither break this
// capture nor are broken by it.
ZFK_EXPORT int32_t zfk_graph_begin(void* stream) {
  if (stream == nullptr) return Fail(ZFK_ERR_ARG, "zfk_graph_begin: the legacy stream cannot be captured");
  return Check(cudaStreamBeginCapture(S(stream), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

ZFK_EXPORT int32_t zfk_graph_end(void* stream, void** graph, int32_t* n_nodes) {
  if (graph == nullptr || n_nodes == nullptr) return Fail(ZFK_ERR_ARG, "zfk_graph_end: NULL output");
  *graph = nullptr;
  *n_nodes = 0;
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(S(stream), &g);
  cudaGetLastError();  // a failed capture leaves a sticky launch error behind; clear it
  if (e != cudaSuccess || g == nullptr) {
    if (g) cudaGraphDestroy(g);
    return Fail(ZFK_ERR_CUDA, "graph capture failed: %s", cudaGetErrorString(e));
  }
  size_t n = 0;
  cudaGraphGetNodes(g, nullptr, &n);
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, g, 0);
  cudaGraphDestroy(g);
  if (e != cudaSuccess) return Fail(ZFK_ERR_CUDA, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
  *graph = exec;
  *n_nodes = int32_t(n);
  return ZFK_OK;
}

ZFK_EXPORT int32_t zfk_graph_launch(void* graph, void* stream) {
  if (graph == nullptr) return Fail(ZFK_ERR_ARG, "zfk_graph_launch: graph is NULL");
  return Check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), S(stream)), "cudaGraphLaunch");
}
ZFK_EXPORT int32_t zfk_graph_destroy(void* graph) {
  return graph ? Check(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)), "cudaGraphExecDestroy") : ZFK_OK;
}

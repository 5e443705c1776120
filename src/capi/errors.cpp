// Version, status names, thread-local error text and logging entry points.
#include <cstdio>
#include <string>

#include "capi/handles.h"
#include "engine/cuda/kernel_library.h"
#include "common/log.h"

static_assert(ZF_ERR_INTERNAL == static_cast<int32_t>(zf::Code::kInternal), "status codes must match");
static_assert(ZF_ERR_TEMPLATE == static_cast<int32_t>(zf::Code::kTemplate), "status codes must match");
static_assert(ZF_ERR_BACKEND == static_cast<int32_t>(zf::Code::kBackend), "status codes must match");
static_assert(ZF_ERR_CONTEXT_FULL == static_cast<int32_t>(zf::Code::kContextFull), "status codes must match");
static_assert(ZF_ERR_INVALID_UTF8 == static_cast<int32_t>(zf::Code::kInvalidUtf8), "status codes must match");

namespace zf::capi {
namespace {
thread_local std::string t_last_error;
}  // namespace

zf_status Fail(const Status& s) { return Fail(static_cast<int32_t>(s.code()), s.message()); }

zf_status Fail(int32_t code, const std::string& message) {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();
  }
  return code;
}

zf_status Succeed() {
  t_last_error.clear();
  return ZF_OK;
}

void ReleaseModel(zf_model* model) {
  if (model != nullptr && model->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete model;
}

zf_status CheckFlags(const char* field, uint32_t value, uint32_t known) {
  if ((value & ~known) == 0) return ZF_OK;
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%x", value & ~known);
  return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(field) + " has unknown bits " + hex);
}

zf_status CheckReserved(const char* field, uint32_t value) {
  if (value == 0) return ZF_OK;
  return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(field) + " is reserved and must be 0 (got " +
                                           std::to_string(value) + ")");
}

zf_status CopyOut(const std::string& s, char* buf, size_t cap, size_t* needed) {
  if (needed != nullptr) *needed = s.size() + 1;
  if (buf == nullptr || cap < s.size() + 1) {
    if (buf != nullptr && cap > 0) buf[0] = '\0';
    return Fail(ZF_ERR_BUFFER_TOO_SMALL,
                "buffer of " + std::to_string(cap) + " bytes is too small; " + std::to_string(s.size() + 1) + " needed");
  }
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return Succeed();
}

const char* LastError() { return t_last_error.c_str(); }

}  // namespace zf::capi

extern "C" {

ZF_API uint32_t zf_version(void) { return ZF_VERSION; }

ZF_API const char* zf_version_string(void) {
#define ZF_STR2(x) #x
#define ZF_STR(x) ZF_STR2(x)
  return ZF_STR(ZF_VERSION_MAJOR) "." ZF_STR(ZF_VERSION_MINOR) "." ZF_STR(ZF_VERSION_PATCH);
}

ZF_API const char* zf_status_string(zf_status status) {
  switch (status) {
    case ZF_OK: return "ZF_OK";
    case ZF_ERR_INVALID_ARGUMENT: return "ZF_ERR_INVALID_ARGUMENT";
    case ZF_ERR_IO: return "ZF_ERR_IO";
    case ZF_ERR_FORMAT: return "ZF_ERR_FORMAT";
    case ZF_ERR_UNSUPPORTED: return "ZF_ERR_UNSUPPORTED";
    case ZF_ERR_OUT_OF_MEMORY: return "ZF_ERR_OUT_OF_MEMORY";
    case ZF_ERR_BUFFER_TOO_SMALL: return "ZF_ERR_BUFFER_TOO_SMALL";
    case ZF_ERR_NOT_FOUND: return "ZF_ERR_NOT_FOUND";
    case ZF_ERR_INVALID_UTF8: return "ZF_ERR_INVALID_UTF8";
    case ZF_ERR_CONTEXT_FULL: return "ZF_ERR_CONTEXT_FULL";
    case ZF_ERR_CANCELLED: return "ZF_ERR_CANCELLED";
    case ZF_ERR_BACKEND: return "ZF_ERR_BACKEND";
    case ZF_ERR_INTERNAL: return "ZF_ERR_INTERNAL";
    case ZF_ERR_TEMPLATE: return "ZF_ERR_TEMPLATE";
    default: return "ZF_ERR_UNKNOWN";
  }
}

ZF_API const char* zf_last_error(void) { return zf::capi::LastError(); }

ZF_API zf_status zf_set_log_callback(zf_log_cb cb, void* user_data) {
  zf::SetLogSink(cb, user_data);
  return zf::capi::Succeed();
}

ZF_API zf_status zf_set_log_level(int32_t level) {
  if (level < ZF_LOG_DEBUG || level > ZF_LOG_NONE) {
    return zf::capi::Fail(ZF_ERR_INVALID_ARGUMENT, "log level " + std::to_string(level) + " is outside 0..4");
  }
  zf::SetLogLevel(static_cast<zf::LogLevel>(level));
  return zf::capi::Succeed();
}

ZF_API zf_status zf_backend_available(int32_t device) {
  switch (device) {
    case ZF_DEVICE_AUTO:
    case ZF_DEVICE_CPU:
      return zf::capi::Succeed();
    case ZF_DEVICE_CUDA: {
      const std::string why = zf::engine::cuda::CudaUnavailableReason();
      if (why.empty()) return zf::capi::Succeed();
      return zf::capi::Fail(ZF_ERR_BACKEND, "CUDA unavailable: " + why);
    }
    default:
      return zf::capi::Fail(ZF_ERR_INVALID_ARGUMENT, "unknown device " + std::to_string(device));
  }
}

}  // extern "C"

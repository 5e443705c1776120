// Definitions behind the opaque C handles, and the helpers every C entry point uses to turn
// C++ outcomes (Status, exceptions) into a zf_status plus the thread-local error text.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/model.h"
#include "runtime/batcher.h"
#include "runtime/generator.h"
#include "runtime/prefix_cache.h"
#include "runtime/served_model.h"
#include "runtime/session.h"
#include "zerfoo.h"

// Reference counted like sqlite3_close_v2: the caller's handle holds one reference and every
// session one more, so zf_model_free() with sessions still alive only drops the caller's
// reference and the model goes away with its last session (bindings with garbage collectors
// cannot order their frees).
struct zf_model {
  std::unique_ptr<zf::rt::ServedModel> served;  // the model and its per-model services
  const zf::model::Model* impl = nullptr;       // served->model(), for the entry points' brevity
  std::atomic<uint32_t> refs{1};
};

struct zf_generation;

struct zf_session {
  zf_model* model;
  std::unique_ptr<zf::rt::Session> impl;
  // Owners: the caller (until zf_session_free) and each live zf_generation on it.
  std::atomic<int32_t> refs{1};
  // zf_session_set_draft_model: the draft model, referenced while impl's draft session
  // (rt::Session::draft) runs on it; released after impl is deleted.
  zf_model* draft_model = nullptr;
  bool freed = false;                // zf_session_free was called (a generation still holds it)
  const void* active = nullptr;  // a zf_generation or zf_turn in progress (not yet done)
};

struct zf_generation {
  zf_session* session;
  std::unique_ptr<zf::rt::Generation> impl;
  std::string piece;        // the piece not yet delivered (kept across BUFFER_TOO_SMALL)
  int32_t piece_token = -1;
  bool has_piece = false;
};

namespace zf::capi {

// Records the error for zf_last_error() on this thread and returns its code.
zf_status Fail(const Status& s);
zf_status Fail(int32_t code, const std::string& message);
// Clears the thread's error text and returns ZF_OK.
zf_status Succeed();
const char* LastError();

// Drops one reference to the model and deletes it with the last one.
void ReleaseModel(zf_model* model);

// Drops one owner of the session (the caller's handle, a generation or a turn); the last one
// deletes it and then drops the session's reference to its model (session_api.cpp).
void ReleaseSession(zf_session* s);

// Validates caller generate params and converts them to the runtime's options (zf_generate,
// zf_generate_begin and chat turns read them identically; session_api.cpp).
zf_status ToGenerateOptions(const zf_generate_params* params, zf::rt::GenerateOptions* out);

// The one rule for flags and reserved fields: bits outside `known`, or a nonzero reserved
// field, fail with ZF_ERR_INVALID_ARGUMENT naming the field (future flags must not silently
// mean nothing to an older library). Return ZF_OK when the value is acceptable.
zf_status CheckFlags(const char* field, uint32_t value, uint32_t known);
zf_status CheckReserved(const char* field, uint32_t value);

// Copies a string into a caller buffer (NUL-terminated) per the ABI's buffer rule.
zf_status CopyOut(const std::string& s, char* buf, size_t cap, size_t* needed);

// zf_X_params_init's one rule: copies the first min(size, sizeof(T)) bytes of `defaults` into
// the caller's struct and records that size (older, smaller layouts are accepted).
template <typename T>
zf_status InitParams(T* params, size_t size, const T& defaults) {
  if (params == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "params is NULL");
  if (size < sizeof(uint32_t)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params size " + std::to_string(size) + " is too small");
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(params), &defaults, n);
  params->struct_size = static_cast<uint32_t>(n);
  return Succeed();
}

// Reads a caller params struct of `struct_size` bytes into a fully defaulted T.
template <typename T>
bool ReadParams(const T* in, T* out) {
  if (in == nullptr) return true;
  if (in->struct_size < sizeof(uint32_t)) return false;
  const size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(out), in, n);
  out->struct_size = sizeof(T);
  return true;
}

}  // namespace zf::capi

// Every entry point body runs inside ZF_GUARD: no C++ exception ever crosses the ABI.
#define ZF_GUARD_BEGIN try {
#define ZF_GUARD_END                                                                   \
  }                                                                                    \
  catch (const std::bad_alloc&) {                                                      \
    return ::zf::capi::Fail(ZF_ERR_OUT_OF_MEMORY, "out of memory");                   \
  }                                                                                    \
  catch (const std::exception& e) {                                                    \
    return ::zf::capi::Fail(ZF_ERR_INTERNAL, std::string("internal error: ") + e.what()); \
  }                                                                                    \
  catch (...) {                                                                        \
    return ::zf::capi::Fail(ZF_ERR_INTERNAL, "internal error: unknown exception");     \
  }

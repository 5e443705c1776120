// Status: the error type of the C++ core (code + message), mapped 1:1 to zf_status by capi/.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace zf {

// Same numeric values as ZF_* in include/zerfoo.h (static_asserted in capi/).
enum class Code : int32_t {
  kOk = 0,
  kInvalidArgument = 1,
  kIo = 2,
  kFormat = 3,
  kUnsupported = 4,
  kOutOfMemory = 5,
  kBufferTooSmall = 6,
  kNotFound = 7,
  kInvalidUtf8 = 8,
  kContextFull = 9,
  kCancelled = 10,
  kBackend = 11,
  kInternal = 12,
  kTemplate = 13,
};

// Thread-compatible value type. Cheap to move; the message is empty on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status IoError(std::string m) { return Status(Code::kIo, std::move(m)); }
inline Status FormatError(std::string m) { return Status(Code::kFormat, std::move(m)); }
inline Status Unsupported(std::string m) { return Status(Code::kUnsupported, std::move(m)); }
inline Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
inline Status InternalError(std::string m) { return Status(Code::kInternal, std::move(m)); }
inline Status TemplateError(std::string m) { return Status(Code::kTemplate, std::move(m)); }

}  // namespace zf

// Propagates a non-OK Status from an expression to the caller.
#define ZF_RETURN_IF_ERROR(expr)        \
  do {                                  \
    ::zf::Status zf_status_ = (expr);   \
    if (!zf_status_.ok()) return zf_status_; \
  } while (0)

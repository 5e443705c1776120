// Run-time discovery of the CUDA kernel library (kernels/zfk.h): dlopen from the documented
// places, required/optional symbol resolution, ABI version and device checks. libzerfoo.so
// links no CUDA library; this is the only way it reaches one.
//
// Thread-safety: Default() is initialized once (thread-safe); a KernelLibrary is immutable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace zf::engine::cuda {

struct KernelApi {
  int32_t (*abi_version)() = nullptr;
  const char* (*last_error)() = nullptr;
  int32_t (*device_count)(int32_t*) = nullptr;
  int32_t (*device_info)(int32_t, int32_t*, int32_t*, uint64_t*, char*, size_t) = nullptr;
  int32_t (*supports_cc)(int32_t, int32_t, int32_t*) = nullptr;
};

struct DeviceInfo {
  std::string name;
  int32_t cc_major = 0, cc_minor = 0;
  uint64_t total_mem = 0;
};

class KernelLibrary {
 public:
  ~KernelLibrary();

  // Candidates in order: the explicit path if given, else the directory of libzerfoo.so, then
  // $ZF_KERNELS_PATH (a file or a directory), then the install library directory. kBackend
  // naming every place tried (and why each failed) when none loads; kBackend naming the
  // symbol or the version when the library is unusable.
  static Status Open(const std::string& explicit_path, std::unique_ptr<KernelLibrary>* out);

  // The process-wide library (Open("") once), or the reason it is unavailable.
  static const KernelLibrary* Default(std::string* reason);

  const std::string& path() const { return path_; }
  const KernelApi& api() const { return api_; }
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  // Optional kernels found in the library.
  bool Has(const std::string& name) const;
  const std::vector<std::string>& optional_found() const { return optional_found_; }
  const std::vector<std::string>& optional_missing() const { return optional_missing_; }

 private:
  KernelLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  KernelApi api_;
  std::vector<DeviceInfo> devices_;
  std::vector<std::string> optional_found_, optional_missing_;
};

// The reason device=CUDA cannot be used in this process ("" never: until the CUDA engine is
// implemented this always explains what was found and what is missing).
std::string CudaUnavailableReason();

}  // namespace zf::engine::cuda

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
#include "zfk.h"  // kernels/zfk.h: plain C, no CUDA header

namespace zf::engine::cuda {

// The kernel library's functions, typed from kernels/zfk.h. Required ones are never null in an
// opened library; optional ones (add_rms_norm, argmax) may be.
struct KernelApi {
#define ZF_ZFK_FN(name) decltype(&::zfk_##name) name = nullptr;
  ZF_ZFK_FN(abi_version) ZF_ZFK_FN(last_error) ZF_ZFK_FN(device_count) ZF_ZFK_FN(device_info)
  ZF_ZFK_FN(supports_cc) ZF_ZFK_FN(supports_type)
  // runtime
  ZF_ZFK_FN(set_device) ZF_ZFK_FN(malloc) ZF_ZFK_FN(free) ZF_ZFK_FN(memcpy_h2d) ZF_ZFK_FN(memcpy_d2h)
  ZF_ZFK_FN(memcpy_d2d) ZF_ZFK_FN(memset) ZF_ZFK_FN(stream_create) ZF_ZFK_FN(stream_destroy) ZF_ZFK_FN(stream_sync)
  ZF_ZFK_FN(graph_begin) ZF_ZFK_FN(graph_end) ZF_ZFK_FN(graph_launch) ZF_ZFK_FN(graph_destroy)
  // kernels
  ZF_ZFK_FN(get_rows) ZF_ZFK_FN(matmul) ZF_ZFK_FN(rms_norm) ZF_ZFK_FN(add) ZF_ZFK_FN(add_bias) ZF_ZFK_FN(softcap)
  ZF_ZFK_FN(gated_act) ZF_ZFK_FN(rope) ZF_ZFK_FN(store_kv) ZF_ZFK_FN(attention) ZF_ZFK_FN(attention_workspace)
  // optional
  ZF_ZFK_FN(add_rms_norm) ZF_ZFK_FN(argmax)
#undef ZF_ZFK_FN
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

// Why device=CUDA cannot be used in this process: what was tried and what is missing; "" when
// the kernel library loaded and found a supported GPU.
std::string CudaUnavailableReason();

}  // namespace zf::engine::cuda

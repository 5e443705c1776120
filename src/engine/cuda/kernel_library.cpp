#include "engine/cuda/kernel_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

namespace zf::engine::cuda {
namespace {

constexpr int32_t kAbiVersion = 1;  // ZFK_ABI_VERSION in kernels/zfk.h
constexpr const char* kLibName = "libzerfoo_kernels.so";

// Kernels the engine will use when present; each has a slower fallback.
const char* const kOptionalKernels[] = {
    "zfk_gemv_q4_0", "zfk_gemv_q4_1", "zfk_gemv_q5_0", "zfk_gemv_q8_0", "zfk_gemv_q4_k",
    "zfk_gemv_q5_k", "zfk_gemv_q6_k", "zfk_rms_norm",  "zfk_rope",      "zfk_attention_decode",
};

bool IsDirectory(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The directory holding libzerfoo.so itself (dladdr of a function in this library).
std::string OwnDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&OwnDirectory), &info) == 0 || info.dli_fname == nullptr) return "";
  return Dir(info.dli_fname);
}

std::vector<std::string> Candidates(const std::string& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<std::string> c;
  const std::string own = OwnDirectory();
  if (!own.empty()) c.push_back(own + "/" + kLibName);
  if (const char* env = std::getenv("ZF_KERNELS_PATH"); env != nullptr && *env != '\0') {
    c.push_back(IsDirectory(env) ? std::string(env) + "/" + kLibName : std::string(env));
  }
#ifdef ZF_INSTALL_LIBDIR
  c.push_back(std::string(ZF_INSTALL_LIBDIR) + "/" + kLibName);
#endif
  return c;
}

template <typename Fn>
bool Resolve(void* h, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(h, name));
  return *out != nullptr;
}

}  // namespace

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status KernelLibrary::Open(const std::string& explicit_path, std::unique_ptr<KernelLibrary>* out) {
  std::string tried;
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary());
  for (const std::string& path : Candidates(explicit_path)) {
    dlerror();
    lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = path;
      break;
    }
    const char* e = dlerror();
    tried += "\n  " + (e != nullptr ? std::string(e) : path + ": cannot load");  // dlerror names the path
  }
  if (lib->handle_ == nullptr) {
    return Status(Code::kBackend, std::string("CUDA kernel library ") + kLibName + " not found; tried:" +
                                      (tried.empty() ? std::string(" nothing (no candidate paths)") : tried));
  }
  KernelApi& a = lib->api_;
  const std::pair<const char*, bool> required[] = {
      {"zfk_abi_version", Resolve(lib->handle_, "zfk_abi_version", &a.abi_version)},
      {"zfk_last_error", Resolve(lib->handle_, "zfk_last_error", &a.last_error)},
      {"zfk_device_count", Resolve(lib->handle_, "zfk_device_count", &a.device_count)},
      {"zfk_device_info", Resolve(lib->handle_, "zfk_device_info", &a.device_info)},
      {"zfk_supports_cc", Resolve(lib->handle_, "zfk_supports_cc", &a.supports_cc)},
  };
  for (const auto& r : required) {
    if (!r.second) {
      return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " lacks the required symbol " + r.first);
    }
  }
  if (a.abi_version() != kAbiVersion) {
    return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " has ABI version " +
                                      std::to_string(a.abi_version()) + ", this libzerfoo needs " +
                                      std::to_string(kAbiVersion));
  }
  for (const char* name : kOptionalKernels) {
    (dlsym(lib->handle_, name) != nullptr ? lib->optional_found_ : lib->optional_missing_).push_back(name);
  }
  int32_t n = 0;
  if (a.device_count(&n) != 0) {
    return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " found no usable GPU: " + a.last_error());
  }
  if (n <= 0) return Status(Code::kBackend, "no CUDA device found (kernel library " + lib->path_ + ")");
  for (int32_t d = 0; d < n; ++d) {
    DeviceInfo info;
    char name[256] = {0};
    if (a.device_info(d, &info.cc_major, &info.cc_minor, &info.total_mem, name, sizeof name) != 0) {
      return Status(Code::kBackend, "cannot query CUDA device " + std::to_string(d) + ": " + a.last_error());
    }
    info.name = name;
    int32_t ok = 0;
    if (a.supports_cc(info.cc_major, info.cc_minor, &ok) != 0 || !ok) {
      return Status(Code::kBackend, "GPU " + info.name + " (compute capability " + std::to_string(info.cc_major) +
                                        "." + std::to_string(info.cc_minor) + ") is not supported by " + lib->path_);
    }
    lib->devices_.push_back(info);
  }
  *out = std::move(lib);
  return Status::Ok();
}

const KernelLibrary* KernelLibrary::Default(std::string* reason) {
  static std::once_flag once;
  static std::unique_ptr<KernelLibrary> lib;
  static std::string why;
  std::call_once(once, [] {
    Status s = Open("", &lib);
    if (!s.ok()) why = s.message();
  });
  if (reason != nullptr) *reason = why;
  return lib.get();
}

bool KernelLibrary::Has(const std::string& name) const {
  for (const std::string& n : optional_found_) {
    if (n == name) return true;
  }
  return false;
}

std::string CudaUnavailableReason() {
  std::string reason;
  const KernelLibrary* lib = KernelLibrary::Default(&reason);
  if (lib == nullptr) return reason;
  return "CUDA kernel library " + lib->path() + " and " + std::to_string(lib->devices().size()) +
         " GPU(s) found, but this build's CUDA engine is not implemented yet";
}

}  // namespace zf::engine::cuda

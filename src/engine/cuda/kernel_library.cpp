#include "engine/cuda/kernel_library.h"
#include "common/switches.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

namespace zf::engine::cuda {
namespace {

constexpr int32_t kAbiVersion = ZFK_ABI_VERSION;
constexpr const char* kLibName = "libzerfoo_kernels.so";

// Kernels the engine uses when present; each has a fallback (add + rms_norm; argmax on the
// host after copying the logits).
const char* const kOptionalKernels[] = {"zfk_add_rms_norm", "zfk_argmax"};

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
  if (const char* env = env::KernelsPath(); env != nullptr) {
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
  // The version first: a library of another ABI may lack today's required symbols, and the
  // version mismatch is the useful message then.
  if (!Resolve(lib->handle_, "zfk_abi_version", &a.abi_version)) {
    return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " lacks the required symbol zfk_abi_version");
  }
  if (a.abi_version() != kAbiVersion) {
    return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " has ABI version " +
                                      std::to_string(a.abi_version()) + ", this libzerfoo needs " +
                                      std::to_string(kAbiVersion));
  }
  const char* missing = nullptr;
#define ZF_REQUIRE(name) \
  if (!Resolve(lib->handle_, "zfk_" #name, &a.name) && missing == nullptr) missing = "zfk_" #name;
  ZF_REQUIRE(last_error) ZF_REQUIRE(device_count) ZF_REQUIRE(device_info) ZF_REQUIRE(supports_cc)
  ZF_REQUIRE(supports_type) ZF_REQUIRE(set_device) ZF_REQUIRE(malloc) ZF_REQUIRE(free) ZF_REQUIRE(memcpy_h2d)
  ZF_REQUIRE(memcpy_d2h) ZF_REQUIRE(memcpy_d2d) ZF_REQUIRE(memset) ZF_REQUIRE(stream_create)
  ZF_REQUIRE(stream_destroy) ZF_REQUIRE(stream_sync) ZF_REQUIRE(graph_begin) ZF_REQUIRE(graph_end)
  ZF_REQUIRE(graph_launch) ZF_REQUIRE(graph_destroy) ZF_REQUIRE(get_rows) ZF_REQUIRE(matmul) ZF_REQUIRE(rms_norm)
  ZF_REQUIRE(add) ZF_REQUIRE(add_bias) ZF_REQUIRE(softcap) ZF_REQUIRE(gated_act) ZF_REQUIRE(rope)
  ZF_REQUIRE(store_kv) ZF_REQUIRE(attention) ZF_REQUIRE(attention_workspace)
#undef ZF_REQUIRE
  if (missing != nullptr) {
    return Status(Code::kBackend, "CUDA kernel library " + lib->path_ + " lacks the required symbol " + missing);
  }
  Resolve(lib->handle_, "zfk_add_rms_norm", &a.add_rms_norm);
  Resolve(lib->handle_, "zfk_argmax", &a.argmax);
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
  return KernelLibrary::Default(&reason) == nullptr ? reason : std::string();
}

}  // namespace zf::engine::cuda

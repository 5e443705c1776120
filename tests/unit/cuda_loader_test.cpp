// The CUDA kernel library loader on a machine without a GPU, using fake kernel libraries
// (tests/fake_kernels): discovery order and error messages, required/optional symbols, ABI
// version, driver/device/compute-capability checks.
#include "engine/cuda/kernel_library.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace zf::engine::cuda {
namespace {

struct EnvGuard {
  EnvGuard(const char* k, const char* v) : key(k) { setenv(k, v, 1); }
  ~EnvGuard() { unsetenv(key); }
  const char* key;
};

TEST(CudaLoader, FakeLibraryLoadsWithDevicesAndOptionalKernels) {
  std::unique_ptr<KernelLibrary> lib;
  Status s = KernelLibrary::Open(ZF_FAKE_KERNELS, &lib);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(lib->devices().size(), 1u);
  EXPECT_EQ(lib->devices()[0].cc_major, 9);
  EXPECT_EQ(lib->devices()[0].name, "Fake GPU 0");
  EXPECT_TRUE(lib->Has("zfk_add_rms_norm"));
  EXPECT_NE(lib->api().add_rms_norm, nullptr);
  EXPECT_FALSE(lib->Has("zfk_argmax"));  // optional and absent: the engine falls back
  EXPECT_EQ(lib->api().argmax, nullptr);
  EXPECT_NE(lib->api().matmul, nullptr);  // required ones are all resolved
  EXPECT_NE(lib->api().graph_end, nullptr);
}

TEST(CudaLoader, FoundThroughZfKernelsPathDirectory) {
  std::string dir = ZF_FAKE_KERNELS_DIR;
  EnvGuard env("ZF_KERNELS_PATH", dir.c_str());
  std::unique_ptr<KernelLibrary> lib;
  Status s = KernelLibrary::Open("", &lib);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(lib->path().find(dir), std::string::npos) << lib->path();
}

TEST(CudaLoader, MissingLibraryNamesEveryPlaceTried) {
  EnvGuard env("ZF_KERNELS_PATH", "/nonexistent/kernels");
  std::unique_ptr<KernelLibrary> lib;
  Status s = KernelLibrary::Open("", &lib);
  EXPECT_EQ(s.code(), Code::kBackend);
  EXPECT_NE(s.message().find("/nonexistent/kernels"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("libzerfoo_kernels.so"), std::string::npos) << s.message();
}

TEST(CudaLoader, MissingRequiredSymbolIsNamed) {
  std::unique_ptr<KernelLibrary> lib;
  Status s = KernelLibrary::Open(ZF_FAKE_KERNELS_BROKEN, &lib);
  EXPECT_EQ(s.code(), Code::kBackend);
  EXPECT_NE(s.message().find("zfk_device_info"), std::string::npos) << s.message();
}

TEST(CudaLoader, AbiDriverAndComputeCapabilityChecks) {
  std::unique_ptr<KernelLibrary> lib;
  {
    EnvGuard e("FAKE_ZFK_ABI", "1");  // a library built for the previous ABI
    Status s = KernelLibrary::Open(ZF_FAKE_KERNELS, &lib);
    EXPECT_NE(s.message().find("ABI version 1"), std::string::npos) << s.message();
  }
  {
    EnvGuard e("FAKE_ZFK_DEVICES", "-1");
    Status s = KernelLibrary::Open(ZF_FAKE_KERNELS, &lib);
    EXPECT_NE(s.message().find("driver not found"), std::string::npos) << s.message();
  }
  {
    EnvGuard e("FAKE_ZFK_DEVICES", "0");
    Status s = KernelLibrary::Open(ZF_FAKE_KERNELS, &lib);
    EXPECT_NE(s.message().find("no CUDA device"), std::string::npos) << s.message();
  }
  {
    EnvGuard e("FAKE_ZFK_CC", "100");
    Status s = KernelLibrary::Open(ZF_FAKE_KERNELS, &lib);
    EXPECT_NE(s.message().find("compute capability 10.0"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace zf::engine::cuda

// Entry point of the GPU tests: without a usable kernel library and GPU the whole binary is
// skipped with a visible reason (exit code 77, which ctest reports as "Skipped").
#include <gtest/gtest.h>

#include <cstdio>

#include "engine/cuda/kernel_library.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string why = zf::engine::cuda::CudaUnavailableReason();
  if (!why.empty()) {
    std::printf("no CUDA device: %s\nGPU tests SKIPPED (they need an NVIDIA GPU, driver >= 580 and "
                "libzerfoo_kernels.so)\n", why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}

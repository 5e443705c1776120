// The ZF_* environment switches (switches.h).
#include "common/switches.h"

#include <cstdlib>

namespace zf::env {
namespace {

bool Set(const char* name) { return std::getenv(name) != nullptr; }

// Unset or empty: def; otherwise anything but a leading '0' is on.
bool Flag(const char* name, bool def) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? def : v[0] != '0';
}

const char* NonEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

bool NoAvx512() { return Set("ZF_NO_AVX512"); }
bool NoNeon() { return Set("ZF_NO_NEON"); }
bool NoPack() { return Set("ZF_NO_PACK"); }
bool NoPackedGemm() { return Set("ZF_NO_PACKED_GEMM"); }
const char* DecodePrefetch() { return NonEmpty("ZF_DECODE_PREFETCH"); }
bool NoBlockedAttention() { return Set("ZF_NO_BLOCKED_ATTN"); }
bool NoSharedKv() { return Set("ZF_NO_SHARED_KV"); }
const char* BatchDraft() { return NonEmpty("ZF_BATCH_DRAFT"); }
bool DebugGpu() { return Flag("ZF_DEBUG_GPU", false); }
bool CudaGraph() { return Flag("ZF_CUDA_GRAPH", true); }
bool CudaFuse() { return Flag("ZF_CUDA_FUSE", true); }
const char* KernelsPath() { return NonEmpty("ZF_KERNELS_PATH"); }
const char* LogLevel() { return std::getenv("ZF_LOG_LEVEL"); }

}  // namespace zf::env

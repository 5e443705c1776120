// Every ZF_* environment variable the library reads, named once here with what it does. Each
// accessor reads the environment when called (tests set some at run time); callers on hot paths
// cache the answer.
#pragma once

namespace zf::env {

bool NoAvx512();            // ZF_NO_AVX512: the AVX2 kernels on AVX-512 machines (A/B runs, tests)
bool NoNeon();              // ZF_NO_NEON: the portable kernels on aarch64
bool NoPack();              // ZF_NO_PACK: no repacked decode copies (GEMV on the file's blocks)
bool NoPackedGemm();        // ZF_NO_PACKED_GEMM: prefill without the tile-packed GEMM
// ZF_DECODE_PREFETCH: the decode kernels' software prefetch, auto (unset: chosen for the CPU),
// l1 (8 KiB ahead into L1), l2 (8 KiB ahead into L2) or off; null if unset
const char* DecodePrefetch();
bool NoBlockedAttention();  // ZF_NO_BLOCKED_ATTN: prefill attention row by row
bool NoSharedKv();          // ZF_NO_SHARED_KV: prefix cache blocks copied into sessions, not mapped (A/B)
// ZF_BATCH_DRAFT: whether a session drafts while other sequences share its decode steps: cost
// (unset: the batcher's measured step cost decides), always (every draft the lookup finds; tests
// that must not depend on timing, A/B runs) or never; null if unset
const char* BatchDraft();
bool DebugGpu();            // ZF_DEBUG_GPU: log every captured CUDA op and capture failures
bool CudaGraph();           // ZF_CUDA_GRAPH (default 1): replay decode as one CUDA graph
bool CudaFuse();            // ZF_CUDA_FUSE (default 1): QK-norm into RoPE, residual add into RMSNorm
const char* KernelsPath();  // ZF_KERNELS_PATH: where to look for the CUDA kernel library; null if unset
const char* LogLevel();     // ZF_LOG_LEVEL: error|warn|info|debug|none; null if unset

}  // namespace zf::env

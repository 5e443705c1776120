// The CUDA engine: engine::Backend on one GPU through the kernel library (kernels/zfk.h, reached
// with dlopen; no CUDA header here). Weights are the model's DeviceWeights; activations, the F16
// KV cache, token ids and positions live on the device. The decode step (one token, logits
// wanted) is captured once as a CUDA graph and replayed for every later token; if capture fails
// the step runs uncaptured and capture is not tried again. ZF_DEBUG_GPU=1 logs every captured op
// and what broke a capture; ZF_CUDA_GRAPH=0 disables graphs.
// Thread-compatible: one session's thread at a time.
#pragma once

#include <memory>

#include "common/status.h"
#include "engine/backend.h"
#include "engine/cuda/device_weights.h"

namespace zf::engine::cuda {

// A backend on weights->device(); kBackend with the reason when the stream cannot be created.
// Which optional ops (engine/ops.h) the CUDA engine implements.
bool Supports(Op op);

Status CreateCudaBackend(std::shared_ptr<const DeviceWeights> weights, std::unique_ptr<Backend>* out);

}  // namespace zf::engine::cuda

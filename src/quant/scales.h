// Load-time validation of the floating-point fields of GGUF tensor data: a file whose block
// scales are NaN or infinite would otherwise load, turn every activation NaN and return
// garbage (SECURITY.md, "What is validated where").
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/ggml_types.h"

namespace zf::quant {

// Index of the first block of `type` in data[0, nbytes) whose fp16/bf16/f32 scale, min or value
// is NaN or infinite, or -1 when every one is finite (also for types without such fields, e.g.
// I8). For F32/F16/BF16 a "block" is one element. `nbytes` is a whole number of blocks.
int64_t FindNonFiniteBlock(GgmlType type, const uint8_t* data, size_t nbytes);

}  // namespace zf::quant

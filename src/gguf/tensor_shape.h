// Shape checks on a GGUF file's tensors, shared by every loader that reads tensors by name
// (the model's role table, the LoRA adapters, the vision and audio projectors), so that they
// check and name shapes the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"

namespace zf::gguf {

// "[a, b, ...]" of the first n dimensions (ggml order), for error messages.
std::string ShapeString(const int64_t* ne, size_t n);

// Whether t's shape is exactly ne[0..n), every further dimension 1.
bool HasShape(const TensorInfo& t, const int64_t* ne, size_t n);

// The tensor `name` of exactly the shape ne; otherwise a format error, prefixed with `context`
// ("mmproj: "), that says the tensor is missing or names both shapes.
Status FindShaped(const GgufFile& f, const std::string& name, const std::vector<int64_t>& ne,
                  std::string_view context, const TensorInfo** out);

}  // namespace zf::gguf

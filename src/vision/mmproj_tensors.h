// The mmproj reader's tensor lookups (vision/mmproj.cpp), shared with the family loaders
// (vision/pixtral.cpp): each checks the name and exact shape and records the name in `used`.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "gguf/gguf.h"
#include "vision/mmproj.h"

namespace zf::vision {

// "[a, b, ...]"
std::string Shape(const int64_t* ne, size_t n);
// The tensor `name` with exactly the shape ne (ggml order).
Status Find(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
            const gguf::TensorInfo** out);
// An F32 or F16 tensor as floats.
Status Floats(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
              std::vector<float>* out);
// NAME.weight as `out` rows of `in` (and NAME.bias when `bias`); ne: the file's shape when it
// is not [in, out] (the patch convolution).
Status Matrix(const gguf::GgufFile& f, const std::string& name, int64_t in, int64_t out, std::set<std::string>* used,
              Linear* l, bool bias, std::vector<int64_t> ne = {});

}  // namespace zf::vision

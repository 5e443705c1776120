#include "gguf/tensor_shape.h"

namespace zf::gguf {

std::string ShapeString(const int64_t* ne, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

bool HasShape(const TensorInfo& t, const int64_t* ne, size_t n) {
  for (size_t i = 0; i < 4; ++i)
    if (t.ne[i] != (i < n ? ne[i] : 1)) return false;
  return n <= 4;
}

Status FindShaped(const GgufFile& f, const std::string& name, const std::vector<int64_t>& ne,
                  std::string_view context, const TensorInfo** out) {
  const TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return FormatError(std::string(context) + "tensor '" + name + "' is missing");
  if (!HasShape(*t, ne.data(), ne.size()))
    return FormatError(std::string(context) + "tensor '" + name + "' has shape " + ShapeString(t->ne, t->n_dims) +
                       ", " + ShapeString(ne.data(), ne.size()) + " expected");
  *out = t;
  return Status::Ok();
}

}  // namespace zf::gguf

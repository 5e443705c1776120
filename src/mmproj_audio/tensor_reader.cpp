#include "mmproj_audio/tensor_reader.h"

#include <cmath>
#include <utility>

#include "gguf/tensor_shape.h"
#include "quant/quant.h"

namespace zf::mmproj_audio {

Status Reader::Find(const std::string& name, std::vector<int64_t> ne, const gguf::TensorInfo** out) {
  ZF_RETURN_IF_ERROR(gguf::FindShaped(f, name, ne, "mmproj: ", out));
  used.insert(name);
  return Status::Ok();
}

Status Reader::Floats(const std::string& name, std::vector<int64_t> ne, std::vector<float>* out) {
  const gguf::TensorInfo* t = nullptr;
  ZF_RETURN_IF_ERROR(Find(name, std::move(ne), &t));
  if (t->type != GgmlType::F32 && t->type != GgmlType::F16)
    return FormatError("mmproj: tensor '" + name + "' is " + TypeName(t->type) + ", F32 or F16 expected");
  std::vector<uint8_t> tmp(t->data, t->data + t->nbytes);  // the mapping need not be aligned for floats
  out->resize(size_t(t->n_elements()));
  quant::DequantizeRow(t->type, tmp.data(), out->data(), t->n_elements());
  return Status::Ok();
}

Status Reader::Matrix(const std::string& name, int64_t in, int64_t out, speech::Linear* l, std::vector<int64_t> bias_ne,
                    std::vector<int64_t> ne) {
  const gguf::TensorInfo* t = nullptr;
  ZF_RETURN_IF_ERROR(Find(name + ".weight", ne.empty() ? std::vector<int64_t>{in, out} : ne, &t));
  if (!quant::IsSupported(t->type) || in % GetTypeTraits(t->type)->block_size != 0)
    return FormatError("mmproj: tensor '" + name + ".weight' has type " + TypeName(t->type) + ", which rows of " +
                       std::to_string(in) + " cannot use");
  l->type = t->type;
  l->in = in;
  l->out = out;
  l->stride = RowSize(t->type, in);
  l->w.assign(t->data, t->data + t->nbytes);
  if (!bias_ne.empty()) ZF_RETURN_IF_ERROR(Floats(name + ".bias", std::move(bias_ne), &l->b));
  return Status::Ok();
}

Status Reader::Norm(const std::string& name, int64_t n, speech::Norm* out) {
  ZF_RETURN_IF_ERROR(Floats(name + ".weight", {n}, &out->w));
  return Floats(name + ".bias", {n}, &out->b);
}

Status Reader::RowsOf(const std::string& name, int64_t in, int64_t* rows) const {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return FormatError("mmproj: tensor '" + name + "' is missing");
  if (t->n_dims != 2 || t->ne[0] != in)
    return FormatError("mmproj: tensor '" + name + "' has shape " + gguf::ShapeString(t->ne, t->n_dims) + ", [" + std::to_string(in) +
                       ", n] expected");
  *rows = t->ne[1];
  return Status::Ok();
}

Status Reader::U32(const std::string& key, int32_t* out, int32_t min) {
  uint32_t v = 0;
  Status s = f.GetU32(key, &v);
  if (!s.ok()) return FormatError("mmproj: " + key + ": " + (s.code() == Code::kNotFound ? "missing" : s.message()));
  if (v < uint32_t(min) || v > (1u << 20)) return FormatError("mmproj: " + key + " = " + std::to_string(v) + " is out of range");
  *out = int32_t(v);
  return Status::Ok();
}

void RmsNorm(float* x, int64_t n_rows, int64_t n, const std::vector<float>& w, float eps) {
  for (int64_t t = 0; t < n_rows; ++t) {
    float* r = x + t * n;
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(r[i] * r[i]);
    const float scale = 1.0f / std::sqrt(float(s / double(n)) + eps);
    if (w.empty())
      for (int64_t i = 0; i < n; ++i) r[i] = r[i] * scale;
    else
      for (int64_t i = 0; i < n; ++i) r[i] = r[i] * scale * w[size_t(i)];
  }
}

}  // namespace zf::mmproj_audio

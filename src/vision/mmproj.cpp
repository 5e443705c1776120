#include "vision/mmproj.h"

#include <cstring>
#include <set>
#include <utility>

#include "gguf/gguf.h"
#include "gguf/tensor_shape.h"
#include "quant/quant.h"
#include "vision/gemma4v.h"
#include "vision/lfm2_vl.h"
#include "vision/mmproj_tensors.h"
#include "vision/qwen_vl.h"

namespace zf::vision {

Status Find(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
            const gguf::TensorInfo** out) {
  ZF_RETURN_IF_ERROR(gguf::FindShaped(f, name, ne, "mmproj: ", out));
  used->insert(name);
  return Status::Ok();
}

Status Floats(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> ne, std::set<std::string>* used,
              std::vector<float>* out) {
  const gguf::TensorInfo* t = nullptr;
  ZF_RETURN_IF_ERROR(Find(f, name, std::move(ne), used, &t));
  if (t->type != GgmlType::F32 && t->type != GgmlType::F16)
    return FormatError("mmproj: tensor '" + name + "' is " + TypeName(t->type) + ", F32 or F16 expected");
  std::vector<uint8_t> tmp(t->data, t->data + t->nbytes);  // the mapping need not be aligned for floats
  out->resize(size_t(t->n_elements()));
  quant::DequantizeRow(t->type, tmp.data(), out->data(), t->n_elements());
  return Status::Ok();
}

Status Matrix(const gguf::GgufFile& f, const std::string& name, int64_t in, int64_t out, std::set<std::string>* used,
              Linear* l, bool bias, std::vector<int64_t> ne) {
  const gguf::TensorInfo* t = nullptr;
  ZF_RETURN_IF_ERROR(Find(f, name + ".weight", ne.empty() ? std::vector<int64_t>{in, out} : ne, used, &t));
  if (!quant::IsSupported(t->type) || in % GetTypeTraits(t->type)->block_size != 0)
    return FormatError("mmproj: tensor '" + name + ".weight' has type " + TypeName(t->type) + ", which rows of " +
                       std::to_string(in) + " cannot use");
  l->type = t->type;
  l->in = in;
  l->out = out;
  l->stride = RowSize(t->type, in);
  l->w = t->data;
  if (bias) ZF_RETURN_IF_ERROR(Floats(f, name + ".bias", {out}, used, &l->b));
  return Status::Ok();
}

namespace {

Status Norm(const gguf::GgufFile& f, const std::string& name, int64_t n, std::set<std::string>* used, LayerNormW* out,
            bool required) {
  if (!required && f.FindTensor(name + ".weight") == nullptr) return Status::Ok();
  ZF_RETURN_IF_ERROR(Floats(f, name + ".weight", {n}, used, &out->w));
  return Floats(f, name + ".bias", {n}, used, &out->b);
}

Status U32(const gguf::GgufFile& f, const char* key, int32_t* out, int32_t min) {
  uint32_t v = 0;
  Status s = f.GetU32(key, &v);
  if (!s.ok()) return FormatError(std::string("mmproj: ") + key + ": " + (s.code() == Code::kNotFound ? "missing" : s.message()));
  if (v < uint32_t(min) || v > (1u << 20)) return FormatError(std::string("mmproj: ") + key + " = " + std::to_string(v) + " is out of range");
  *out = int32_t(v);
  return Status::Ok();
}

Status ReadHparams(const gguf::GgufFile& f, VisionHparams* hp) {
  std::string_view sv;
  if (!f.GetString("general.architecture", &sv).ok() || sv != "clip")
    return FormatError("mmproj: general.architecture is '" + std::string(sv) + "', 'clip' expected (not a projector file)");
  if (!f.GetString("clip.projector_type", &sv).ok() && !f.GetString("clip.vision.projector_type", &sv).ok())
    return FormatError("mmproj: clip.projector_type is missing");
  hp->projector = std::string(sv);
  hp->spec = FindProjector(hp->projector);
  if (hp->spec == nullptr)
    return Unsupported("mmproj: clip.projector_type '" + hp->projector + "' is not supported (" + SupportedProjectors() +
                       " are)");
  bool b = false;
  if (!f.GetBool("clip.has_vision_encoder", &b).ok() || !b)
    return FormatError("mmproj: clip.has_vision_encoder is not true (no vision encoder in the file)");
  const bool pixtral = hp->spec->vit == Vit::kPixtral, qwen25 = hp->spec->vit == Vit::kQwen25vl;
  const bool qwen = qwen25 || hp->spec->vit == Vit::kQwen3vl;
  const char* act = pixtral || qwen25 ? "clip.use_silu" : "clip.use_gelu";
  if (!f.GetBool(act, &b).ok() || !b)
    return Unsupported(std::string("mmproj: ") + act + " is not true (" + hp->projector + "'s encoder uses " +
                       (pixtral || qwen25 ? "SiLU" : "GELU") + ")");
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.image_size", &hp->image_size, 1));
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.patch_size", &hp->patch_size, 1));
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.embedding_length", &hp->n_embd, 1));
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.feed_forward_length", &hp->n_ff, 1));
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.block_count", &hp->n_layer, 1));
  ZF_RETURN_IF_ERROR(U32(f, "clip.vision.attention.head_count", &hp->n_head, 1));
  // Pixtral merges by clip.vision.spatial_merge_size (none without it), the others pool or
  // shuffle by the scale factor (4 without it).
  // (Qwen2.5-VL: spatial_merge_size, 2 without it).
  const char* merge_key = pixtral || qwen ? "clip.vision.spatial_merge_size" : "clip.vision.projector.scale_factor";
  hp->n_merge = pixtral ? 1 : qwen ? 2 : 4;
  if (f.Find(merge_key) != nullptr) ZF_RETURN_IF_ERROR(U32(f, merge_key, &hp->n_merge, 1));
  if (hp->spec->merge == Merge::kPixelShuffle && hp->n_merge < 2)
    return FormatError("mmproj: clip.vision.projector.scale_factor must be 2 or more for " + hp->projector + "'s pixel shuffle");
  if (hp->spec->tiling == Tiling::kLongestEdge) {
    // Files without it take libmtmd's other (llava-uhd style) slicing, not read here.
    if (f.Find("clip.vision.preproc_image_size") == nullptr)
      return Unsupported("mmproj: clip.vision.preproc_image_size is missing (older " + hp->projector +
                         " files slice images another way, not supported)");
    ZF_RETURN_IF_ERROR(U32(f, "clip.vision.preproc_image_size", &hp->longest_edge, 1));
  }
  Status s = f.GetF32("clip.vision.attention.layer_norm_epsilon", &hp->eps);
  if (!s.ok()) return FormatError("mmproj: clip.vision.attention.layer_norm_epsilon: " + s.message());
  if (!(hp->eps > 0.0f && hp->eps < 1.0f)) return FormatError("mmproj: clip.vision.attention.layer_norm_epsilon is out of range");
  const std::pair<const char*, std::array<float, 3>*> stats[] = {{"clip.vision.image_mean", &hp->mean},
                                                                  {"clip.vision.image_std", &hp->std}};
  for (const auto& [key, dst] : stats) {
    std::vector<float> v;
    s = f.GetF32Array(key, &v);
    if (!s.ok() || v.size() < 3) return FormatError(std::string("mmproj: ") + key + " must hold 3 numbers");
    for (size_t c = 0; c < 3; ++c) (*dst)[c] = v[c];
  }
  for (float x : hp->std)
    if (!(x > 0.0f)) return FormatError("mmproj: clip.vision.image_std must be positive");
  if (hp->spec->vit == Vit::kGemma4v) return Gemma4vHparams(f, hp);  // no fixed grid (image_size unused)
  if (hp->image_size % hp->patch_size != 0)
    return FormatError("mmproj: clip.vision.image_size " + std::to_string(hp->image_size) + " is no multiple of clip.vision.patch_size " +
                       std::to_string(hp->patch_size));
  if (hp->patches_per_side() % hp->n_merge != 0)
    return FormatError("mmproj: " + std::to_string(hp->patches_per_side()) + " patches per side do not pool by " + std::to_string(hp->n_merge));
  if (hp->n_embd % hp->n_head != 0)
    return FormatError("mmproj: clip.vision.embedding_length is no multiple of clip.vision.attention.head_count");
  if (OwnSize(hp->spec->tiling)) {
    // libmtmd's token limits (set_limit_image_tokens: pixtral 8 .. 1024, lfm2 64 .. 256) in pixels.
    const bool lfm2 = hp->spec->vit == Vit::kLfm2;
    const int32_t area = hp->patch_size * hp->patch_size * hp->n_merge * hp->n_merge;
    hp->min_pixels = (lfm2 ? 64 : 8) * area;
    hp->max_pixels = (lfm2 ? 256 : 1024) * area;
  }
  return Status::Ok();
}

// A tensor with no role is refused (a file of another layout read wrongly otherwise).
Status CheckAllUsed(const gguf::GgufFile& f, const VisionHparams& hp, const std::set<std::string>& used) {
  for (const gguf::TensorInfo& ti : f.tensors())
    if (used.count(std::string(ti.name)) == 0)
      return FormatError("mmproj: tensor '" + std::string(ti.name) + "' is not part of a " + hp.projector + " projector");
  return Status::Ok();
}

}  // namespace

Mmproj::~Mmproj() = default;

Status Mmproj::Load(const std::string& path, std::unique_ptr<Mmproj>* out) {
  out->reset();
  std::unique_ptr<gguf::GgufFile> f;
  Status s = gguf::GgufFile::Open(path, gguf::OpenOptions{}, &f);
  if (s.ok()) s = FromGguf(std::move(f), out);
  if (!s.ok()) return Status(s.code(), "'" + path + "': " + s.message());
  return s;
}

Status Mmproj::FromGguf(std::unique_ptr<gguf::GgufFile> file, std::unique_ptr<Mmproj>* out) {
  out->reset();
  std::unique_ptr<Mmproj> m(new Mmproj());
  const gguf::GgufFile& f = *file;
  VisionHparams& hp = m->hp_;
  ZF_RETURN_IF_ERROR(ReadHparams(f, &hp));
  std::set<std::string> used;
  if (hp.spec->vit == Vit::kGemma4v) {
    m->gemma4v = std::make_unique<Gemma4vWeights>();
    ZF_RETURN_IF_ERROR(LoadGemma4v(f, &hp, &used, m->gemma4v.get()));
    ZF_RETURN_IF_ERROR(CheckAllUsed(f, hp, used));
    m->file_ = std::move(file);
    *out = std::move(m);
    return Status::Ok();
  }
  if (hp.spec->vit == Vit::kQwen25vl || hp.spec->vit == Vit::kQwen3vl) {
    m->qwen_vl = std::make_unique<QwenVlWeights>();
    ZF_RETURN_IF_ERROR(QwenVlHparams(f, &hp, m->qwen_vl.get()));
    ZF_RETURN_IF_ERROR(LoadQwenVl(f, &hp, m.get(), m->qwen_vl.get(), &used));
    ZF_RETURN_IF_ERROR(CheckAllUsed(f, hp, used));
    m->file_ = std::move(file);
    *out = std::move(m);
    return Status::Ok();
  }
  if (hp.spec->vit == Vit::kPixtral) {
    ZF_RETURN_IF_ERROR(LoadPixtral(f, &hp, m.get(), &used));
    ZF_RETURN_IF_ERROR(CheckAllUsed(f, hp, used));
    m->file_ = std::move(file);
    *out = std::move(m);
    return Status::Ok();
  }
  const int64_t E = hp.n_embd, P = hp.patch_size, n_pos = int64_t(hp.patches_per_side()) * hp.patches_per_side();
  // The patch convolution [P][P][3][E] is E rows of 3*P*P: a product over im2col rows.
  ZF_RETURN_IF_ERROR(Matrix(f, "v.patch_embd", 3 * P * P, E, &used, &m->patch, false, {P, P, 3, E}));
  ZF_RETURN_IF_ERROR(Floats(f, "v.patch_embd.bias", {E}, &used, &m->patch.b));
  ZF_RETURN_IF_ERROR(Floats(f, "v.position_embd.weight", {E, n_pos}, &used, &m->pos));
  ZF_RETURN_IF_ERROR(Norm(f, "v.pre_ln", E, &used, &m->pre_ln, false));
  // LayerNorms, biases, up, GELU, down (older files' swapped FFN names read back).
  VitBlockLayout layout;
  layout.swapped_ffn = true;
  ZF_RETURN_IF_ERROR(LoadVitBlocks(f, hp, layout, &used, &m->blocks));
  ZF_RETURN_IF_ERROR(Norm(f, "v.post_ln", E, &used, &m->post_ln, false));
  if (hp.spec->vit == Vit::kLfm2) {
    ZF_RETURN_IF_ERROR(LoadLfm2Projector(f, &hp, m.get(), &used));
    ZF_RETURN_IF_ERROR(CheckAllUsed(f, hp, used));
    m->file_ = std::move(file);
    *out = std::move(m);
    return Status::Ok();
  }
  const ProjectorSpec& spec = *hp.spec;
  if (spec.soft_norm) ZF_RETURN_IF_ERROR(Floats(f, "mm.soft_emb_norm.weight", {E}, &used, &m->soft_norm));
  // The token's width entering the projection: a patch's, or a shuffled block's.
  const int64_t in = spec.merge == Merge::kPixelShuffle ? E * hp.n_merge * hp.n_merge : E;
  const std::string pname = std::string(spec.proj) + ".weight";
  const gguf::TensorInfo* pw = f.FindTensor(pname);
  if (pw == nullptr) return FormatError("mmproj: tensor '" + pname + "' is missing");
  const int64_t in_dim = spec.proj_transposed ? 1 : 0;
  if (pw->n_dims != 2 || pw->ne[in_dim] != in)
    return FormatError("mmproj: tensor '" + pname + "' has shape " + gguf::ShapeString(pw->ne, pw->n_dims) + ", " +
                       (spec.proj_transposed ? "[width, " + std::to_string(in) + "]" : "[" + std::to_string(in) + ", width]") +
                       " expected");
  hp.proj_width = int32_t(pw->ne[1 - in_dim]);
  if (!spec.proj_transposed) {
    ZF_RETURN_IF_ERROR(Matrix(f, spec.proj, in, hp.proj_width, &used, &m->proj, false));
  } else {
    // mm.input_projection is [proj_width][E] in ggml order (E rows of proj_width); the reference
    // multiplies by its transpose, kept here as proj_width rows of E in the same type.
    if (pw->type != GgmlType::F32 && pw->type != GgmlType::F16)
      return FormatError("mmproj: tensor '" + pname + "' is " + std::string(TypeName(pw->type)) + ", F32 or F16 expected");
    used.insert(pname);
    const size_t es = pw->type == GgmlType::F32 ? 4 : 2;
    const int64_t W = pw->ne[0];
    m->proj.type = pw->type;
    m->proj.in = E;
    m->proj.out = W;
    m->proj.stride = size_t(E) * es;
    m->proj.owned.resize(size_t(W * E) * es);
    for (int64_t r = 0; r < E; ++r)
      for (int64_t c = 0; c < W; ++c)
        std::memcpy(m->proj.owned.data() + (size_t(c * E + r)) * es, pw->data + size_t(r * W + c) * es, es);
    m->proj.w = m->proj.owned.data();
  }
  ZF_RETURN_IF_ERROR(CheckAllUsed(f, hp, used));
  m->file_ = std::move(file);
  *out = std::move(m);
  return Status::Ok();
}

Status Mmproj::CheckLanguageModel(int64_t lm_n_embd_inp) const {
  if (lm_n_embd_inp != hp_.row_width()) {
    const std::string ds = hp_.n_deepstack > 0 ? " x (1 + " + std::to_string(hp_.n_deepstack) + " deepstack mergers)" : "";
    return InvalidArgument("mmproj: the projector's output width " + std::to_string(hp_.proj_width) + ds +
                           " is not the language model's input width " + std::to_string(lm_n_embd_inp) +
                           ": the projector belongs to another model");
  }
  return Status::Ok();
}

}  // namespace zf::vision

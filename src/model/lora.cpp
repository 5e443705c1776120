// LoRA adapter loading (validated against the model) and the low-rank product.
#include "model/lora.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>

#include "common/log.h"
#include "gguf/gguf.h"
#include "gguf/tensor_shape.h"
#include "model/model.h"
#include "quant/quant.h"

namespace zf::model {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Shape(const gguf::TensorInfo& t) { return gguf::ShapeString(t.ne, std::max<uint32_t>(t.n_dims, 1)); }

// The layer role each adaptable weight is bound to.
constexpr LayerRole kRoles[] = {LayerRole::kAttnQ, LayerRole::kAttnK, LayerRole::kAttnV, LayerRole::kAttnOut,
                                LayerRole::kFfnGate, LayerRole::kFfnUp, LayerRole::kFfnDown};
static_assert(sizeof(kRoles) / sizeof(kRoles[0]) == size_t(LoraTarget::kCount), "one role per target");

// The layer and weight a base tensor is bound as, or false.
bool Locate(const Model& model, std::string_view name, int32_t* layer, LoraTarget* target) {
  const Weights& w = model.weights();
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerDesc& ld = model.desc().layers[il];
    for (size_t r = 0; r < size_t(LoraTarget::kCount); ++r) {
      const Tensor* t = w.layers[il][kRoles[r]];
      if (t == nullptr || t->name != name) continue;
      const bool ffn = r >= size_t(LoraTarget::kGate);
      if (ffn ? ld.ffn.kind == FfnKind::kMoe : !ld.attention()) return false;  // Gemma 4's MLP beside experts, non-attention mixers
      *layer = int32_t(il);
      *target = LoraTarget(r);
      return true;
    }
  }
  return false;
}

// The tensor as F32 rows (F32, F16, BF16, Q8_0).
Status ReadF32(const gguf::TensorInfo& t, std::vector<float>* out) {
  if (t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16 && t.type != GgmlType::Q8_0) {
    return Unsupported("LoRA tensor '" + std::string(t.name) + "' has type " + TypeName(t.type) +
                       "; adapters of type F32, F16, BF16 or Q8_0 are read");
  }
  const int64_t block = GetTypeTraits(t.type)->block_size;
  if (t.ne[0] % block != 0) {
    return Unsupported("LoRA tensor '" + std::string(t.name) + "': a row of " + std::to_string(t.ne[0]) +
                       " is not a whole number of " + TypeName(t.type) + " blocks");
  }
  const size_t row = RowSize(t.type, t.ne[0]);
  out->resize(size_t(t.ne[0]) * size_t(t.ne[1]));
  for (int64_t r = 0; r < t.ne[1]; ++r) {
    quant::DequantizeRow(t.type, t.data + size_t(r) * row, out->data() + size_t(r) * size_t(t.ne[0]), t.ne[0]);
  }
  return Status::Ok();
}

// The engine's F32 dot product (SIMD, picked once for this CPU): a pure function of its rows,
// so a row's result is the same wherever it runs (chunks, batched steps).
float Dot(const float* a, const float* x, int32_t n) {
  static const quant::VecDotFn dot = quant::GetVecDotFn(GgmlType::F32);
  return dot(n, a, x);
}

std::atomic<uint64_t> g_next_id{1};

}  // namespace

Status LoraAdapter::Load(const Model& model, const std::string& path, std::unique_ptr<LoraAdapter>* out) {
  out->reset();
  if (model.vocab_only()) return InvalidArgument("a LoRA adapter needs a model loaded with its weights, not vocab-only");
  std::unique_ptr<gguf::GgufFile> f;
  ZF_RETURN_IF_ERROR(gguf::GgufFile::Open(path, gguf::OpenOptions{}, &f));
  const auto str = [&](const char* key) {
    std::string_view v;
    return f->GetString(key, &v).ok() ? std::string(v) : std::string();
  };
  const std::string type = str("general.type");
  if (type != "adapter") {
    return FormatError(path + ": general.type is '" + type + "', not 'adapter': not a LoRA adapter file");
  }
  const std::string adapter_type = str("adapter.type");
  if (adapter_type != "lora") {
    return FormatError(path + ": adapter.type is '" + adapter_type + "', not 'lora'");
  }
  std::string_view model_arch;
  (void)model.file().GetString("general.architecture", &model_arch);
  const std::string arch = str("general.architecture");
  if (arch != model_arch) {
    return InvalidArgument(path + ": the adapter is for architecture '" + arch + "', the model is '" +
                           std::string(model_arch) + "'");
  }
  std::unique_ptr<LoraAdapter> a(new LoraAdapter());
  a->model_ = &model;
  if (f->Find("adapter.lora.alpha") != nullptr) ZF_RETURN_IF_ERROR(f->GetF32("adapter.lora.alpha", &a->alpha_));
  a->layers_.resize(size_t(model.desc().n_layer));

  // Pair the halves by base name.
  struct Pair {
    const gguf::TensorInfo* a = nullptr;
    const gguf::TensorInfo* b = nullptr;
  };
  std::map<std::string, Pair> pairs;
  size_t skipped = 0;
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (EndsWith(t.name, ".lora_a")) {
      pairs[std::string(t.name.substr(0, t.name.size() - 7))].a = &t;
    } else if (EndsWith(t.name, ".lora_b")) {
      pairs[std::string(t.name.substr(0, t.name.size() - 7))].b = &t;
    } else if (EndsWith(t.name, "_norm.weight")) {
      ++skipped;  // the reference ignores adapted norms too
    } else {
      return FormatError(path + ": tensor '" + std::string(t.name) + "' is neither a .lora_a nor a .lora_b");
    }
  }
  if (pairs.empty()) return FormatError(path + ": the adapter has no .lora_a/.lora_b tensors");
  if (skipped > 0) ZF_LOGW("%s: %zu norm tensor(s) of the adapter are ignored", path.c_str(), skipped);
  for (const auto& kv : pairs) {
    const std::string& name = kv.first;
    const Pair& p = kv.second;
    if (p.a == nullptr || p.b == nullptr) {
      return FormatError(path + ": '" + name + "' has " + (p.a ? ".lora_a" : ".lora_b") + " but no " +
                         (p.a ? ".lora_b" : ".lora_a"));
    }
    const gguf::TensorInfo* base = model.file().FindTensor(name);
    if (base == nullptr) {
      return InvalidArgument(path + ": the model has no tensor '" + name + "' (an adapter for another model?)");
    }
    int32_t il = 0;
    LoraTarget target{};
    if (!Locate(model, name, &il, &target)) {
      return Unsupported(path + ": adapting '" + name +
                         "' is not supported (adaptable: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, "
                         "ffn_down of attention layers with a dense FFN, each stored on its own)");
    }
    // ne order: lora_a [n_in, rank], lora_b [rank, n_out], base [n_in, n_out].
    const bool two_d = p.a->ne[2] == 1 && p.a->ne[3] == 1 && p.b->ne[2] == 1 && p.b->ne[3] == 1;
    if (!two_d || p.a->ne[0] != base->ne[0] || p.b->ne[1] != base->ne[1] || p.a->ne[1] != p.b->ne[0] ||
        p.a->ne[1] < 1) {
      return InvalidArgument(path + ": '" + name + "' is " + Shape(*base) + " in the model, but lora_a is " +
                             Shape(*p.a) + " and lora_b " + Shape(*p.b) + " (expected [" +
                             std::to_string(base->ne[0]) + ", rank] and [rank, " + std::to_string(base->ne[1]) + "])");
    }
    auto w = std::make_unique<LoraWeight>();
    w->n_in = int32_t(p.a->ne[0]);
    w->rank = int32_t(p.a->ne[1]);
    w->n_out = int32_t(p.b->ne[1]);
    ZF_RETURN_IF_ERROR(ReadF32(*p.a, &w->a));
    std::vector<float> b;  // [n_out][rank]
    ZF_RETURN_IF_ERROR(ReadF32(*p.b, &b));
    w->bt.resize(b.size());  // column k of B as a row: B t is then rank contiguous axpys
    for (int32_t o = 0; o < w->n_out; ++o) {
      for (int32_t k = 0; k < w->rank; ++k) w->bt[size_t(k) * size_t(w->n_out) + size_t(o)] = b[size_t(o) * size_t(w->rank) + size_t(k)];
    }
    a->rank_ = std::max(a->rank_, w->rank);
    a->layers_[size_t(il)][size_t(target)] = std::move(w);
    ++a->n_weights_;
  }
  a->id_ = g_next_id.fetch_add(1, std::memory_order_relaxed);
  *out = std::move(a);
  return Status::Ok();
}

LoraPlan::LoraPlan(const std::vector<const LoraAdapter*>& adapters, const std::vector<float>& scales, int32_t n_layer)
    : layers_(size_t(n_layer)) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  };
  for (size_t i = 0; i < adapters.size(); ++i) {
    if (scales[i] == 0.0f) continue;
    uint32_t bits;
    std::memcpy(&bits, &scales[i], sizeof bits);
    mix(adapters[i]->id());
    mix(bits);
    for (int32_t il = 0; il < n_layer; ++il) {
      for (size_t t = 0; t < size_t(LoraTarget::kCount); ++t) {
        if (const LoraWeight* w = adapters[i]->Find(il, LoraTarget(t))) {
          layers_[size_t(il)][t].push_back(Term{w, adapters[i]->EffectiveScale(*w, scales[i])});
          empty_ = false;
        }
      }
    }
  }
  key_ = empty_ ? 0 : h;
}

void ApplyLora(const std::vector<LoraPlan::Term>& terms, const float* x, int32_t n, float* y) {
  // Per thread: A x [rank] and B (A x) [n_out], grown once.
  thread_local std::vector<float> t, z;
  for (const LoraPlan::Term& term : terms) {
    const LoraWeight& w = *term.w;
    if (t.size() < size_t(w.rank)) t.resize(size_t(w.rank));
    if (z.size() < size_t(w.n_out)) z.resize(size_t(w.n_out));
    for (int32_t r = 0; r < n; ++r) {
      const float* xr = x + int64_t{r} * w.n_in;
      for (int32_t k = 0; k < w.rank; ++k) t[size_t(k)] = Dot(w.a.data() + int64_t{k} * w.n_in, xr, w.n_in);
      std::fill(z.begin(), z.begin() + w.n_out, 0.0f);
      for (int32_t k = 0; k < w.rank; ++k) quant::AxpyF32(w.n_out, t[size_t(k)], w.bt.data() + int64_t{k} * w.n_out, z.data());
      quant::AxpyF32(w.n_out, term.scale, z.data(), y + int64_t{r} * w.n_out);
    }
  }
}

void ApplyLoraRows(const std::vector<LoraPlan::Term>& terms, const float* x, int32_t n_in, float* y, int32_t n_out,
                   const int32_t* rows, int32_t n_rows) {
  // Per thread: A x for every row [n_rows][rank] and B (A x) [n_rows][n_out], grown once.
  thread_local std::vector<float> t, z;
  for (const LoraPlan::Term& term : terms) {
    const LoraWeight& w = *term.w;
    if (t.size() < size_t(n_rows) * size_t(w.rank)) t.resize(size_t(n_rows) * size_t(w.rank));
    if (z.size() < size_t(n_rows) * size_t(n_out)) z.resize(size_t(n_rows) * size_t(n_out));
    for (int32_t k = 0; k < w.rank; ++k) {  // A's row k against every row of x
      const float* a = w.a.data() + int64_t{k} * n_in;
      for (int32_t r = 0; r < n_rows; ++r) t[size_t(r) * size_t(w.rank) + size_t(k)] = Dot(a, x + int64_t{rows[r]} * n_in, n_in);
    }
    std::fill(z.begin(), z.begin() + int64_t{n_rows} * n_out, 0.0f);
    for (int32_t k = 0; k < w.rank; ++k) {  // B's column k into every row, in the order ApplyLora adds them
      const float* b = w.bt.data() + int64_t{k} * n_out;
      for (int32_t r = 0; r < n_rows; ++r) quant::AxpyF32(n_out, t[size_t(r) * size_t(w.rank) + size_t(k)], b, z.data() + int64_t{r} * n_out);
    }
    for (int32_t r = 0; r < n_rows; ++r) quant::AxpyF32(n_out, term.scale, z.data() + int64_t{r} * n_out, y + int64_t{rows[r]} * n_out);
  }
}

}  // namespace zf::model

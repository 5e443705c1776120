// Model loading: map + validate the file, build the description, the tokenizer, bind the weights
// through the role table, and hand them to the engine.
#include "model/model.h"

#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <fstream>

#include "common/log.h"
#include "model/forward_pool.h"
#include "model/registry.h"

namespace zf::model {
namespace {

Status Progress(const LoadOptions& o, int32_t permille) {
  if (o.progress != nullptr && o.progress(o.progress_user_data, permille) != 0) {
    return Status(Code::kCancelled, "model load aborted by the progress callback");
  }
  return Status::Ok();
}

// The most common weight type among the layer matrices, by element count ("Q4_K").
std::string DominantQuant(const gguf::GgufFile& f) {
  std::map<std::string, int64_t> count;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.n_dims >= 2 && t.name.substr(0, 4) == "blk.") count[TypeName(t.type)] += t.n_elements();
  }
  std::string best = "F32";
  int64_t best_n = -1;
  for (const auto& kv : count) {
    if (kv.second > best_n) best = kv.first, best_n = kv.second;
  }
  return best;
}

// Name of general.file_type (the quantization "mix" a file was made with, e.g. Q4_K_M), as the
// reference's llama_ftype names it; "" when absent or unknown.
std::string FileTypeName(const gguf::GgufFile& f) {
  uint32_t ft = 0;
  if (!f.GetU32("general.file_type", &ft).ok()) return std::string();
  static const std::map<uint32_t, const char*> kNames = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},    {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"}, {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},   {25, "IQ4_NL"}, {30, "IQ4_XS"}, {32, "BF16"}, {38, "MXFP4_MOE"}};
  auto it = kNames.find(ft);
  return it == kNames.end() ? std::string() : it->second;
}

}  // namespace

int32_t PhysicalCores() {
  // Count distinct (physical id, core id) pairs; fall back to hardware_concurrency.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "physical id") phys = val;
    if (key == "core id") cores.insert({phys, val});
  }
  if (!cores.empty()) return int32_t(cores.size());
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int32_t(n);
}

Model::~Model() = default;

// Packing dropped the big matrices' file pages, but the page cache may hold the file in large
// folios (2 MiB here), and one read of a norm vector stored between two matrices maps its whole
// folio back: measured +54 MiB resident on Gemma 3 after one prompt. So the few small tensors
// read at run time move to one heap block, and the file's pages stay out of the process.
void Model::CopySmallTensors() {
  std::vector<const Tensor**> refs;
  for (const Tensor** t : weights_.VectorRefs()) {
    if ((*t)->nbytes < (size_t(1) << 20)) refs.push_back(t);
  }
  size_t total = 0;
  for (const Tensor** t : refs) total += ((*t)->nbytes + 63) / 64 * 64;
  small_bytes_.assign(total + 64, 0);
  small_tensors_.reserve(refs.size());  // stable addresses: Weights points into it
  uint8_t* dst = small_bytes_.data() + (64 - reinterpret_cast<uintptr_t>(small_bytes_.data()) % 64) % 64;
  for (const Tensor** t : refs) {
    Tensor copy = **t;
    std::memcpy(dst, copy.data, copy.nbytes);
    copy.data = dst;
    dst += (copy.nbytes + 63) / 64 * 64;
    small_tensors_.push_back(copy);
    *t = &small_tensors_.back();
  }
}

namespace {

// A vocabulary-only load needs the tokenizer, not the family: any architecture string works.
Status VocabOnlyDesc(const gguf::GgufFile& f, ModelDesc* d) {
  std::string_view arch;
  Status s = f.GetString("general.architecture", &arch);
  if (s.code() == Code::kNotFound) return FormatError("missing required metadata key 'general.architecture'");
  ZF_RETURN_IF_ERROR(s);
  d->arch = std::string(arch);
  const gguf::Value* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens != nullptr && tokens->type == gguf::ValueType::ARRAY) d->n_vocab = int32_t(tokens->count);
  if (d->n_vocab <= 0) return FormatError("missing or empty 'tokenizer.ggml.tokens'");
  return Status::Ok();
}

}  // namespace

Status Model::Load(const std::string& path, const LoadOptions& o, std::unique_ptr<Model>* out) {
  out->reset();
  std::unique_ptr<Model> m(new Model());
  ZF_RETURN_IF_ERROR(Progress(o, 0));
  gguf::OpenOptions fo;
  fo.no_mmap = o.no_mmap;
  ZF_RETURN_IF_ERROR(gguf::GgufFile::Open(path, fo, &m->file_));
  ZF_RETURN_IF_ERROR(Progress(o, 200));
  const gguf::GgufFile& f = *m->file_;

  // A vocabulary-only load of a family without a builder still gives the tokenizer.
  std::string_view arch;
  const bool known = f.GetString("general.architecture", &arch).ok() && FindArch(arch) != nullptr;
  ZF_RETURN_IF_ERROR(o.vocab_only && !known ? VocabOnlyDesc(f, &m->desc_) : BuildDescription(f, &m->desc_));
  ZF_RETURN_IF_ERROR(tok::Tokenizer::Create(f, &m->tokenizer_));
  if (m->tokenizer_->n_vocab() != m->desc_.n_vocab) {
    return FormatError("tokenizer has " + std::to_string(m->tokenizer_->n_vocab()) + " tokens but the model expects " +
                       std::to_string(m->desc_.n_vocab));
  }
  ZF_RETURN_IF_ERROR(Progress(o, 600));
  std::string_view sv;
  if (f.GetString("general.name", &sv).ok()) m->name_ = std::string(sv);
  if (f.GetString("tokenizer.chat_template", &sv).ok()) m->chat_template_ = std::string(sv);
  m->quant_name_ = FileTypeName(f);
  if (m->quant_name_.empty()) m->quant_name_ = DominantQuant(f);
  m->vocab_only_ = o.vocab_only;
  m->n_threads_ = o.n_threads > 0 ? o.n_threads : PhysicalCores();

  if (o.vocab_only) {
    // No weights: only say whether the requested device could be used.
    if (o.device != Device::kCpu) {
      const std::string why = engine::CudaUnavailable();
      if (!why.empty() && o.device == Device::kCuda) return Status(Code::kBackend, "device=CUDA unavailable: " + why);
      if (!why.empty()) ZF_LOGI("vocabulary only; the CPU engine would be used: %s", why.c_str());
    }
  } else {
    ZF_RETURN_IF_ERROR(BindWeights(f, m->desc_, &m->weights_));
    uint64_t n = 0;
    for (const gguf::TensorInfo& t : f.tensors()) n += uint64_t(t.n_elements());
    m->desc_.n_params = n;
    engine::EngineRequest req;
    req.device = o.device;
    req.gpu_index = o.gpu_index;
    req.n_threads = m->n_threads_;
    req.tensors = m->weights_.bound;
    req.matrices = m->weights_.Matrices();
    req.ops = RequiredOps(m->desc_);
    ZF_RETURN_IF_ERROR(engine::CreateEngine(req, &m->engine_));
    if (m->engine_->device() == Device::kCpu && m->engine_->weight_bytes() > 0) {
      m->CopySmallTensors();
      m->engine_->ReleaseFilePages();
    }
    m->forwards_.reset(new ForwardPool(*m));
  }
  ZF_RETURN_IF_ERROR(Progress(o, 1000));
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace zf::model

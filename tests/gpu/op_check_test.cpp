// Op-by-op parity of a whole forward pass, GPU vs CPU: the model's Forward runs on a checking
// backend that gives each op the same inputs on both engines (the GPU's, copied to the host) and
// compares the outputs. Where whole-model parity fails (parity_test.cpp), this names the first
// op that disagrees, with its layer and shape, instead of a logit difference at the end.
// The CUDA engine's fusions (QK-norm into RoPE, residual add into RMSNorm) are off here: reading
// each op's inputs flushes what it deferred. Decode graphs are off too (ZF_CUDA_GRAPH=0).
//
// Models: every *.gguf in ZF_GPU_MODELS (the synthesized real shapes) and ZF_GPU_FAMILY_MODELS
// (scripts/gpu_families.sh writes the family files there) that the CUDA engine accepts.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "model/forward.h"
#include "model/model.h"

namespace zf {
namespace {

using engine::Backend;
using engine::Tensor;

// Relative error of an op's output: max |gpu - cpu| / max |cpu|.
float RelErr(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  float worst = 0.0f, scale = 1e-20f;
  for (size_t i = 0; i < cpu.size(); ++i) {
    scale = std::max(scale, std::fabs(cpu[i]));
    const float d = std::fabs(gpu[i] - cpu[i]);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst / scale;
}

// The same sequence's rows on both engines.
class CheckingKv final : public engine::KvCache {
 public:
  CheckingKv(std::unique_ptr<engine::KvCache> gpu, std::unique_ptr<engine::KvCache> cpu)
      : KvCache(engine::Device::kAuto, gpu->n_layer(), gpu->n_ctx(), gpu->k_width(), gpu->v_width(), gpu->k_type(),
                gpu->v_type()),
        gpu_(std::move(gpu)), cpu_(std::move(cpu)) {}
  std::unique_ptr<engine::KvCache> gpu_, cpu_;
};

class CheckingBackend final : public Backend {
 public:
  CheckingBackend(Backend& gpu, Backend& cpu, float tol) : gpu_(gpu), cpu_(cpu), tol_(tol) {}
  const char* name() const override { return "cuda"; }
  bool Supports(engine::Op op) const override { return gpu_.Supports(op); }
  const std::vector<std::string>& failures() const { return failures_; }
  int32_t checked() const { return checked_; }
  float worst() const { return worst_; }

  using Backend::CreateKv;
  Status CreateKv(int32_t n_layer, int32_t n_ctx, int32_t k_width, int32_t v_width, engine::KvType k_type,
                  engine::KvType v_type, std::unique_ptr<engine::KvCache>* out) override {
    k_width_ = k_width, v_width_ = v_width;
    std::unique_ptr<engine::KvCache> c, g;
    ZF_RETURN_IF_ERROR(cpu_.CreateKv(n_layer, n_ctx, k_width, v_width, k_type, v_type, &c));
    ZF_RETURN_IF_ERROR(gpu_.CreateKv(n_layer, n_ctx, k_width, v_width, k_type, v_type, &g));
    out->reset(new CheckingKv(std::move(g), std::move(c)));
    return Status::Ok();
  }
  void GetRows(const Tensor& table, const int32_t* ids, int32_t n, float scale, float* out) override {
    std::vector<float> want(size_t(n) * size_t(table.ne[0]));
    cpu_.GetRows(table, ids, n, scale, want.data());
    gpu_.GetRows(table, ids, n, scale, out);
    Check("get_rows " + std::string(table.name), out, want);
  }
  void MatMul(const Tensor& w, const float* x, int32_t n_tok, float* y) override {
    std::vector<float> hx = Down(x, size_t(n_tok) * size_t(w.ne[0])), want(size_t(n_tok) * size_t(w.ne[1]));
    cpu_.MatMul(w, hx.data(), n_tok, want.data());
    gpu_.MatMul(w, x, n_tok, y);
    Check("matmul " + std::string(w.name) + " type " + std::to_string(int(w.type)) + " n_tok " + std::to_string(n_tok),
          y, want);
  }
  void RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) override {
    std::vector<float> h = Down(x, size_t(rows) * size_t(n));
    cpu_.RmsNorm(h.data(), w, rows, n, eps, h.data());
    gpu_.RmsNorm(x, w, rows, n, eps, y);
    Check("rms_norm rows " + std::to_string(rows) + " n " + std::to_string(n), y, h);
  }
  void AddBias(float* x, const float* b, int32_t rows, int32_t n) override {
    std::vector<float> h = Down(x, size_t(rows) * size_t(n));
    cpu_.AddBias(h.data(), b, rows, n);
    gpu_.AddBias(x, b, rows, n);
    Check("add_bias", x, h);
  }
  void Add(float* x, const float* y, int64_t n) override {
    std::vector<float> h = Down(x, size_t(n)), hy = Down(y, size_t(n));
    cpu_.Add(h.data(), hy.data(), n);
    gpu_.Add(x, y, n);
    Check("add", x, h);
  }
  void Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
            const engine::RopeParams& rp) override {
    std::vector<float> h = Down(x, size_t(n_tok) * size_t(n_heads) * size_t(head_dim));
    engine::RopeParams cp = rp;
    cp.freq_factors = rp.freq_factors;  // host pointers: the model's tensors
    cpu_.Rope(h.data(), n_tok, n_heads, head_dim, pos, cp);
    gpu_.Rope(x, n_tok, n_heads, head_dim, pos, rp);
    Check("rope heads " + std::to_string(n_heads) + " head_dim " + std::to_string(head_dim) + " n_rot " +
              std::to_string(rp.n_rot) + " pos0 " + std::to_string(pos[0]),
          x, h);
  }
  void GatedActivation(engine::Activation act, float* gate, const float* up, int64_t n) override {
    std::vector<float> h = Down(gate, size_t(n)), hu = Down(up, size_t(n));
    cpu_.GatedActivation(act, h.data(), hu.data(), n);
    gpu_.GatedActivation(act, gate, up, n);
    Check("gated_act " + std::to_string(int(act)), gate, h);
  }
  void StoreKv(engine::KvCache& kv, int32_t layer, const float* k, const float* v, int32_t n_tok,
               int32_t pos0) override {
    auto& both = static_cast<CheckingKv&>(kv);
    std::vector<float> hk = Down(k, size_t(n_tok) * size_t(k_width_)), hv = Down(v, size_t(n_tok) * size_t(v_width_));
    cpu_.StoreKv(*both.cpu_, layer, hk.data(), hv.data(), n_tok, pos0);
    gpu_.StoreKv(*both.gpu_, layer, k, v, n_tok, pos0);
    layer_ = layer;
  }
  void Attention(const engine::KvCache& kv, int32_t layer, const float* q, int32_t n_tok, int32_t pos0,
                 const engine::AttentionParams& ap, float* out) override {
    const auto& both = static_cast<const CheckingKv&>(kv);
    std::vector<float> hq = Down(q, size_t(n_tok) * size_t(ap.n_head) * size_t(ap.head_dim_k));
    std::vector<float> want(size_t(n_tok) * size_t(ap.n_head) * size_t(ap.head_dim_v));
    cpu_.Attention(*both.cpu_, layer, hq.data(), n_tok, pos0, ap, want.data());
    gpu_.Attention(*both.gpu_, layer, q, n_tok, pos0, ap, out);
    layer_ = layer;
    Check("attention heads " + std::to_string(ap.n_head) + "/" + std::to_string(ap.n_head_kv) + " hd " +
              std::to_string(ap.head_dim_k) + "/" + std::to_string(ap.head_dim_v) + " window " +
              std::to_string(ap.window) + " softcap " + std::to_string(ap.softcap) + " scale " +
              std::to_string(ap.scale) + " n_tok " + std::to_string(n_tok) + " pos0 " + std::to_string(pos0),
          out, want);
  }
  void Softcap(float* x, int64_t n, float cap) override {
    std::vector<float> h = Down(x, size_t(n));
    cpu_.Softcap(h.data(), n, cap);
    gpu_.Softcap(x, n, cap);
    Check("softcap", x, h);
  }
  float* AllocActivations(size_t n) override { return gpu_.AllocActivations(n); }
  bool HostActivations() const override { return false; }
  void ReadActivations(const float* src, size_t n, float* host) override { gpu_.ReadActivations(src, n, host); }
  int32_t Argmax(const float* x, int32_t n) override { return gpu_.Argmax(x, n); }
  Status TakeError() override { return gpu_.TakeError(); }

 private:
  std::vector<float> Down(const float* d, size_t n) {
    std::vector<float> h(n);
    gpu_.ReadActivations(d, n, h.data());
    return h;
  }
  void Check(const std::string& op, const float* d, const std::vector<float>& want) {
    ++checked_;
    const float e = RelErr(Down(d, want.size()), want);
    worst_ = std::max(worst_, e);
    if (e > tol_ || std::isnan(e)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (layer ~%d): rel err %.3g", layer_, e);
      failures_.push_back(op + buf);
    }
  }

  Backend& gpu_;
  Backend& cpu_;
  const float tol_;
  int32_t k_width_ = 0, v_width_ = 0, layer_ = -1, checked_ = 0;
  float worst_ = 0.0f;
  std::vector<std::string> failures_;
};

std::vector<std::string> ModelFiles() {
  std::vector<std::string> out;
  for (const char* var : {"ZF_GPU_MODELS", "ZF_GPU_FAMILY_MODELS"}) {
    const char* dir = std::getenv(var);
    if (dir == nullptr) continue;
    DIR* d = opendir(dir);
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".gguf") == 0 && n.rfind("vocab", 0) != 0) {
        out.push_back(std::string(dir) + "/" + n);
      }
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GpuOpCheck, EveryOpOfPrefillAndDecodeMatchesTheCpu) {
  setenv("ZF_CUDA_GRAPH", "0", 1);
  const std::vector<std::string> files = ModelFiles();
  if (files.empty()) GTEST_SKIP() << "no models: set ZF_GPU_MODELS / ZF_GPU_FAMILY_MODELS";
  int bad_models = 0;
  for (const std::string& path : files) {
    std::unique_ptr<model::Model> m;
    model::LoadOptions o;
    o.device = model::Device::kCuda;
    Status s = model::Model::Load(path, o, &m);
    if (!s.ok()) {
      std::printf("%-50s not on CUDA: %s\n", path.substr(path.rfind('/') + 1).c_str(), s.message().c_str());
      continue;
    }
    std::unique_ptr<Backend> gpu;
    ASSERT_TRUE(m->engine()->CreateBackend(1, &gpu).ok());
    std::unique_ptr<Backend> cpu = engine::CreateCpuBackend(4);
    CheckingBackend check(*gpu, *cpu, 3e-2f);
    const model::ModelDesc& d = m->desc();
    std::unique_ptr<engine::KvCache> kv;
    ASSERT_TRUE(check.CreateKv(d.NKvLayers(), 256, d.MaxKWidth(), d.MaxVWidth(), engine::KvType::kF16, &kv).ok());
    model::Forward fwd(*m, check, 64);
    const model::Forward::SeqState seq{kv.get(), nullptr, model::Forward::RopeFactors(*m, 256)};
    if (!fwd.status().ok()) {
      std::printf("%-50s forward refused: %s\n", path.c_str(), fwd.status().message().c_str());
      continue;
    }
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 20; ++i) prompt.push_back((i * 7919 + 11) % d.n_vocab);
    std::vector<float> logits(size_t(d.n_vocab));
    fwd.Run(seq, prompt.data(), 5, 0, logits.data(), nullptr);       // prefill on the GEMV (< 16 rows)
    fwd.Run(seq, prompt.data() + 2, 16, 5, logits.data(), nullptr);  // prefill on the tensor-core GEMM
    fwd.Run(seq, prompt.data() + 3, 1, 21, logits.data(), nullptr);  // decode
    EXPECT_TRUE(check.TakeError().ok());
    const std::string name = path.substr(path.rfind('/') + 1);
    std::printf("%-50s %d ops checked, worst relative error %.2g, %zu over tolerance\n", name.c_str(), check.checked(),
                check.worst(), check.failures().size());
    for (size_t i = 0; i < check.failures().size() && i < 12; ++i) std::printf("    %s\n", check.failures()[i].c_str());
    bad_models += check.failures().empty() ? 0 : 1;
  }
  EXPECT_EQ(bad_models, 0);
}

}  // namespace
}  // namespace zf

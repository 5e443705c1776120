// Every CUDA engine op against the CPU engine (and a double-precision reference for the
// matmuls) on random inputs. Weights are random GGUF blocks of each type with sane scales,
// written to a temporary GGUF file so both engines read them exactly as they read a model.
//
// Tolerances (normalized error = max |a - b| / max |b|):
//   get_rows, rms_norm, add, rope, gated act, softcap: 1e-5 (same float formulas);
//   GEMV vs reference: 1e-4 (F32 dequant-dot); GEMM vs reference: 4e-3 (F16 tensor cores);
//   attention vs CPU: 2e-3 (both round Q to F16 and read an F16 cache; sums differ in order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "engine/backend.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_weights.h"
#include "quant/quant.h"
#include "unit/gguf_builder.h"

namespace zf::engine {
namespace {

using gguf::testutil::GgufBuilder;
using gguf::testutil::TensorSpec;

constexpr int64_t kK = 512;   // input features (two K-quant super-blocks)
constexpr int64_t kM = 200;   // output features (not a multiple of the GEMM tile)
// Long rows, few of them: the GEMV splits each row across 2 and 4 warps (gemv.cu SplitFor).
constexpr int64_t kLongK[] = {4096, 8192};
const uint32_t kTypes[] = {0, 1, 2, 3, 6, 7, 8, 12, 13, 14};  // F32 F16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K

uint16_t Half(float f) { return quant::Fp32ToFp16(f); }

// Random bytes for m rows of k elements of `type`, with every F16 scale field set to a small
// positive value (random bytes there could be Inf/NaN).
std::vector<uint8_t> RandomBlocks(uint32_t type, int64_t k, int64_t m, std::mt19937& rng) {
  const size_t row = RowSize(GgmlType(type), k);
  std::vector<uint8_t> b(row * size_t(m));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), sc(0.002f, 0.02f);
  for (auto& x : b) x = uint8_t(byte(rng));
  const auto put = [&](size_t off, float v) {
    const uint16_t h = Half(v);
    std::memcpy(&b[off], &h, 2);
  };
  const GgmlTypeTraits* tr = GetTypeTraits(GgmlType(type));
  const size_t nblocks = b.size() / tr->type_size;
  for (size_t i = 0; i < nblocks; ++i) {
    const size_t o = i * tr->type_size;
    switch (type) {
      case 0: { const float v = u(rng); std::memcpy(&b[o], &v, 4); break; }
      case 1: put(o, u(rng)); break;
      case 2: case 6: case 8: put(o, sc(rng)); break;
      case 3: case 7: put(o, sc(rng)); put(o + 2, -sc(rng) * 8); break;
      case 12: case 13: put(o, sc(rng)); put(o + 2, sc(rng)); break;
      case 14: put(o + 208, sc(rng) * 0.1f); break;
    }
  }
  return b;
}

float NormErr(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - double(ref[i])));
    den = std::max(den, std::fabs(double(ref[i])));
  }
  return den == 0 ? float(num) : float(num / den);
}

class GpuOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::mt19937 rng(42);
    GgufBuilder b;
    b.Kv("general.architecture", gguf::testutil::val::Str("test"));
    for (uint32_t t : kTypes) {
      TensorSpec s;
      s.name = "w." + std::to_string(t);
      s.type = t;
      s.ne = {kK, kM};
      s.data = RandomBlocks(t, kK, kM, rng);
      b.Tensor(s);
      for (int64_t k : kLongK) {
        TensorSpec l;
        l.name = "long" + std::to_string(k) + "." + std::to_string(t);
        l.type = t;
        l.ne = {k, kM};
        l.data = RandomBlocks(t, k, kM, rng);
        b.Tensor(l);
      }
    }
    std::vector<float> vec(1024);
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    for (float& v : vec) v = u(rng);
    TensorSpec nw;
    nw.name = "vec";
    nw.type = 0;
    nw.ne = {1024};
    nw.data.resize(vec.size() * 4);
    std::memcpy(nw.data.data(), vec.data(), nw.data.size());
    b.Tensor(nw);
    const std::vector<uint8_t> bytes = b.Build();
    const std::string path = ::testing::TempDir() + "/gpu_ops_weights.gguf";
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    ASSERT_TRUE(gguf::GgufFile::Open(path, gguf::OpenOptions(), &file_).ok());
    std::shared_ptr<cuda::DeviceWeights> dw;
    std::vector<const gguf::TensorInfo*> tensors;
    for (const gguf::TensorInfo& t : file_->tensors()) tensors.push_back(&t);
    Status s = cuda::DeviceWeights::Upload(tensors, 0, &dw);
    ASSERT_TRUE(s.ok()) << s.message();
    weights_ = dw;
  }
  static void TearDownTestSuite() {
    weights_.reset();
    file_.reset();
  }

  void SetUp() override {
    cpu_ = CreateCpuBackend(2);
    ASSERT_TRUE(cuda::CreateCudaBackend(weights_, &gpu_).ok());
  }

  const Tensor& T(const std::string& name) {
    for (const Tensor& t : file_->tensors()) {
      if (t.name == name) return t;
    }
    ADD_FAILURE() << "no tensor " << name;
    return file_->tensors()[0];
  }
  const float* Vec() { return reinterpret_cast<const float*>(T("vec").data); }

  // A device buffer holding `host`.
  float* Up(const std::vector<float>& host) {
    float* d = gpu_->AllocActivations(host.size());
    const auto& a = weights_->library().api();
    EXPECT_EQ(a.memcpy_h2d(d, host.data(), host.size() * 4, nullptr), 0);
    EXPECT_EQ(a.stream_sync(nullptr), 0);
    return d;
  }
  std::vector<float> Down(const float* d, size_t n) {
    std::vector<float> h(n);
    gpu_->ReadActivations(d, n, h.data());
    Status s = gpu_->TakeError();
    EXPECT_TRUE(s.ok()) << s.message();
    return h;
  }
  std::vector<float> Random(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng_);
    return v;
  }

  static std::unique_ptr<gguf::GgufFile> file_;
  static std::shared_ptr<const cuda::DeviceWeights> weights_;
  std::unique_ptr<Backend> cpu_, gpu_;
  std::mt19937 rng_{7};
};
std::unique_ptr<gguf::GgufFile> GpuOps::file_;
std::shared_ptr<const cuda::DeviceWeights> GpuOps::weights_;

TEST_F(GpuOps, MatMulEveryTypeGemvAndGemmAgainstReference) {
  for (uint32_t type : kTypes) {
    for (const std::string& name : {std::string("w."), std::string("long4096."), std::string("long8192.")}) {
      const Tensor& w = T(name + std::to_string(type));
      const int64_t k = w.ne[0];
      std::vector<float> deq(size_t(k * kM));
      quant::DequantizeRow(w.type, w.data, deq.data(), k * kM);
      for (int32_t n_tok : {1, 3, 37}) {
        if (name != "w." && n_tok == 37) continue;  // the long rows are there for the GEMV's split
        const std::vector<float> x = Random(size_t(n_tok * k));
        std::vector<float> ref(size_t(n_tok * kM));
        for (int32_t t = 0; t < n_tok; ++t) {
          for (int64_t r = 0; r < kM; ++r) {
            double s = 0;
            for (int64_t i = 0; i < k; ++i) s += double(deq[size_t(r * k + i)]) * x[size_t(t * k + i)];
            ref[size_t(t * kM + r)] = float(s);
          }
        }
        float* dy = gpu_->AllocActivations(ref.size());
        gpu_->MatMul(w, Up(x), n_tok, dy);
        const float tol = n_tok >= 16 ? 4e-3f : 1e-4f;
        EXPECT_LE(NormErr(Down(dy, ref.size()), ref), tol) << TypeName(w.type) << " k=" << k << " n_tok=" << n_tok;
        std::vector<float> cy(ref.size());
        cpu_->MatMul(w, x.data(), n_tok, cy.data());
        EXPECT_LE(NormErr(cy, ref), 3e-2f) << "CPU sanity, " << TypeName(w.type) << " k=" << k;
      }
    }
  }
}

TEST_F(GpuOps, GetRowsEveryType) {
  const std::vector<int32_t> ids = {0, 7, 199, 7};
  for (uint32_t type : kTypes) {
    const Tensor& w = T("w." + std::to_string(type));
    std::vector<float> ref(ids.size() * size_t(kK));
    cpu_->GetRows(w, ids.data(), int32_t(ids.size()), 0.5f, ref.data());
    float* d = gpu_->AllocActivations(ref.size());
    gpu_->GetRows(w, ids.data(), int32_t(ids.size()), 0.5f, d);
    EXPECT_LE(NormErr(Down(d, ref.size()), ref), 1e-6f) << TypeName(w.type);
  }
}

TEST_F(GpuOps, NormsAddActivationsSoftcap) {
  const int32_t rows = 5, n = 1024;
  std::vector<float> x = Random(size_t(rows * n), -4, 4), h = Random(size_t(rows * n), -4, 4);
  // RMSNorm into another buffer, and the fused add + RMSNorm (Add then RmsNorm of the same rows).
  std::vector<float> cy(x.size());
  cpu_->RmsNorm(x.data(), Vec(), rows, n, 1e-6f, cy.data());
  float* dx = Up(x);
  float* dy = gpu_->AllocActivations(x.size());
  gpu_->RmsNorm(dx, Vec(), rows, n, 1e-6f, dy);
  EXPECT_LE(NormErr(Down(dy, x.size()), cy), 1e-5f);
  std::vector<float> cx = x;
  cpu_->Add(cx.data(), h.data(), int64_t(x.size()));
  cpu_->RmsNorm(cx.data(), Vec(), rows, n, 1e-6f, cy.data());
  gpu_->Add(dx, Up(h), int64_t(x.size()));
  gpu_->RmsNorm(dx, Vec(), rows, n, 1e-6f, dy);
  EXPECT_LE(NormErr(Down(dy, x.size()), cy), 1e-5f) << "add+rms_norm";
  EXPECT_LE(NormErr(Down(dx, x.size()), cx), 1e-6f) << "residual written back";
  for (auto act : {Activation::kSilu, Activation::kGeluTanh}) {
    std::vector<float> g = Random(4096, -12, 12), u = Random(4096);
    float* dg = Up(g);
    cpu_->GatedActivation(act, g.data(), u.data(), 4096);
    gpu_->GatedActivation(act, dg, Up(u), 4096);
    EXPECT_LE(NormErr(Down(dg, 4096), g), 1e-5f) << "activation " << int(act);
  }
  std::vector<float> s = Random(4096, -100, 100);
  float* ds = Up(s);
  cpu_->Softcap(s.data(), 4096, 30.0f);
  gpu_->Softcap(ds, 4096, 30.0f);
  EXPECT_LE(NormErr(Down(ds, 4096), s), 1e-5f);
  cpu_->AddBias(s.data(), Vec(), 4, 1024);
  gpu_->AddBias(ds, Vec(), 4, 1024);
  EXPECT_LE(NormErr(Down(ds, 4096), s), 1e-6f);
}

TEST_F(GpuOps, RopeBothStylesAndFusedQkNorm) {
  const int32_t n_tok = 3, heads = 4, hd = 128;
  const std::vector<int32_t> pos = {100, 101, 102};
  for (auto style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
    for (bool qk_norm : {false, true}) {
      RopeParams rp;
      rp.n_rot = hd;
      rp.style = style;
      rp.base = 10000.0f;
      std::vector<float> x = Random(size_t(n_tok * heads * hd));
      float* dx = Up(x);
      if (qk_norm) {
        cpu_->RmsNorm(x.data(), Vec(), n_tok * heads, hd, 1e-6f, x.data());
        gpu_->RmsNorm(dx, Vec(), n_tok * heads, hd, 1e-6f, dx);  // deferred, fused into Rope
      }
      cpu_->Rope(x.data(), n_tok, heads, hd, pos.data(), rp);
      gpu_->Rope(dx, n_tok, heads, hd, pos.data(), rp);
      EXPECT_LE(NormErr(Down(dx, x.size()), x), 1e-5f) << "style " << int(style) << " qk_norm " << qk_norm;
    }
  }
}

TEST_F(GpuOps, AttentionPrefillAndSplitDecodeWithWindowAndSoftcap) {
  const int32_t n_head = 4, n_kv = 2, hd = 64, n_ctx = 700, n_pre = 300;
  std::unique_ptr<engine::KvCache> ckv, gkv;
  ASSERT_TRUE(cpu_->CreateKv(1, n_ctx, n_kv * hd, n_kv * hd, KvType::kF16, &ckv).ok());
  ASSERT_TRUE(gpu_->CreateKv(1, n_ctx, n_kv * hd, n_kv * hd, KvType::kF16, &gkv).ok());
  const std::vector<float> k = Random(size_t(n_pre + 1) * n_kv * hd), v = Random(size_t(n_pre + 1) * n_kv * hd);
  cpu_->StoreKv(*ckv, 0, k.data(), v.data(), n_pre, 0);
  gpu_->StoreKv(*gkv, 0, Up(k), Up(v), n_pre, 0);
  const std::vector<float> kd(k.end() - n_kv * hd, k.end()), vd(v.end() - n_kv * hd, v.end());
  cpu_->StoreKv(*ckv, 0, kd.data(), vd.data(), 1, n_pre);
  gpu_->StoreKv(*gkv, 0, Up(kd), Up(vd), 1, n_pre);
  for (int32_t window : {0, 100}) {
    for (float softcap : {0.0f, 20.0f}) {
      AttentionParams ap;
      ap.n_head = n_head;
      ap.n_head_kv = n_kv;
      ap.head_dim_k = ap.head_dim_v = hd;
      ap.scale = 0.125f;
      ap.softcap = softcap;
      ap.window = window;
      const std::vector<float> q = Random(size_t(n_pre) * n_head * hd, -3, 3);
      std::vector<float> co(q.size());
      cpu_->Attention(*ckv, 0, q.data(), n_pre, 0, ap, co.data());
      float* dout = gpu_->AllocActivations(q.size());
      gpu_->Attention(*gkv, 0, Up(q), n_pre, 0, ap, dout);
      EXPECT_LE(NormErr(Down(dout, q.size()), co), 2e-3f) << "prefill window " << window << " softcap " << softcap;
      const std::vector<float> q1(q.begin(), q.begin() + n_head * hd);
      std::vector<float> c1(q1.size());
      cpu_->Attention(*ckv, 0, q1.data(), 1, n_pre, ap, c1.data());  // decode at position 300: 2 splits
      float* d1 = gpu_->AllocActivations(q1.size());
      gpu_->Attention(*gkv, 0, Up(q1), 1, n_pre, ap, d1);
      EXPECT_LE(NormErr(Down(d1, q1.size()), c1), 2e-3f) << "decode window " << window << " softcap " << softcap;
    }
  }
}

TEST_F(GpuOps, ArgmaxOnDevice) {
  std::vector<float> x = Random(262144);
  x[123457] = 5.0f;
  x[200000] = 5.0f;  // ties go to the lower index
  EXPECT_EQ(gpu_->Argmax(Up(x), int32_t(x.size())), 123457);
  EXPECT_EQ(cpu_->Argmax(x.data(), int32_t(x.size())), 123457);
}

}  // namespace
}  // namespace zf::engine

// CpuBackend's decode products on packed weights (engine/cpu/cpu_backend.cpp, DecodePacked):
// one pool run for several matrices of different types sharing an input (each activation type
// quantized once), gate/up with the activation applied per chunk, and the chunked split where a
// thread done with its share takes chunks from the back of another's. Checked against one
// scalar-reference VecDot per row, with 1-3 threads and matrices large enough for several
// chunks per thread.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/random_data.h"
#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/packed_weights.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

// A weight matrix of random quant rows (testing::RandomQuantRows), its data owned here.
struct Matrix {
  std::vector<uint8_t> bytes;
  gguf::TensorInfo t;
};

std::unique_ptr<Matrix> RandomMatrix(GgmlType type, int64_t k, int64_t rows, uint32_t seed) {
  auto m = std::make_unique<Matrix>();
  m->bytes = testing::RandomQuantRows(type, rows, k, 0.01f, seed);
  m->t.name = "w";
  m->t.type = type;
  m->t.n_dims = 2;
  m->t.ne[0] = k;
  m->t.ne[1] = rows;
  m->t.data = m->bytes.data();
  m->t.nbytes = m->bytes.size();
  return m;
}

// y[r] = VecDot(row r, x quantized to the type's activation format), scalar reference.
std::vector<float> Reference(const Matrix& m, const std::vector<float>& x) {
  const GgmlType at = quant::VecDotType(m.t.type);
  std::vector<uint8_t> a(RowSize(at, m.t.ne[0]));
  quant::QuantizeActivations(at, x.data(), a.data(), m.t.ne[0]);
  std::vector<float> y(size_t(m.t.ne[1]));
  const size_t row = RowSize(m.t.type, m.t.ne[0]);
  for (int64_t r = 0; r < m.t.ne[1]; ++r) {
    y[size_t(r)] = quant::ref::VecDot(m.t.type, m.t.ne[0], m.bytes.data() + row * size_t(r), a.data());
  }
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, int64_t k, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_NEAR(got[r], want[r], 1e-4f * (std::fabs(want[r]) + 0.01f * float(k))) << what << " row " << r;
  }
}

TEST(DecodePacked, MixedTypesGatedAndStolenChunksMatchReference) {
  constexpr int64_t kIn = 512, kFf = 1024;
  // Q/K/V of three activation formats (Q8_K, Q8_0, Q8_1) in one run, the first large enough
  // for several 128 KiB chunks per thread; gate/up with a row tail; down in Q6_K.
  auto wq = RandomMatrix(GgmlType::Q4_K, kIn, 1200, 1);
  auto wk = RandomMatrix(GgmlType::Q8_0, kIn, 2050, 2);
  auto wv = RandomMatrix(GgmlType::Q4_1, kIn, 33, 3);
  auto gate = RandomMatrix(GgmlType::Q5_0, kIn, kFf - 8, 4);
  auto up = RandomMatrix(GgmlType::Q5_0, kIn, kFf - 8, 5);
  auto down = RandomMatrix(GgmlType::Q6_K, kFf, 700, 6);
  const std::vector<float> x = testing::RandomFloats(size_t(kIn), 7), h = testing::RandomFloats(size_t(kFf), 8);
  const std::vector<float> yq = Reference(*wq, x), yk = Reference(*wk, x), yv = Reference(*wv, x);
  std::vector<float> yg = Reference(*gate, x);
  act::SiluMulRef(yg.data(), Reference(*up, x).data(), int64_t(yg.size()));
  const std::vector<float> yd = Reference(*down, h);

  const std::vector<const gguf::TensorInfo*> matrices = {&wq->t, &wk->t, &wv->t, &gate->t, &up->t, &down->t};
  std::unique_ptr<PackedWeights> packed;
  ASSERT_TRUE(PackedWeights::Build(matrices, 2, &packed).ok());  // drops the file rows' pages: references first
  if (!quant::PackedGemvAvailable(GgmlType::Q8_0)) {
    GTEST_SKIP() << "no packed decode kernels on this CPU";
  }
  ASSERT_NE(packed, nullptr);
  ASSERT_NE(packed->Find(wq->t), nullptr);

  for (int32_t threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    CpuBackend be(threads, packed.get());
    std::vector<float> q(yq.size(), NAN), k(yk.size(), NAN), v(yv.size(), NAN);
    const Tensor* w3[3] = {&wq->t, &wk->t, &wv->t};
    float* y3[3] = {q.data(), k.data(), v.data()};
    be.MatMulShared(w3, y3, 3, x.data(), 1);
    ExpectNear(q, yq, kIn, "q");
    ExpectNear(k, yk, kIn, "k");
    ExpectNear(v, yv, kIn, "v");

    std::vector<float> g(yg.size(), NAN), u(yg.size(), NAN);
    be.MatMulGated(Activation::kSilu, gate->t, up->t, x.data(), 1, g.data(), u.data());
    for (size_t r = 0; r < yg.size(); ++r) {
      ASSERT_NEAR(g[r], yg[r], 1e-4f * (std::fabs(yg[r]) + 0.01f * float(kIn)) * (1.0f + std::fabs(u[r]))) << "row " << r;
    }

    std::vector<float> d(yd.size(), NAN);
    be.MatMul(down->t, h.data(), 1, d.data());
    ExpectNear(d, yd, kFf, "down");
  }
}

}  // namespace
}  // namespace zf::engine

// The kernels' GGUF block decoding (DequantGroup in kernels/quant.cuh), run on the host, against
// the CPU engine's DequantizeRow for every type on random blocks: catches layout and indexing
// mistakes in the GPU kernels without a GPU. Compiled by nvcc (host code only; no CUDA call).
// Tolerance: 1e-6 of the row's largest magnitude (the two compute d*sc*q in different orders).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "quant.cuh"
#include "quant/quant.h"

namespace {

struct Check {
  const uint8_t* row;
  int64_t k;
  std::vector<float>* out;
  template <int Type>
  void operator()() const {
    for (int64_t g = 0; g < k / 32; ++g) zfk::DequantGroup<Type>(row, int(g), out->data() + g * 32);
  }
};

}  // namespace

int main() {
  const int types[] = {0, 1, 30, 2, 3, 6, 7, 8, 12, 13, 14};
  const int64_t k = 1024;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> sc(0.002f, 0.02f), u(-1.0f, 1.0f);
  int passed = 0, failed = 0;
  for (int type : types) {
    const zf::GgmlType t = zf::GgmlType(type);
    std::vector<uint8_t> row(zf::RowSize(t, k));
    for (auto& b : row) b = uint8_t(byte(rng));
    const size_t bs = zf::GetTypeTraits(t)->type_size;
    const auto put = [&](size_t off, float v) {
      const uint16_t h = zf::quant::Fp32ToFp16(v);
      std::memcpy(&row[off], &h, 2);
    };
    for (size_t o = 0; o < row.size(); o += bs) {  // sane scales: random F16 bytes may be NaN
      if (type == 0) { const float v = u(rng); std::memcpy(&row[o], &v, 4); }
      if (type == 1) put(o, u(rng));
      if (type == 30) { const float v = u(rng); uint32_t x; std::memcpy(&x, &v, 4); const uint16_t h = uint16_t(x >> 16); std::memcpy(&row[o], &h, 2); }
      if (type == 2 || type == 6 || type == 8) put(o, sc(rng));
      if (type == 3 || type == 7) { put(o, sc(rng)); put(o + 2, -sc(rng)); }
      if (type == 12 || type == 13) { put(o, sc(rng)); put(o + 2, sc(rng)); }
      if (type == 14) put(o + 208, sc(rng));
    }
    std::vector<float> ref(static_cast<size_t>(k)), got(static_cast<size_t>(k));
    zf::quant::DequantizeRow(t, row.data(), ref.data(), k);
    if (!zfk::DispatchType(type, Check{row.data(), k, &got})) {
      std::printf("FAIL %s: no DequantGroup\n", zf::TypeName(t));
      ++failed;
      continue;
    }
    float mx = 0, err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < k; ++i) {
      mx = std::max(mx, std::fabs(ref[size_t(i)]));
      const float e = std::fabs(ref[size_t(i)] - got[size_t(i)]);
      if (e > err) err = e, worst = i;
    }
    const bool ok = err <= 1e-6f * mx;
    std::printf("%s %-5s max error %.3g of %.3g (element %lld: ref %.6g, kernel %.6g)\n", ok ? "ok  " : "FAIL",
                zf::TypeName(t), double(err), double(mx), (long long)worst, double(ref[size_t(worst)]),
                double(got[size_t(worst)]));
    ok ? ++passed : ++failed;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

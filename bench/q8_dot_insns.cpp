// Driver of bench/aarch64_q8_insns.sh: calls one dispatched quant kernel ITERS times on random
// rows (k = 2048), so that the guest instructions of a run with ITERS calls minus those of a run
// with none, / ITERS, are the kernel's work per call under qemu.
//   q8_dot_insns vecdot_q8_0|vecdot_q4_0|gemm_q8_0 ITERS
// gemm_q8_0 is GemmQ8_0 on 16 weight rows x 64 tokens (one prefill tile of MatMulQ8Gemm).
// The kernels are whatever this CPU's dispatch picks (ZF_NO_NEON=1: the scalar reference).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"

namespace {

std::vector<uint8_t> Quantized(zf::GgmlType t, int64_t rows, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * k));
  for (float& v : x) v = d(rng);
  const size_t row = zf::RowSize(t, k);
  std::vector<uint8_t> q(row * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (t == zf::GgmlType::Q8_0) {
      zf::quant::QuantizeActivations(t, x.data() + r * k, q.data() + row * size_t(r), k);
      continue;
    }
    // Q4_0 rows: random nibbles and small scales (the library has no Q4_0 quantizer to call here).
    for (size_t i = 0; i < row; ++i) q[row * size_t(r) + i] = uint8_t(rng());
    for (int64_t b = 0; b < k / 32; ++b) {
      const uint16_t h = zf::quant::Fp32ToFp16(0.01f);
      std::memcpy(q.data() + row * size_t(r) + size_t(b) * 18, &h, 2);
    }
  }
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s vecdot_q8_0|vecdot_q4_0|gemm_q8_0 ITERS\n", argv[0]);
    return 2;
  }
  const char* op = argv[1];
  const long iters = std::atol(argv[2]);
  const int64_t k = 2048;
  std::mt19937 rng(1);
  const bool gemm = std::strcmp(op, "gemm_q8_0") == 0;
  const zf::GgmlType wt = std::strcmp(op, "vecdot_q4_0") == 0 ? zf::GgmlType::Q4_0 : zf::GgmlType::Q8_0;
  if (!gemm && wt == zf::GgmlType::Q8_0 && std::strcmp(op, "vecdot_q8_0") != 0) {
    std::fprintf(stderr, "unknown kernel %s\n", op);
    return 2;
  }
  const int64_t rows = gemm ? 16 : 1, n_tok = gemm ? 64 : 1;
  const std::vector<uint8_t> w = Quantized(wt, rows, k, rng);
  const std::vector<uint8_t> a = Quantized(zf::GgmlType::Q8_0, n_tok, k, rng);
  std::vector<float> y(size_t(rows * n_tok));
  float sink = 0.0f;
  for (long i = 0; i < iters; ++i) {
    if (gemm) {
      const size_t row = zf::RowSize(zf::GgmlType::Q8_0, k);
      zf::quant::GemmQ8_0(k, w.data(), row, rows, a.data(), row, n_tok, y.data(), rows);
      sink += y[size_t(i) % y.size()];
    } else {
      sink += zf::quant::VecDot(wt, k, w.data(), a.data());
    }
  }
  std::printf("%s %s %g\n", zf::quant::ActiveIsa(), op, double(sink));
  return 0;
}

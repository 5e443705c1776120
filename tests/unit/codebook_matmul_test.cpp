// The CPU engine's MatMul on the codebook weight types (IQ4_NL, IQ4_XS, MXFP4): decode (the row
// GEMV, or the packed one where this CPU has its kernel), a few tokens (GEMV per token) and
// prefill (rows dequantized and requantized to Q8_0 for the multi-token kernel; with a packed
// copy, the only resident one, its groups unpacked back to rows first), each against the
// double dot of the dequantized rows with the unquantized activations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/packed_weights.h"
#include "quant/packed.h"
#include "quant/quant.h"

namespace zf::engine {
namespace {

// Random quant bytes with scales of a moderate size: fp16 d in [0.005, 0.02) for IQ4_NL and
// IQ4_XS, an E8M0 exponent giving 2^-9 .. 2^-6 for MXFP4.
std::vector<uint8_t> RandomRows(GgmlType t, int64_t rows, int64_t k, uint32_t seed) {
  std::vector<uint8_t> w(RowSize(t, k) * size_t(rows));
  std::mt19937 rng(seed);
  for (uint8_t& b : w) b = uint8_t(rng());
  const size_t block = GetTypeTraits(t)->type_size;
  for (size_t off = 0; off < w.size(); off += block) {
    if (t == GgmlType::MXFP4) {
      w[off] = uint8_t(119 + rng() % 4);
    } else {
      const uint16_t d = quant::Fp32ToFp16(0.005f + 0.015f * float(rng() % 100) / 100.0f);
      std::memcpy(&w[off], &d, 2);
    }
  }
  return w;
}

TEST(CodebookMatMul, DecodeFewTokensAndPrefillMatchDequantizedRows) {
  const int64_t k = 512, rows = 37;  // a row count with a tail for every split
  for (GgmlType t : {GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4}) {
    std::vector<uint8_t> w = RandomRows(t, rows, k, 3);
    Tensor ti;
    ti.type = t;
    ti.n_dims = 2;
    ti.ne[0] = k;
    ti.ne[1] = rows;
    ti.data = w.data();
    ti.nbytes = w.size();
    std::vector<float> deq(size_t(rows * k));
    for (int64_t r = 0; r < rows; ++r) quant::DequantizeRow(t, w.data() + RowSize(t, k) * size_t(r), &deq[size_t(r * k)], k);
    // The file's rows first; then a packed copy, whose Build drops the rows' whole pages (these
    // are anonymous memory: zeroed), so the products read the packed copy.
    std::unique_ptr<PackedWeights> packed;
    for (bool use_packed : {false, true}) {
      if (use_packed) {
        ASSERT_TRUE(PackedWeights::Build({&ti}, 2, &packed).ok()) << TypeName(t);
        const bool expect = quant::PackedGemvAvailable(t);
        ASSERT_EQ(packed != nullptr && packed->Find(ti) != nullptr, expect) << TypeName(t);
      }
      CpuBackend be(2, packed.get());
      for (int32_t n_tok : {1, 3, 12}) {
        std::mt19937 rng(static_cast<uint32_t>(n_tok));
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> x(size_t(n_tok * k)), y(size_t(n_tok * rows));
        for (float& v : x) v = nd(rng);
        be.MatMul(ti, x.data(), n_tok, y.data());
        for (int32_t tt = 0; tt < n_tok; ++tt) {
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0.0, mag = 0.0;
            for (int64_t i = 0; i < k; ++i) {
              const double p = double(deq[size_t(r * k + i)]) * x[size_t(tt * k + i)];
              ref += p;
              mag += std::fabs(p);
            }
            // The activations are quantized to 8 bits (and, for prefill, the weights requantized
            // to Q8_0): a few 1/254 of the magnitude, far above float rounding.
            ASSERT_NEAR(y[size_t(tt * rows + r)], ref, 0.02 * mag)
                << TypeName(t) << " packed " << use_packed << " n_tok " << n_tok << " token " << tt << " row " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zf::engine

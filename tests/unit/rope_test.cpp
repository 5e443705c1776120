// CpuBackend::Rope against the formula, including the reuse of one position's angles across
// single-token calls (decode rotates Q and K of every layer at the same position).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/random_data.h"
#include "engine/cpu/cpu_backend.h"

namespace zf::engine {
namespace {

// Rope against the formula, one token at a time as decode calls it: Q then K of a layer at the
// same position (the second reuses the angles), a layer with another base, a new position, and
// a prefill call in between (which may overwrite the cached angles).
TEST(Rope, SingleTokenCallsReuseOnlyMatchingAngles) {
  CpuBackend be(2);
  constexpr int32_t kHeads = 3, kDim = 64;
  const auto expect = [&](const std::vector<float>& in, const std::vector<float>& out, int32_t pos, float base,
                          const std::string& what) {
    for (int32_t h = 0; h < kHeads; ++h) {
      for (int32_t i = 0; i < kDim / 2; ++i) {  // kNorm: pairs (2i, 2i+1)
        const float th = float(pos) * std::pow(base, -2.0f * float(i) / float(kDim));
        const float a = in[size_t(h * kDim + 2 * i)], b = in[size_t(h * kDim + 2 * i + 1)];
        ASSERT_NEAR(out[size_t(h * kDim + 2 * i)], a * std::cos(th) - b * std::sin(th), 1e-4f) << what << " " << i;
        ASSERT_NEAR(out[size_t(h * kDim + 2 * i + 1)], a * std::sin(th) + b * std::cos(th), 1e-4f) << what << " " << i;
      }
    }
  };
  const std::vector<float> x = testing::RandomFloats(size_t(kHeads * kDim), 9);
  RopeParams rp;
  rp.n_rot = kDim;
  rp.style = RopeStyle::kNorm;
  rp.freq_scale = 1.0f;
  struct Call {
    int32_t pos;
    float base;
  };
  const Call calls[] = {{7, 10000.0f}, {7, 10000.0f}, {7, 1000000.0f}, {7, 10000.0f}, {8, 10000.0f}};
  int n = 0;
  for (const Call& c : calls) {
    rp.base = c.base;
    std::vector<float> y = x;
    be.Rope(y.data(), 1, kHeads, kDim, &c.pos, rp);
    expect(x, y, c.pos, c.base, "call " + std::to_string(n++));
  }
  // A multi-token call leaves another position's angles in the cache slot: a single-token call
  // at the position cached before it must recompute.
  std::vector<int32_t> pos = {8, 3};
  std::vector<float> y2(size_t(2 * kHeads * kDim));
  std::copy(x.begin(), x.end(), y2.begin());
  std::copy(x.begin(), x.end(), y2.begin() + kHeads * kDim);
  be.Rope(y2.data(), 2, kHeads, kDim, pos.data(), rp);
  std::vector<float> y = x;
  const int32_t p8 = 8;
  be.Rope(y.data(), 1, kHeads, kDim, &p8, rp);
  expect(x, y, 8, rp.base, "after prefill");
}

}  // namespace
}  // namespace zf::engine

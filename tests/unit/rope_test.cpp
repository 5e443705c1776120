// CpuBackend::Rope against the formula, including the reuse of one position's angles across
// single-token calls (decode rotates Q and K of every layer at the same position).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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

// YaRN against a plain double-precision loop over the formula: pair i's angle blends the scaled
// (freq_scale * theta) and unscaled angle by a ramp over the correction dims of beta_fast /
// beta_slow, and cos/sin carry attn_factor * (1 + 0.1 ln(1 / freq_scale)). Both rope styles,
// partial rotary, positions before and after the original context's scale.
TEST(Rope, YarnMatchesFormula) {
  CpuBackend be(2);
  constexpr int32_t kHeads = 2, kDim = 64;
  for (RopeStyle style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
    for (int32_t n_rot : {64, 32}) {
      RopeParams rp;
      rp.n_rot = n_rot;
      rp.style = style;
      rp.base = 1000000.0f;
      rp.freq_scale = 0.25f;  // factor 4
      rp.attn_factor = 0.97f;
      rp.ext_factor = 1.0f;
      rp.n_ctx_orig = 32768;
      rp.beta_fast = 32.0f;
      rp.beta_slow = 1.0f;
      // The correction range, from the formula in double precision.
      const auto corr = [&](double turns) {
        const double turn = turns * 2.0 * 3.14159265358979323846;
        return n_rot * std::log(rp.n_ctx_orig / turn) / (2.0 * std::log(double(rp.base)));
      };
      const double low = std::max(0.0, std::floor(corr(rp.beta_fast)));
      const double high = std::min(double(n_rot - 1), std::ceil(corr(rp.beta_slow)));
      ASSERT_GT(high, low + 2) << "the test must exercise the blended range";
      const double mscale = rp.attn_factor * (1.0 + 0.1 * std::log(1.0 / rp.freq_scale));
      const std::vector<int32_t> positions = {0, 1, 17, 500};
      const size_t row = size_t(kHeads * kDim);
      const std::vector<float> x = testing::RandomFloats(row * positions.size(), 11);
      std::vector<float> y = x;
      be.Rope(y.data(), int32_t(positions.size()), kHeads, kDim, positions.data(), rp);
      std::vector<float> y1 = x;  // the same positions one token at a time (decode)
      for (size_t t = 0; t < positions.size(); ++t) be.Rope(y1.data() + t * row, 1, kHeads, kDim, &positions[t], rp);
      for (size_t t = 0; t < positions.size(); ++t) {
        for (int32_t h = 0; h < kHeads; ++h) {
          const float* in = x.data() + t * row + size_t(h * kDim);
          const float* out = y.data() + t * row + size_t(h * kDim);
          const float* out1 = y1.data() + t * row + size_t(h * kDim);
          for (int32_t i = 0; i < n_rot / 2; ++i) {
            const double extrap = positions[t] * std::pow(double(rp.base), -2.0 * i / n_rot);
            const double interp = rp.freq_scale * extrap;
            const double ramp = 1.0 - std::min(1.0, std::max(0.0, (i - low) / std::max(0.001, high - low)));
            const double th = interp * (1.0 - ramp) + extrap * ramp;
            const int32_t i0 = style == RopeStyle::kNorm ? 2 * i : i;
            const int32_t i1 = style == RopeStyle::kNorm ? 2 * i + 1 : i + n_rot / 2;
            const double a = in[i0], b = in[i1];
            const double w0 = (a * std::cos(th) - b * std::sin(th)) * mscale;
            const double w1 = (a * std::sin(th) + b * std::cos(th)) * mscale;
            const std::string what = "style " + std::to_string(int(style)) + " n_rot " + std::to_string(n_rot) +
                                     " pos " + std::to_string(positions[t]) + " pair " + std::to_string(i);
            ASSERT_NEAR(out[i0], w0, 2e-3) << what;
            ASSERT_NEAR(out[i1], w1, 2e-3) << what;
            ASSERT_EQ(out1[i0], out[i0]) << what << " (single-token call)";
            ASSERT_EQ(out1[i1], out[i1]) << what << " (single-token call)";
          }
          for (int32_t i = n_rot; i < kDim; ++i) ASSERT_EQ(out[i], in[i]) << "dims past n_rot stay";
        }
      }
    }
  }
}

// The cached angles of a single-token call are not reused across YaRN and plain rope at the
// same position, and YaRN with factor 1 is the plain rotation.
TEST(Rope, YarnAnglesAreKeyedAndFactorOneIsPlain) {
  CpuBackend be(1);
  constexpr int32_t kDim = 64;
  const std::vector<float> x = testing::RandomFloats(kDim, 5);
  RopeParams plain;
  plain.n_rot = kDim;
  plain.base = 10000.0f;
  RopeParams yarn = plain;
  yarn.freq_scale = 0.125f;
  yarn.ext_factor = 1.0f;
  yarn.n_ctx_orig = 4096;
  RopeParams linear = yarn;
  linear.ext_factor = 0.0f;
  const int32_t pos = 300;
  std::vector<float> a = x, b = x, c = x;
  be.Rope(a.data(), 1, 1, kDim, &pos, yarn);
  be.Rope(b.data(), 1, 1, kDim, &pos, linear);
  be.Rope(c.data(), 1, 1, kDim, &pos, yarn);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, c);
  RopeParams one = yarn;
  one.freq_scale = 1.0f;
  std::vector<float> d = x, e = x;
  be.Rope(d.data(), 1, 1, kDim, &pos, one);
  be.Rope(e.data(), 1, 1, kDim, &pos, plain);
  for (int32_t i = 0; i < kDim; ++i) EXPECT_NEAR(d[size_t(i)], e[size_t(i)], 1e-5f) << i;
}


// M-RoPE's sector rule (the reference's ggml_mrope_cache_init) on the real layouts: Qwen2-VL's
// consecutive sections [16, 24, 24, 0] over 64 pairs, Qwen3-VL's interleaved [24, 20, 20, 0]
// (t, h, w cycling; pairs 61 and 62 fall outside every cycle and take the e position), and a
// sum smaller than the pairs (the sectors wrap).
TEST(Rope, MropeComponentsFollowTheSectorRule) {
  RopeParams q2;
  q2.sections = {16, 24, 24, 0};
  std::string got;
  for (int32_t i = 0; i < 64; ++i) got += char('0' + MropeComponent(q2, i));
  EXPECT_EQ(got, std::string(16, '0') + std::string(24, '1') + std::string(24, '2'));
  RopeParams q3;
  q3.sections = {24, 20, 20, 0};
  q3.interleaved = true;
  got.clear();
  for (int32_t i = 0; i < 64; ++i) got += char('0' + MropeComponent(q3, i));
  std::string want;
  for (int32_t i = 0; i < 60; ++i) want += char('0' + i % 3);
  want += "0330";  // 60: t (< 72); 61, 62: beyond 3 x 20; 63: t
  EXPECT_EQ(got, want);
  RopeParams wrap;
  wrap.sections = {2, 1, 1, 2};
  got.clear();
  for (int32_t i = 0; i < 12; ++i) got += char('0' + MropeComponent(wrap, i));
  EXPECT_EQ(got, "001233001233");
}

// Sectioned rope against a double-precision loop (pair i rotated by its component's position,
// neox pairs as Qwen-VL's), and a text token's (p, p, p, 0) giving plain rope's bits whenever
// no rotated pair takes the e position; several tokens in one call as one at a time.
TEST(Rope, SectionsMatchFormulaAndPlainRopeForText) {
  CpuBackend be(2);
  constexpr int32_t kHeads = 2, kDim = 128;
  const std::vector<float> x = testing::RandomFloats(size_t(3 * kHeads * kDim), 11);
  for (bool interleaved : {false, true}) {
    RopeParams rp;
    rp.n_rot = kDim;
    rp.style = RopeStyle::kNeox;
    rp.base = 1000000.0f;
    rp.sections = interleaved ? std::array<int32_t, 4>{24, 20, 20, 0} : std::array<int32_t, 4>{16, 24, 24, 0};
    rp.interleaved = interleaved;
    const std::vector<int32_t> pos4 = {40, 40, 40, 0, 40, 41, 53, 0, 40, 57, 44, 0};  // text, then two image rows
    std::vector<float> y = x;
    be.Rope(y.data(), 3, kHeads, kDim, pos4.data(), rp);
    for (int32_t t = 0; t < 3; ++t) {
      for (int32_t h = 0; h < kHeads; ++h) {
        const float* in = x.data() + (t * kHeads + h) * kDim;
        const float* out = y.data() + (t * kHeads + h) * kDim;
        for (int32_t i = 0; i < kDim / 2; ++i) {
          const double th = double(pos4[size_t(t * 4 + MropeComponent(rp, i))]) * std::pow(1000000.0, -2.0 * i / kDim);
          const double a = in[i], b = in[i + kDim / 2];
          ASSERT_NEAR(out[i], a * std::cos(th) - b * std::sin(th), 2e-4) << interleaved << " t" << t << " i" << i;
          ASSERT_NEAR(out[i + kDim / 2], a * std::sin(th) + b * std::cos(th), 2e-4) << interleaved << " t" << t;
        }
      }
      std::vector<float> one(x.begin() + t * kHeads * kDim, x.begin() + (t + 1) * kHeads * kDim);
      be.Rope(one.data(), 1, kHeads, kDim, pos4.data() + t * 4, rp);
      EXPECT_TRUE(std::equal(one.begin(), one.end(), y.begin() + t * kHeads * kDim)) << "token " << t << " alone";
    }
    // The text token against plain rope at 40: the same bits for Qwen2-VL's sections; Qwen3-VL's
    // pairs 61 and 62 stay unrotated (e = 0), the rest the same bits.
    RopeParams plain = rp;
    plain.sections = {};
    plain.interleaved = false;
    std::vector<float> p(x.begin(), x.begin() + kHeads * kDim);
    const int32_t p40 = 40;
    be.Rope(p.data(), 1, kHeads, kDim, &p40, plain);
    for (int32_t h = 0; h < kHeads; ++h) {
      for (int32_t i = 0; i < kDim / 2; ++i) {
        const size_t a = size_t(h * kDim + i), b = a + kDim / 2;
        if (MropeComponent(rp, i) == 3) {
          EXPECT_EQ(y[a], x[a]) << i;
          EXPECT_EQ(y[b], x[b]) << i;
        } else {
          EXPECT_EQ(y[a], p[a]) << interleaved << " " << i;
          EXPECT_EQ(y[b], p[b]) << interleaved << " " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace zf::engine

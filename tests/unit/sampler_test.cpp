// Sampler and text-stream behaviour: greedy ties, each filter's effect on which tokens can be
// drawn, seeded reproducibility, the repetition penalty, UTF-8 reassembly and stop strings.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/text_stream.h"

namespace zf::rt {
namespace {

SamplerParams Plain(float temp) {
  SamplerParams p;
  p.temperature = temp;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  p.seed = 7;
  return p;
}

std::set<int32_t> Drawn(const SamplerParams& p, const std::vector<float>& logits, int n = 2000) {
  Sampler s(p, int32_t(logits.size()));
  std::set<int32_t> seen;
  for (int i = 0; i < n; ++i) seen.insert(s.Sample(logits.data(), nullptr, 0));
  return seen;
}

TEST(Sampler, GreedyPicksArgmaxAndLowestIdOnTies) {
  Sampler s(Plain(0.0f), 5);
  std::vector<float> l = {1, 3, 2, 3, 0};
  EXPECT_EQ(s.Sample(l.data(), nullptr, 0), 1);
}

TEST(Sampler, TopKLimitsCandidates) {
  std::vector<float> l = {5, 4, 3, 2, 1, 0};
  SamplerParams p = Plain(5.0f);
  p.top_k = 2;
  EXPECT_EQ(Drawn(p, l), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, TopPKeepsSmallestNucleus) {
  // Probabilities ~ {0.5, 0.25, 0.125, ...}: top_p 0.6 keeps the first two.
  std::vector<float> l = {0.0f, -0.6931f, -1.3863f, -2.0794f, -2.7726f};
  SamplerParams p = Plain(1.0f);
  p.top_p = 0.6f;
  EXPECT_EQ(Drawn(p, l), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  std::vector<float> l = {0.0f, -0.5f, -5.0f, -6.0f};
  SamplerParams p = Plain(1.0f);
  p.min_p = 0.1f;  // keeps p >= 0.1 * p_max: ids 0 and 1 only
  EXPECT_EQ(Drawn(p, l), (std::set<int32_t>{0, 1}));
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDiffers) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float(i % 7) * 0.3f;
  auto run = [&](uint64_t seed) {
    SamplerParams p = Plain(1.0f);
    p.seed = seed;
    Sampler s(p, int32_t(l.size()));
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.Sample(l.data(), nullptr, 0));
    return out;
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

TEST(Sampler, FrequenciesFollowSoftmax) {
  std::vector<float> l = {0.0f, std::log(3.0f)};  // p = 0.25 / 0.75
  Sampler s(Plain(1.0f), 2);
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += s.Sample(l.data(), nullptr, 0);
  EXPECT_NEAR(double(ones) / n, 0.75, 0.02);
}

TEST(Sampler, RepetitionPenaltyAppliesToRecentTokensOnly) {
  std::vector<float> l = {2.0f, 1.9f, 0.0f};
  SamplerParams p = Plain(0.0f);
  p.repeat_penalty = 1.5f;  // positive logits are divided: 2.0 -> 1.33 < 1.9
  p.repeat_last_n = 2;
  Sampler s(p, 3);
  int32_t recent[] = {0, 2};
  EXPECT_EQ(s.Sample(l.data(), recent, 2), 1);
  int32_t old[] = {0, 2, 2};  // token 0 is outside the last 2
  EXPECT_EQ(s.Sample(l.data(), old, 3), 0);
}

TEST(TextStream, ReassemblesSplitUtf8) {
  TextStream ts({});
  std::string out;
  EXPECT_FALSE(ts.Push("\xE6", &out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(ts.Push("\x97\xA5x", &out));
  EXPECT_EQ(out, "\xE6\x97\xA5x");
}

TEST(TextStream, InvalidBytesBecomeReplacementCharacter) {
  TextStream ts({});
  std::string out;
  ts.Push("a\xFF" "b", &out);
  ts.Finish(&out);
  EXPECT_EQ(out, "a\xEF\xBF\xBD" "b");
  TextStream tail({});
  std::string t;
  tail.Push("z\xE6\x97", &t);
  tail.Finish(&t);
  EXPECT_EQ(t, "z\xEF\xBF\xBD");
}

TEST(TextStream, StopStringSplitAcrossPiecesIsNeverEmitted) {
  TextStream ts({"<END>"});
  std::string out;
  EXPECT_FALSE(ts.Push("hello <E", &out));
  EXPECT_EQ(out.find('<'), std::string::npos) << "a possible stop prefix is held back";
  EXPECT_FALSE(ts.Push("N", &out));
  EXPECT_TRUE(ts.Push("D> tail", &out));
  EXPECT_EQ(out, "hello ");
  EXPECT_EQ(ts.matched_stop(), "<END>");
}

TEST(TextStream, DivergedPrefixIsReleased) {
  TextStream ts({"<END>"});
  std::string out;
  ts.Push("a <E", &out);
  ts.Push("X", &out);
  ts.Finish(&out);
  EXPECT_EQ(out, "a <EX");
}

// Log-probabilities: log-softmax of the raw logits, the chosen token first, then the top k in
// descending order with ties to the lower id; NaN counts as -inf; k is capped at the vocabulary.
TEST(Logprobs, LogSoftmaxTopKAndTies) {
  const std::vector<float> logits = {1.0f, 3.0f, NAN, 3.0f, -2.0f, 0.5f};
  double z = 0;
  for (float l : logits) z += std::isnan(l) ? 0.0 : std::exp(double(l));
  const auto lp = [&](int i) { return float(double(logits[size_t(i)]) - std::log(z)); };
  std::vector<TokenLogprob> out = {{99, 0.0f}};  // appended after what is there
  AppendLogprobs(logits.data(), int32_t(logits.size()), 5, 4, &out);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0].token, 99);
  EXPECT_EQ(out[1].token, 5);
  EXPECT_FLOAT_EQ(out[1].logprob, lp(5));
  const int32_t want[] = {1, 3, 0, 5};  // 3.0 twice: the lower id first
  double mass = 0;
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(out[size_t(2 + j)].token, want[j]) << j;
    EXPECT_FLOAT_EQ(out[size_t(2 + j)].logprob, lp(want[j])) << j;
    mass += std::exp(double(out[size_t(2 + j)].logprob));
  }
  EXPECT_LE(mass, 1.0 + 1e-6);

  out.clear();
  AppendLogprobs(logits.data(), int32_t(logits.size()), 2, 20, &out);  // k > vocabulary
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out[0].token, 2);
  EXPECT_TRUE(std::isinf(out[0].logprob) && out[0].logprob < 0);  // NaN logit: ruled out
  EXPECT_EQ(out[6].token, 2);                                      // last of all
  mass = 0;
  for (size_t j = 1; j < out.size(); ++j) mass += std::exp(double(out[j].logprob));
  EXPECT_NEAR(mass, 1.0, 1e-5);  // the whole vocabulary

  out.clear();
  AppendLogprobs(logits.data(), int32_t(logits.size()), 1, 0, &out);  // the chosen token only
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].logprob, lp(1));
}

}  // namespace
}  // namespace zf::rt

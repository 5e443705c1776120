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

}  // namespace
}  // namespace zf::rt

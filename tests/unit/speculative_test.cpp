// Speculative decoding by prompt lookup: the drafter and the draft length on their own, and on
// both real models a generation with drafts is token for token the generation without them
// (greedy and seeded sampling, with stop strings and a follow-up turn), with drafts accepted.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/generator.h"
#include "runtime/session.h"
#include "runtime/speculative.h"

namespace zf {
namespace {

TEST(LookupDraft, ContinuesTheLatestEarlierOccurrence) {
  rt::DraftOptions o;
  o.ngram_min = 2;
  o.ngram_max = 3;
  int32_t out[8];
  // ... 5 6 7 8 | 9 ... 5 6 7 [8 ...] : the suffix "5 6 7" occurs at 1 and at 6; the latest wins.
  const std::vector<int32_t> seq = {1, 5, 6, 7, 8, 2, 5, 6, 7, 9, 3, 4, 5, 6, 7};
  ASSERT_EQ(rt::LookupDraft(seq.data(), seq.size(), o, 3, out), 3);
  EXPECT_EQ(std::vector<int32_t>(out, out + 3), (std::vector<int32_t>{9, 3, 4}));
  // Capped by max, and by the end of the sequence.
  ASSERT_EQ(rt::LookupDraft(seq.data(), seq.size(), o, 1, out), 1);
  EXPECT_EQ(out[0], 9);
  // Shorter suffixes are tried when the longest does not occur; none at all: no draft.
  const std::vector<int32_t> two = {4, 9, 1, 2, 3, 8, 9};  // "8 9" no, "9" below ngram_min
  EXPECT_EQ(rt::LookupDraft(two.data(), two.size(), o, 4, out), 0);
  o.ngram_min = 1;
  ASSERT_EQ(rt::LookupDraft(two.data(), two.size(), o, 4, out), 4);
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), (std::vector<int32_t>{1, 2, 3, 8}));
  EXPECT_EQ(rt::LookupDraft(two.data(), 1, o, 4, out), 0);
  EXPECT_EQ(rt::LookupDraft(two.data(), two.size(), o, 0, out), 0);
}

TEST(DraftLength, FollowsTheExpectedSpeedUp) {
  rt::DraftOptions o;
  o.max = 10;
  rt::DraftLength d(o);
  const int32_t first = d.Next();
  EXPECT_GT(first, 0) << "an optimistic start probes";
  d.Step(10.0);  // a one-token step: 10 ms
  // Drafts fully kept at a low row cost: longer drafts.
  for (int i = 0; i < 6; ++i) d.Report(d.Next(), d.Next(), 10.0 * (1.0 + 0.05 * d.Next()));
  EXPECT_GT(d.acceptance(), 0.8);
  EXPECT_GE(d.Next(), 8);
  // Drafts that keep failing: paused, then probed again after kPauseTokens plain steps.
  for (int i = 0; i < 30 && d.Next() > 0; ++i) d.Report(d.Next(), 0, 10.0 * (1.0 + 0.05 * d.Next()));
  EXPECT_EQ(d.Next(), 0);
  for (int i = 0; i < rt::DraftLength::kPauseTokens; ++i) d.Step(10.0);
  EXPECT_GT(d.Next(), 0);
  // Rows that cost as much as a whole step: speculation cannot pay unless nearly every draft is
  // kept.
  rt::DraftLength costly(o);
  costly.Step(10.0);
  for (int i = 0; i < 12 && costly.Next() > 0; ++i) costly.Report(costly.Next(), costly.Next() / 2, 10.0 * (1.0 + costly.Next()));
  EXPECT_EQ(costly.Next(), 0);
  EXPECT_EQ(rt::DraftLength(rt::DraftOptions()).Next(), 0) << "max 0: off";
}

// A draft inside a batched step pays only when the step's time grows little with its rows
// (memory-bound): there a draft the target mostly keeps is drafted; where each row costs about
// a sequence's step (compute-bound) even fully kept drafts lose, since k rows yield < k tokens.
TEST(BatchedDraftLength, WeighsTheRowsAgainstEverySequenceOfTheStep) {
  // Memory-bound: 20 ms to read the weights, 0.1 ms per row; 4 sequences, 80% kept.
  const int32_t k = rt::BatchedDraftLength(8, 1, 0.8, 4, 0.020, 0.0001);
  EXPECT_GE(k, 4);
  EXPECT_LE(k, 8);
  // The same step with rare acceptance: no draft.
  EXPECT_EQ(rt::BatchedDraftLength(8, 1, 0.05, 4, 0.020, 0.0001), 0);
  // Compute-bound (this 2-core CPU at 4+ sequences: 9.8 ms for 4 rows, 3.4 ms for 1): nothing pays.
  EXPECT_EQ(rt::BatchedDraftLength(8, 1, 0.95, 4, 0.0013, 0.0021), 0);
  EXPECT_EQ(rt::BatchedDraftLength(8, 1, 0.95, 16, 0.0, 0.002), 0);
  // More sequences share the cost: the same draft that pays at 2 sequences stops paying at 32.
  EXPECT_GT(rt::BatchedDraftLength(8, 1, 0.7, 2, 0.010, 0.0005), 0);
  EXPECT_EQ(rt::BatchedDraftLength(8, 1, 0.7, 32, 0.010, 0.0005), 0);
  // k_min and degenerate costs.
  EXPECT_EQ(rt::BatchedDraftLength(8, 9, 0.8, 4, 0.020, 0.0001), 0);
  EXPECT_EQ(rt::BatchedDraftLength(8, 1, 0.8, 4, 0.020, 0.0), 0);
}

struct Out {
  std::vector<int32_t> tokens;
  std::string text;
  rt::GenerateResult result;
};

bool Collect(void* ctx, std::string_view piece, int32_t token) {
  auto* o = static_cast<Out*>(ctx);
  o->tokens.push_back(token);
  o->text += piece;
  return false;
}

// Two turns on one session: the second continues the first (pending tokens, settled drafts).
std::vector<Out> TwoTurns(const model::Model& m, const rt::GenerateOptions& go, const std::string& p1,
                          const std::string& p2) {
  rt::SessionOptions so;
  so.n_ctx = 1024;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(m, so, &s).ok());
  std::vector<Out> outs(2);
  EXPECT_TRUE(rt::Generate(*s, p1, go, Collect, &outs[0], &outs[0].result).ok());
  EXPECT_TRUE(rt::Generate(*s, p2, go, Collect, &outs[1], &outs[1].result).ok());
  return outs;
}

void CheckIdentical(const std::string& name) {
  ZF_REQUIRE_MODEL(path, name);
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  // Text the model is asked to copy: lookup drafts pay off.
  const std::string para =
      "The committee met on Tuesday to review the budget for the new library wing, the parking "
      "garage and the community garden, and agreed to publish the minutes by Friday.";
  const std::string p1 = "Copy this text exactly.\nText: " + para + "\nCopy: " + para.substr(0, 30);
  const std::string p2 = "\nAgain: The committee";
  for (float temperature : {0.0f, 0.8f}) {
    rt::GenerateOptions plain;
    plain.max_tokens = 48;
    plain.sampler.temperature = temperature;
    plain.sampler.seed = 7;
    plain.stop = {"Friday"};
    rt::GenerateOptions spec = plain;
    spec.draft.max = 8;
    const std::vector<Out> want = TwoTurns(*m, plain, p1, p2), got = TwoTurns(*m, spec, p1, p2);
    for (size_t turn = 0; turn < 2; ++turn) {
      EXPECT_EQ(got[turn].tokens, want[turn].tokens) << name << " T=" << temperature << " turn " << turn;
      EXPECT_EQ(got[turn].text, want[turn].text);
      EXPECT_EQ(int(got[turn].result.stop_reason), int(want[turn].result.stop_reason));
      EXPECT_EQ(got[turn].result.n_generated, want[turn].result.n_generated);
      EXPECT_EQ(want[turn].result.n_drafted, 0);
    }
    const int32_t drafted = got[0].result.n_drafted + got[1].result.n_drafted;
    const int32_t accepted = got[0].result.n_accepted + got[1].result.n_accepted;
    std::printf("    %s T=%.1f: %d drafted, %d accepted, %d generated\n", name.c_str(), temperature, drafted,
                accepted, got[0].result.n_generated + got[1].result.n_generated);
    if (temperature == 0.0f) EXPECT_GT(accepted, 8) << "copying text, lookup drafts should be accepted";
    EXPECT_LE(accepted, drafted);
  }
}

TEST(Speculative, LookupIsTokenForTokenIdenticalSmolLM2) { CheckIdentical("smollm2"); }
TEST(Speculative, LookupIsTokenForTokenIdenticalGemma3) { CheckIdentical("gemma3"); }

// A draft model: the same file as its own draft (a valid draft: the same vocabulary), drafting
// in a session of its own that follows the target's conversation across two turns. Greedy and
// seeded sampling are token for token the output without it; greedy drafts of the model itself
// are nearly all kept.
void CheckIdenticalWithDraftModel(const std::string& name) {
  ZF_REQUIRE_MODEL(path, name);
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  ASSERT_TRUE(rt::CheckDraftVocabulary(*m, *m).ok());
  rt::SessionOptions so;
  so.n_ctx = 1024;
  std::unique_ptr<rt::Session> draft;
  ASSERT_TRUE(rt::Session::Create(*m, so, &draft).ok());
  const std::string p1 = "The history of the printing press begins";
  const std::string p2 = "\nThe history of the steam engine begins";
  for (float temperature : {0.0f, 0.8f}) {
    rt::GenerateOptions plain;
    plain.max_tokens = 40;
    plain.sampler.temperature = temperature;
    plain.sampler.seed = 11;
    rt::GenerateOptions spec = plain;
    spec.draft.max = 6;
    spec.draft_session = draft.get();
    const std::vector<Out> want = TwoTurns(*m, plain, p1, p2), got = TwoTurns(*m, spec, p1, p2);
    int32_t drafted = 0, accepted = 0;
    for (size_t turn = 0; turn < 2; ++turn) {
      EXPECT_EQ(got[turn].tokens, want[turn].tokens) << name << " T=" << temperature << " turn " << turn;
      EXPECT_EQ(got[turn].text, want[turn].text);
      EXPECT_EQ(got[turn].result.n_generated, want[turn].result.n_generated);
      drafted += got[turn].result.n_drafted;
      accepted += got[turn].result.n_accepted;
    }
    std::printf("    %s T=%.1f, itself as draft: %d drafted, %d accepted\n", name.c_str(), temperature, drafted,
                accepted);
    EXPECT_LE(accepted, drafted);
    EXPECT_EQ(got[0].result.n_generated, plain.max_tokens) << "a prompt the model continues";
    // Exact sessions on both sides: a model keeps every one of its own greedy drafts.
    if (temperature == 0.0f) EXPECT_EQ(accepted, drafted);
    EXPECT_GT(accepted, 0);
  }
}

TEST(Speculative, DraftModelIsTokenForTokenIdenticalSmolLM2) { CheckIdenticalWithDraftModel("smollm2"); }
TEST(Speculative, DraftModelIsTokenForTokenIdenticalGemma3) { CheckIdenticalWithDraftModel("gemma3"); }

// A draft of another vocabulary is refused, naming the difference (here the token counts: 49152
// for SmolLM2, 262144 for Gemma 3), both ways round.
TEST(Speculative, DraftModelOfAnotherVocabularyIsRefused) {
  ZF_REQUIRE_MODEL(smol_path, "smollm2");
  ZF_REQUIRE_MODEL(gemma_path, "gemma3");
  model::LoadOptions lo;
  lo.vocab_only = true;
  std::unique_ptr<model::Model> smol, gemma;
  ASSERT_TRUE(model::Model::Load(smol_path, lo, &smol).ok());
  ASSERT_TRUE(model::Model::Load(gemma_path, lo, &gemma).ok());
  Status s = rt::CheckDraftVocabulary(*smol, *gemma);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("tokenizer \"llama\" (draft) vs \"gpt2\" (target)"), std::string::npos) << s.message();
  s = rt::CheckDraftVocabulary(*gemma, *smol);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("\"gpt2\" (draft)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zf

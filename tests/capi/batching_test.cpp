// Batched decode across sessions (zf_model_params.max_batch): sessions of one model used from
// many threads at once give exactly (bit for bit) what each gives alone on a model without
// batching: logits through zf_session_eval, tokens through zf_generate. Both real models (Q4_1
// SmolLM2, Q4_K/Q6_K Gemma 3).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

int32_t Vocab(zf_model* m) {
  zf_model_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return s.n_vocab;
}

// A prompt evaluated as one chunk, then `steps` single tokens (decode steps): the logits after
// the prompt and after every step, concatenated.
// `after_prompt` (if set) runs between the two, e.g. a barrier so that every thread's decode
// steps overlap.
std::vector<float> EvalLogits(zf_model* m, const std::vector<int32_t>& prompt, const std::vector<int32_t>& steps,
                              const std::function<void()>& after_prompt = nullptr) {
  const size_t nv = size_t(Vocab(m));
  SessionPtr s = NewSession(m, 512, 1);
  std::vector<float> out((steps.size() + 1) * nv);
  EXPECT_EQ(zf_session_eval(s.get(), prompt.data(), prompt.size(), out.data(), nv), ZF_OK) << zf_last_error();
  if (after_prompt) after_prompt();
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(zf_session_eval(s.get(), &steps[i], 1, out.data() + (i + 1) * nv, nv), ZF_OK) << zf_last_error();
  }
  return out;
}

std::vector<std::string> Prompts(size_t n) {
  static const char* kBase[] = {"The capital of France is", "Once upon a time", "def fibonacci(n):",
                                "The three primary colors are", "In 1969, the first", "Water boils at",
                                "A haiku about the sea:", "The quick brown fox"};
  std::vector<std::string> p;
  for (size_t i = 0; i < n; ++i) p.push_back(std::string(kBase[i % 8]) + (i >= 8 ? " and then" : ""));
  return p;
}

void CheckEvalInvariance(const std::string& path) {
  constexpr size_t kSessions = 12;
  ModelPtr plain = Load(path);
  ModelPtr batched = Load(path, 0, 16);
  ASSERT_TRUE(plain && batched);
  const std::vector<std::string> prompts = Prompts(kSessions);
  std::vector<std::vector<int32_t>> toks, steps;
  std::vector<std::vector<float>> want;
  for (size_t i = 0; i < kSessions; ++i) {
    toks.push_back(Tokenize(plain.get(), prompts[i]));
    // Different lengths, so sequences leave the batch at different steps.
    std::vector<int32_t> st;
    for (size_t j = 0; j < 6 + i % 5; ++j) st.push_back(int32_t(100 + 37 * i + 11 * j));
    steps.push_back(st);
    want.push_back(EvalLogits(plain.get(), toks[i], steps[i]));
  }
  // Alone on the batched model (a batch of one), then all at once from their own threads.
  EXPECT_EQ(EvalLogits(batched.get(), toks[0], steps[0]), want[0]);
  std::vector<std::vector<float>> got(kSessions);
  std::vector<std::thread> threads;
  std::atomic<size_t> ready{0};
  const auto barrier = [&] {
    ready.fetch_add(1);
    while (ready.load() < kSessions) std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  for (size_t i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] { got[i] = EvalLogits(batched.get(), toks[i], steps[i], barrier); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kSessions; ++i) {
    ASSERT_EQ(got[i].size(), want[i].size());
    EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].size() * sizeof(float)), 0)
        << "session " << i << ": batched logits differ from the same session alone";
  }
}

TEST(Batching, EvalLogitsIdenticalToAloneSmolLM2) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  CheckEvalInvariance(path);
}

TEST(Batching, EvalLogitsIdenticalToAloneGemma3) {
  ZF_REQUIRE_MODEL(path, "gemma3");
  CheckEvalInvariance(path);
}

Pushed Generate(zf_model* m, const std::string& prompt, int32_t max_tokens) {
  SessionPtr s = NewSession(m, 512, 1);
  Pushed c;
  const zf_generate_params g = Greedy(max_tokens);
  zf_generate_result r;
  r.struct_size = sizeof r;
  EXPECT_EQ(zf_generate(s.get(), prompt.data(), prompt.size(), &g, CollectPieces, &c, &r), ZF_OK) << zf_last_error();
  return c;
}

// Sixteen generations at once, a long prompt (several prefill chunks) among them: every one
// produces the tokens it produces alone.
TEST(Batching, SixteenGenerationsIdenticalToAlone) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  constexpr size_t kN = 16;
  ModelPtr plain = Load(path);
  ModelPtr batched = Load(path, 0, 8);  // fewer slots than sessions: some wait a step
  std::vector<std::string> prompts = Prompts(kN);
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "Count the sheep: one, two, three. ";
  prompts[3] = long_prompt;  // > 128 tokens: evaluated in chunks between decode steps
  std::vector<Pushed> want, got(kN);
  for (size_t i = 0; i < kN; ++i) want.push_back(Generate(batched.get(), prompts[i], 28));
  // Prompts within one chunk match the model without batching too.
  EXPECT_EQ(Generate(plain.get(), prompts[0], 28).tokens, want[0].tokens);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] { got[i] = Generate(batched.get(), prompts[i], int32_t(12 + i)); });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kN; ++i) {
    const std::vector<int32_t> expect(want[i].tokens.begin(),
                                      want[i].tokens.begin() + std::min<size_t>(want[i].tokens.size(), 12 + i));
    EXPECT_EQ(got[i].tokens, expect) << "generation " << i;
  }
}

// Prompt-lookup drafts on a batched session: its verifications join the batcher's decode steps
// and the output is token for token the output without drafts.
TEST(Batching, LookupDraftsVerifiedInDecodeSteps) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr batched = Load(path, 0, 4);
  const std::string para =
      "The committee met on Tuesday to review the budget for the new library wing, the parking "
      "garage and the community garden, and agreed to publish the minutes by Friday.";
  const std::string prompt = "Copy this text exactly.\nText: " + para + "\nCopy: " + para.substr(0, 30);
  const Pushed plain = Generate(batched.get(), prompt, 40);
  SessionPtr s = NewSession(batched.get(), 512, 1);
  Pushed c;
  zf_generate_params g = Greedy(40);
  g.draft_max = 8;
  zf_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(zf_generate(s.get(), prompt.data(), prompt.size(), &g, CollectPieces, &c, &r), ZF_OK) << zf_last_error();
  EXPECT_EQ(c.tokens, plain.tokens);
  EXPECT_GT(r.n_drafted, 0);
  EXPECT_GT(r.n_accepted, 0);
}

// Four sessions drafting at once (each verification joins a decode step, with the other
// sessions' rows): every output is token for token the output without drafts. Whether a busy
// session drafts is the batcher's measured step cost's call (a sanitizer's slowdown or a fast
// CPU changes it), so the drafts are forced with ZF_BATCH_DRAFT=always, and the cost model's
// own choice is run too, for identical output only.
void ConcurrentDraftingIdenticalToAlone(const char* busy_draft, bool must_draft) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  constexpr size_t kN = 4;
  ScopedEnv env("ZF_BATCH_DRAFT", busy_draft);
  ModelPtr batched = Load(path, 0, 4);
  const char* kParas[kN] = {
      "The committee met on Tuesday to review the budget for the new library wing and agreed to publish the minutes.",
      "Our train leaves the north station at seven, stops twice along the river and reaches the coast by noon.",
      "Mix two cups of flour with one cup of water, knead for ten minutes and let the dough rest for an hour.",
      "The museum opens at nine on weekdays, closes early on Sundays and offers free entry on the first Monday."};
  std::vector<std::string> prompts;
  std::vector<Pushed> want;
  for (const char* p : kParas) {
    const std::string para(p);
    prompts.push_back("Copy this text exactly.\nText: " + para + "\nCopy: " + para.substr(0, 25));
    want.push_back(Generate(batched.get(), prompts.back(), 32));
  }
  std::vector<Pushed> got(kN);
  std::vector<zf_generate_result> res(kN);
  std::vector<std::thread> threads;
  std::atomic<size_t> ready{0};
  for (size_t i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      SessionPtr s = NewSession(batched.get(), 512, 1);
      zf_generate_params g = Greedy(32);
      g.draft_max = 8;
      res[i].struct_size = sizeof res[i];
      // Start together, so the sessions share their steps from the first one.
      ready.fetch_add(1);
      while (ready.load() < kN) std::this_thread::yield();
      EXPECT_EQ(zf_generate(s.get(), prompts[i].data(), prompts[i].size(), &g, CollectPieces, &got[i], &res[i]), ZF_OK)
          << zf_last_error();
    });
  }
  for (auto& t : threads) t.join();
  int32_t drafted = 0;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "generation " << i << " (ZF_BATCH_DRAFT=" << busy_draft << ")";
    drafted += res[i].n_drafted;
  }
  if (must_draft) EXPECT_GT(drafted, 0) << "no session drafted while the others decoded";
}

TEST(Batching, ConcurrentDraftingSessionsIdenticalToAlone) { ConcurrentDraftingIdenticalToAlone("always", true); }

TEST(Batching, ConcurrentSessionsUnderTheStepCostModelIdenticalToAlone) {
  ConcurrentDraftingIdenticalToAlone("cost", false);
}

TEST(Batching, MaxBatchOutOfRangeIsRejected) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  for (int32_t bad : {-1, 65}) {
    zf_model_params p;
    zf_model_params_init(&p, sizeof p);
    p.max_batch = bad;
    zf_model* m = nullptr;
    EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(zf_last_error()).find("max_batch"), std::string::npos) << zf_last_error();
  }
}

// A session may be freed while others of the model keep decoding, and the model freed before
// its sessions (the batching worker lives as long as the last of them).
TEST(Batching, FreeInAnyOrder) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path, 0, 4);
  SessionPtr a = NewSession(m.get(), 256, 1);
  SessionPtr b = NewSession(m.get(), 256, 1);
  zf_model_free(m.release());
  const std::string prompt = "Hello";
  const zf_generate_params g = Greedy(8);
  zf_generate_result r;
  r.struct_size = sizeof r;
  Pushed ca, cb;
  std::thread t([&] { EXPECT_EQ(zf_generate(a.get(), prompt.data(), prompt.size(), &g, CollectPieces, &ca, &r), ZF_OK); });
  zf_generate_result r2;
  r2.struct_size = sizeof r2;
  EXPECT_EQ(zf_generate(b.get(), prompt.data(), prompt.size(), &g, CollectPieces, &cb, &r2), ZF_OK);
  t.join();
  EXPECT_EQ(ca.tokens, cb.tokens);
  a.reset();
  EXPECT_EQ(zf_generate(b.get(), prompt.data(), prompt.size(), &g, CollectPieces, &cb, &r2), ZF_OK);
}

}  // namespace

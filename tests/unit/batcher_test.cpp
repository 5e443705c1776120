// runtime::Batcher: concurrent sessions' decode steps are coalesced into batched steps (the C
// API tests check the results bit for bit; this checks that batching happens at all) and the
// worker's arguments are validated.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/batcher.h"
#include "runtime/session.h"

namespace zf {
namespace {

std::unique_ptr<model::Model> LoadTwoThreads(const std::string& path) {
  model::LoadOptions lo;
  lo.n_threads = 2;
  std::unique_ptr<model::Model> m;
  EXPECT_TRUE(model::Model::Load(path, lo, &m).ok());
  return m;
}

// A session of 512 positions on m, its steps on b (nullptr: on its own).
std::unique_ptr<rt::Session> NewSession(const model::Model& m, rt::Batcher* b) {
  rt::SessionOptions so;
  so.n_ctx = 512;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(m, so, &s).ok());
  if (b != nullptr) s->set_batcher(b);
  return s;
}

TEST(Batcher, ConcurrentDecodesShareSteps) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = LoadTwoThreads(path);
  ASSERT_TRUE(m);
  std::unique_ptr<rt::Batcher> b;
  ASSERT_TRUE(rt::Batcher::Create(*m, 4, 0, &b).ok());
  constexpr int kSessions = 4, kSteps = 12;
  std::vector<std::unique_ptr<rt::Session>> sessions(kSessions);
  for (auto& s : sessions) {
    rt::SessionOptions so;
    so.n_ctx = 64;
    so.n_threads = 1;
    ASSERT_TRUE(rt::Session::Create(*m, so, &s).ok());
    s->set_batcher(b.get());
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      const int32_t prompt[3] = {1, 100 + i, 200 + i};
      EXPECT_TRUE(sessions[size_t(i)]->EvalKeepLogits(prompt, 3).ok());
      ready.fetch_add(1);
      while (ready.load() < kSessions) std::this_thread::sleep_for(std::chrono::microseconds(100));
      for (int step = 0; step < kSteps; ++step) {
        const int32_t t = 300 + 7 * step + i;
        EXPECT_TRUE(sessions[size_t(i)]->EvalKeepLogits(&t, 1).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(b->decode_rows(), uint64_t(kSessions * kSteps));
  EXPECT_LT(b->decode_steps(), uint64_t(kSessions * kSteps));  // some steps carried several rows
  EXPECT_GE(b->max_rows_seen(), 2);
  EXPECT_LE(b->max_rows_seen(), 4);  // never more than max_batch
  for (auto& s : sessions) EXPECT_EQ(s->n_past(), 3 + kSteps);
}

// A speculative verification joins the decode step of the other sessions (its rows beside
// theirs) instead of running alone between steps, and each of its positions still gets the
// logits of evaluating the tokens one at a time.
TEST(Batcher, VerificationRowsJoinDecodeSteps) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = LoadTwoThreads(path);
  ASSERT_TRUE(m);
  const size_t nv = size_t(m->desc().n_vocab);
  auto session = [&](rt::Batcher* b) { return NewSession(*m, b); };
  const int32_t prompt[4] = {1, 504, 3458, 282};
  constexpr int32_t kVerify = 9;
  std::vector<int32_t> draft(kVerify);
  for (int32_t i = 0; i < kVerify; ++i) draft[size_t(i)] = 700 + 13 * i;
  // The reference: the prompt, then the drafted tokens one at a time.
  std::vector<float> want(size_t(kVerify) * nv);
  {
    std::unique_ptr<rt::Session> s = session(nullptr);
    ASSERT_TRUE(s->Eval(prompt, 4, nullptr).ok());
    for (int32_t i = 0; i < kVerify; ++i) ASSERT_TRUE(s->Eval(&draft[size_t(i)], 1, want.data() + size_t(i) * nv).ok());
  }
  std::unique_ptr<rt::Batcher> b;
  ASSERT_TRUE(rt::Batcher::Create(*m, 4, 0, &b).ok());
  std::unique_ptr<rt::Session> busy = session(b.get()), verifier = session(b.get());
  ASSERT_TRUE(busy->Eval(prompt, 4, nullptr).ok());
  std::atomic<bool> stop{false};
  std::thread decoder([&] {  // another session decoding all along
    for (int32_t t = 0; !stop.load() && busy->n_past() < 500; ++t) {
      const int32_t tok = 300 + t % 97;
      EXPECT_TRUE(busy->Eval(&tok, 1, nullptr).ok());
    }
  });
  ASSERT_TRUE(verifier->Eval(prompt, 4, nullptr).ok());
  std::vector<float> got(size_t(kVerify) * nv);
  bool shared = false;
  for (int attempt = 0; attempt < 40 && !shared; ++attempt) {  // until a step carried both
    ASSERT_TRUE(verifier->EvalEvery(draft.data(), size_t(kVerify), got.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "attempt " << attempt;
    ASSERT_TRUE(verifier->Truncate(4).ok());
    shared = b->max_rows_seen() > kVerify;
  }
  stop.store(true);
  decoder.join();
  EXPECT_TRUE(shared) << "no decode step carried the verification beside the other session";
}

// Concurrent prompts: the sessions' prefill chunks run inside shared steps (several in one
// pass over the weights, beside a decoding session's rows), and every prompt's logits and the
// logits after it are bit for bit those of the prompt evaluated alone (exact sessions: a row's
// bits depend on its position and tokens, not on the step that carried it).
TEST(Batcher, ConcurrentPromptsShareStepsExactly) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = LoadTwoThreads(path);
  ASSERT_TRUE(m);
  const size_t nv = size_t(m->desc().n_vocab);
  auto session = [&](rt::Batcher* b) { return NewSession(*m, b); };
  constexpr int kSessions = 3;
  std::vector<std::vector<int32_t>> prompts(kSessions);
  for (int i = 0; i < kSessions; ++i) {
    const size_t n = size_t(i == 2 ? 130 : 10 + 30 * i);  // 10, 40, 130 tokens: one or two chunks
    for (size_t j = 0; j < n; ++j) prompts[size_t(i)].push_back(200 + int32_t((j * 7919 + size_t(i) * 104729) % 9000));
  }
  const int32_t next = 4242;
  std::vector<std::vector<float>> want(kSessions, std::vector<float>(2 * nv));
  for (int i = 0; i < kSessions; ++i) {
    std::unique_ptr<rt::Session> s = session(nullptr);
    ASSERT_TRUE(s->Eval(prompts[size_t(i)].data(), prompts[size_t(i)].size(), want[size_t(i)].data()).ok());
    ASSERT_TRUE(s->Eval(&next, 1, want[size_t(i)].data() + nv).ok());
  }
  std::unique_ptr<rt::Batcher> b;
  ASSERT_TRUE(rt::Batcher::Create(*m, 8, 0, &b).ok());
  std::unique_ptr<rt::Session> busy = session(b.get());
  const int32_t start[3] = {1, 504, 3458};
  ASSERT_TRUE(busy->Eval(start, 3, nullptr).ok());
  std::atomic<bool> stop{false};
  std::thread decoder([&] {  // another session decoding meanwhile
    for (int32_t t = 0; !stop.load() && busy->n_past() < 64; ++t) {
      const int32_t tok = 300 + t % 97;
      EXPECT_TRUE(busy->Eval(&tok, 1, nullptr).ok());
    }
  });
  std::vector<std::unique_ptr<rt::Session>> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(session(b.get()));
  std::vector<std::vector<float>> got(kSessions, std::vector<float>(2 * nv));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kSessions) std::this_thread::yield();
      rt::Session& s = *sessions[size_t(i)];
      EXPECT_TRUE(s.Eval(prompts[size_t(i)].data(), prompts[size_t(i)].size(), got[size_t(i)].data()).ok());
      EXPECT_TRUE(s.Eval(&next, 1, got[size_t(i)].data() + nv).ok());
    });
  }
  for (auto& t : threads) t.join();
  stop.store(true);
  decoder.join();
  for (int i = 0; i < kSessions; ++i) {
    EXPECT_EQ(std::memcmp(got[size_t(i)].data(), want[size_t(i)].data(), 2 * nv * sizeof(float)), 0) << "session " << i;
  }
  uint64_t chunks = 1;  // the decoding session's prompt
  for (const auto& p : prompts) chunks += (p.size() + rt::Batcher::kPrefillChunk - 1) / rt::Batcher::kPrefillChunk;
  EXPECT_EQ(b->merged_chunks(), chunks) << "every chunk ran inside a step";
  EXPECT_GE(b->max_merged_seen(), 2) << "no step carried two prompts' chunks";
}

TEST(Batcher, RejectsBadSizes) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  std::unique_ptr<rt::Batcher> b;
  EXPECT_EQ(rt::Batcher::Create(*m, 1, 0, &b).code(), Code::kInvalidArgument);
  EXPECT_EQ(rt::Batcher::Create(*m, rt::Batcher::kMaxBatchLimit + 1, 0, &b).code(), Code::kInvalidArgument);
  EXPECT_EQ(b, nullptr);
}

}  // namespace
}  // namespace zf

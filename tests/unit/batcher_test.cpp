// runtime::Batcher: concurrent sessions' decode steps are coalesced into batched steps (the C
// API tests check the results bit for bit; this checks that batching happens at all) and the
// worker's arguments are validated.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/batcher.h"
#include "runtime/session.h"

namespace zf {
namespace {

TEST(Batcher, ConcurrentDecodesShareSteps) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  model::LoadOptions lo;
  lo.n_threads = 2;
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, lo, &m).ok());
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

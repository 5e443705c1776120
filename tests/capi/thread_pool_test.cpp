// One thread pool per model: sessions are sequence state, not threads. However many sessions a
// model has, the process runs the model's n_threads - 1 workers once; sessions used from
// several threads at once take turns on that pool and compute exactly what each computes alone.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

// Threads of this process (entries of /proc/self/task).
int CountThreads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

ModelPtr LoadWithThreads(const std::string& path, int32_t n_threads) {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.n_threads = n_threads;
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_OK) << zf_last_error();
  return ModelPtr(m);
}

const int32_t kPrompt[] = {1, 504, 3458, 282, 4649, 314, 253, 1345, 30, 2};

// The prompt, then three single tokens: the logits after each (n_vocab floats apiece).
std::vector<float> EvalSteps(zf_session* s, size_t n_vocab) {
  std::vector<float> out(4 * n_vocab);
  EXPECT_EQ(zf_session_eval(s, kPrompt, sizeof kPrompt / sizeof kPrompt[0], out.data(), n_vocab), ZF_OK)
      << zf_last_error();
  for (int32_t i = 1; i < 4; ++i) {
    const int32_t t = 300 + 17 * i;
    EXPECT_EQ(zf_session_eval(s, &t, 1, out.data() + size_t(i) * n_vocab, n_vocab), ZF_OK) << zf_last_error();
  }
  return out;
}

size_t Vocab(zf_model* m) {
  zf_model_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return size_t(s.n_vocab);
}

TEST(SharedThreads, SessionsDoNotAddThreads) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  if (CountThreads() == 0) GTEST_SKIP() << "/proc/self/task is not readable here";
  ModelPtr m = LoadWithThreads(path, 3);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  std::vector<SessionPtr> sessions;
  sessions.push_back(NewSession(m.get(), 256));
  EvalSteps(sessions[0].get(), nv);
  const int with_one = CountThreads();
  for (int i = 0; i < 8; ++i) {
    sessions.push_back(NewSession(m.get(), 256));
    EvalSteps(sessions.back().get(), nv);
  }
  EXPECT_EQ(CountThreads(), with_one) << "nine sessions of one model run more threads than one";
  // A session asking for another thread count than the model's gets workers of its own.
  {
    SessionPtr other = NewSession(m.get(), 256, 4);
    EvalSteps(other.get(), nv);
    EXPECT_EQ(CountThreads(), with_one + 3);
  }
  EXPECT_EQ(CountThreads(), with_one);
}

TEST(SharedThreads, ConcurrentSessionsComputeWhatEachDoesAlone) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = LoadWithThreads(path, 2);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  std::vector<float> want;
  {
    SessionPtr s = NewSession(m.get(), 256);
    want = EvalSteps(s.get(), nv);
  }
  constexpr int kThreads = 4;
  std::vector<SessionPtr> sessions;
  for (int i = 0; i < kThreads; ++i) sessions.push_back(NewSession(m.get(), 256));
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { got[size_t(i)] = EvalSteps(sessions[size_t(i)].get(), nv); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(got[size_t(i)].size(), want.size());
    EXPECT_EQ(std::memcmp(got[size_t(i)].data(), want.data(), want.size() * sizeof(float)), 0)
        << "session " << i << " on the shared pool differs from a session alone";
  }
}

}  // namespace

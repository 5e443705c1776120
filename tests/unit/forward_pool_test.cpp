// model::ForwardPool: a model's sessions hold sequence state only and borrow the forward
// contexts (backend scratch + activation buffers) for their steps. Sessions evaluated one after
// the other share one context and still compute exactly what each computes alone; steps run at
// once get contexts of their own; batched sessions' prompts share the batching worker's, whose
// decode steps run on a context it holds while it lives; embedding calls borrow one too.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "common/test_models.h"
#include "model/forward_pool.h"
#include "model/model.h"
#include "runtime/batcher.h"
#include "runtime/embedder.h"
#include "runtime/session.h"

namespace zf {
namespace {

std::unique_ptr<model::Model> Load(const std::string& path) {
  model::LoadOptions lo;
  lo.n_threads = 2;
  std::unique_ptr<model::Model> m;
  EXPECT_TRUE(model::Model::Load(path, lo, &m).ok());
  return m;
}

std::unique_ptr<rt::Session> NewSession(const model::Model& m, int32_t n_ctx = 256) {
  rt::SessionOptions so;
  so.n_ctx = n_ctx;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(m, so, &s).ok());
  return s;
}

// Session i's prompt: its own tokens, of its own length (rows of other lengths in the same
// buffers would show through if a context kept something of the previous sequence).
std::vector<int32_t> Prompt(int i) {
  std::vector<int32_t> p = {1};
  for (int t = 0; t < 5 + 3 * i; ++t) p.push_back(200 + 31 * i + 7 * t);
  return p;
}

// The logits after the prompt and after each of three more tokens.
std::vector<float> Alone(const model::Model& m, int i) {
  std::unique_ptr<rt::Session> s = NewSession(m);
  const std::vector<int32_t> p = Prompt(i);
  std::vector<float> out;
  EXPECT_TRUE(s->EvalKeepLogits(p.data(), p.size()).ok());
  out.insert(out.end(), s->last_logits(), s->last_logits() + m.desc().n_vocab);
  for (int step = 0; step < 3; ++step) {
    const int32_t t = 400 + 13 * i + step;
    EXPECT_TRUE(s->EvalKeepLogits(&t, 1).ok());
    out.insert(out.end(), s->last_logits(), s->last_logits() + m.desc().n_vocab);
  }
  return out;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ForwardPool, InterleavedSessionsShareOneContext) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = Load(path);
  ASSERT_TRUE(m);
  constexpr int kSessions = 8;
  std::vector<std::vector<float>> want(kSessions);
  for (int i = 0; i < kSessions; ++i) want[size_t(i)] = Alone(*m, i);
  ASSERT_EQ(m->forwards()->size(), 1u);

  std::vector<std::unique_ptr<rt::Session>> sessions;
  std::vector<std::vector<float>> got(kSessions);
  const size_t nv = size_t(m->desc().n_vocab);
  for (int i = 0; i < kSessions; ++i) {
    sessions.push_back(NewSession(*m));
    const std::vector<int32_t> p = Prompt(i);
    ASSERT_TRUE(sessions.back()->EvalKeepLogits(p.data(), p.size()).ok());
    got[size_t(i)].assign(sessions.back()->last_logits(), sessions.back()->last_logits() + nv);
  }
  for (int step = 0; step < 3; ++step) {  // round robin: every step on a context another session used last
    for (int i = 0; i < kSessions; ++i) {
      const int32_t t = 400 + 13 * i + step;
      ASSERT_TRUE(sessions[size_t(i)]->EvalKeepLogits(&t, 1).ok());
      got[size_t(i)].insert(got[size_t(i)].end(), sessions[size_t(i)]->last_logits(),
                            sessions[size_t(i)]->last_logits() + nv);
    }
  }
  for (int i = 0; i < kSessions; ++i) EXPECT_TRUE(Same(got[size_t(i)], want[size_t(i)])) << "session " << i;
  EXPECT_EQ(m->forwards()->size(), 1u) << "sessions used one after the other need one context";
  EXPECT_EQ(m->forwards()->lent(), 0u);
}

TEST(ForwardPool, ConcurrentStepsGetContextsOfTheirOwn) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = Load(path);
  ASSERT_TRUE(m);
  constexpr int kThreads = 4;
  std::vector<std::vector<float>> want(kThreads), got(kThreads);
  for (int i = 0; i < kThreads; ++i) want[size_t(i)] = Alone(*m, i);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back([&, i] { got[size_t(i)] = Alone(*m, i); });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_TRUE(Same(got[size_t(i)], want[size_t(i)])) << "thread " << i;
  EXPECT_GE(m->forwards()->size(), 1u);
  EXPECT_LE(m->forwards()->size(), size_t(kThreads)) << "at most one context per step run at once";
  EXPECT_EQ(m->forwards()->lent(), 0u);
}

TEST(ForwardPool, BatchedPromptsShareTheWorkersContext) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = Load(path);
  ASSERT_TRUE(m);
  std::unique_ptr<rt::Batcher> b;
  ASSERT_TRUE(rt::Batcher::Create(*m, 8, 0, &b).ok());
  constexpr int kSessions = 4;
  std::vector<std::unique_ptr<rt::Session>> sessions;
  for (int i = 0; i < kSessions; ++i) {
    sessions.push_back(NewSession(*m, 512));
    sessions.back()->set_batcher(b.get());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int32_t> p(200);  // two prefill chunks each, all sessions at once
      for (size_t t = 0; t < p.size(); ++t) p[t] = int32_t(100 + (int(t) * 37 + i * 11) % 3000);
      EXPECT_TRUE(sessions[size_t(i)]->EvalKeepLogits(p.data(), p.size()).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(m->forwards()->size(), 2u) << "the worker's decode context, and one for every batched prompt";
  EXPECT_EQ(m->forwards()->lent(), 1u) << "the worker holds its decode context while it lives";
  sessions.clear();
  b.reset();
  EXPECT_EQ(m->forwards()->lent(), 0u);
  ASSERT_TRUE(rt::Batcher::Create(*m, 8, 0, &b).ok());
  EXPECT_EQ(m->forwards()->size(), 2u) << "a new worker takes the decode context back";
}

// Embedding calls one after the other borrow one context (sized for their steps, apart from the
// sessions'), give it back, and compute the same vectors on it every time.
TEST(ForwardPool, EmbeddingCallsReuseOneContext) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m = Load(path);
  ASSERT_TRUE(m);
  const std::vector<std::vector<int32_t>> inputs = {Prompt(0), Prompt(1), Prompt(2)};
  rt::EmbedOptions o;
  int32_t dim = 0;
  ASSERT_TRUE(rt::EmbedDimension(*m, o, &dim).ok());
  std::vector<float> first(inputs.size() * size_t(dim)), again(first.size()), alone(static_cast<size_t>(dim));
  ASSERT_TRUE(rt::Embed(*m, inputs, o, first.data()).ok());
  EXPECT_EQ(m->forwards()->size(), 1u);
  EXPECT_EQ(m->forwards()->lent(), 0u);
  ASSERT_TRUE(rt::Embed(*m, inputs, o, again.data()).ok());
  EXPECT_TRUE(Same(first, again));
  ASSERT_TRUE(rt::Embed(*m, {inputs[1]}, o, alone.data()).ok());  // a step of one input
  EXPECT_TRUE(std::memcmp(alone.data(), first.data() + dim, size_t(dim) * sizeof(float)) == 0);
  EXPECT_EQ(m->forwards()->size(), 1u) << "calls one after the other share one context";
  std::unique_ptr<rt::Session> s = NewSession(*m);  // a session's steps: a context of their own kind
  const std::vector<int32_t> p = Prompt(0);
  ASSERT_TRUE(s->EvalKeepLogits(p.data(), p.size()).ok());
  EXPECT_EQ(m->forwards()->size(), 2u);
}

}  // namespace
}  // namespace zf

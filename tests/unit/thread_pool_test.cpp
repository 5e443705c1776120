// engine::ThreadPool and the process's shared pools: every model with the same thread count runs
// on one set of workers (a server with several models does not oversubscribe the cores), callers
// take turns in order (one model's decode steps cannot starve another's), and two models stepping
// at once on the shared pool compute exactly what each computes alone.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/test_models.h"
#include "engine/engine.h"
#include "engine/thread_pool.h"
#include "model/model.h"
#include "runtime/session.h"

namespace zf {
namespace {

int ThreadsInProcess() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST(ThreadPool, SharedPoolIsOnePerThreadCountWhileHeld) {
  std::shared_ptr<engine::ThreadPool> a = engine::SharedThreadPool(3);
  std::shared_ptr<engine::ThreadPool> b = engine::SharedThreadPool(3);
  std::shared_ptr<engine::ThreadPool> c = engine::SharedThreadPool(2);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(a->size(), 3);
  EXPECT_EQ(c->size(), 2);
  std::weak_ptr<engine::ThreadPool> gone = a;
  a.reset();
  EXPECT_FALSE(gone.expired()) << "b still holds it";
  b.reset();
  EXPECT_TRUE(gone.expired()) << "the last holder lets the workers go";
}

// Callers are served in the order they called, and a caller that just finished an op queues
// behind those already waiting: A's op holds the pool while B, then C call; A calls again as soon
// as its op returns. A plain mutex let A take the pool again before the woken B ran, so one
// model's decode step could hold the cores for many ops while another model's step waited.
TEST(ThreadPool, ParallelForEachRunsEveryIndexOnce) {
  // Every index exactly once, each on a thread index below size() (callers keep per-thread
  // scratch by it), for fewer, as many and more tasks than threads.
  engine::ThreadPool pool(3);
  for (int64_t n : {0, 1, 3, 1000}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    std::atomic<bool> bad_thread{false};
    pool.ParallelForEach(n, [&](int64_t i, int32_t ith) {
      seen[static_cast<size_t>(i)].fetch_add(1);
      if (ith < 0 || ith >= pool.size()) bad_thread = true;
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n;
    EXPECT_FALSE(bad_thread.load());
  }
}

TEST(ThreadPool, CallersAreServedInOrder) {
  std::shared_ptr<engine::ThreadPool> pool = engine::SharedThreadPool(2);
  std::mutex mu;
  std::vector<char> order;
  std::atomic<bool> release_a{false};
  struct Op {
    char name;
    std::mutex* mu;
    std::vector<char>* order;
    std::atomic<bool>* wait_for;  // the op (on thread 0) holds the pool until this is set
    std::atomic<int> threads{0};
  };
  auto fn = [](void* p, int32_t ith, int32_t) {
    Op* o = static_cast<Op*>(p);
    if (ith == 0) {
      while (o->wait_for != nullptr && !o->wait_for->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> lock(*o->mu);
      o->order->push_back(o->name);
    }
    o->threads.fetch_add(1);
  };
  std::thread a([&] {
    Op first{'a', &mu, &order, &release_a};
    pool->Run(fn, &first);
    Op again{'A', &mu, &order, nullptr};
    pool->Run(fn, &again);
    EXPECT_EQ(first.threads.load(), 2);
    EXPECT_EQ(again.threads.load(), 2);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a holds the pool
  std::thread b([&] {
    Op op{'b', &mu, &order, nullptr};
    pool->Run(fn, &op);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b waits
  std::thread c([&] {
    Op op{'c', &mu, &order, nullptr};
    pool->Run(fn, &op);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // c waits behind b
  release_a = true;
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(std::string(order.begin(), order.end()), "abcA");
}

std::unique_ptr<model::Model> Load(const std::string& path) {
  model::LoadOptions lo;
  lo.n_threads = 2;
  std::unique_ptr<model::Model> m;
  EXPECT_TRUE(model::Model::Load(path, lo, &m).ok());
  return m;
}

// The logits after a prompt and eight more tokens.
std::vector<float> Generate(const model::Model& m, int seed) {
  rt::SessionOptions so;
  so.n_ctx = 128;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(m, so, &s).ok());
  std::vector<int32_t> p = {1};
  for (int t = 0; t < 12; ++t) p.push_back(300 + 17 * seed + 5 * t);
  std::vector<float> out;
  EXPECT_TRUE(s->EvalKeepLogits(p.data(), p.size()).ok());
  for (int step = 0; step < 8; ++step) {
    const int32_t t = 700 + 11 * seed + step;
    EXPECT_TRUE(s->EvalKeepLogits(&t, 1).ok());
    out.insert(out.end(), s->last_logits(), s->last_logits() + m.desc().n_vocab);
  }
  return out;
}

TEST(ThreadPool, ModelsShareOnePoolAndStayExact) {
  // Two loads of one file are two models (their own engines and weights), and cheap under TSan.
  ZF_REQUIRE_MODEL(smollm2, "smollm2");
  std::unique_ptr<model::Model> a = Load(smollm2);
  std::unique_ptr<model::Model> b = Load(smollm2);
  ASSERT_TRUE(a && b);
  const std::vector<float> want_a = Generate(*a, 1);
  const int threads_after_a = ThreadsInProcess();
  const std::vector<float> want_b = Generate(*b, 2);
  EXPECT_EQ(a->engine()->SharedPool(2), b->engine()->SharedPool(2));
  EXPECT_EQ(ThreadsInProcess(), threads_after_a) << "the second model started workers of its own";

  std::vector<float> got_a, got_b;
  std::thread ta([&] { got_a = Generate(*a, 1); });
  std::thread tb([&] { got_b = Generate(*b, 2); });
  ta.join();
  tb.join();
  ASSERT_EQ(got_a.size(), want_a.size());
  ASSERT_EQ(got_b.size(), want_b.size());
  EXPECT_EQ(std::memcmp(got_a.data(), want_a.data(), got_a.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(got_b.data(), want_b.data(), got_b.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace zf

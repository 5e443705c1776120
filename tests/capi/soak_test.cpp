// Soak and concurrency tests of the C API (issue #19) on the real SmolLM2 model: repeated
// load/free and session create/free with flat resident memory (leaks: LSan in the sanitizer
// stage), many sessions generating at once on one model with the sequential run's outputs, and
// cancel from another thread within one token. Counts are short by default (CI); scripts/soak.sh
// --long sets ZF_SOAK_LOADS=1000 ZF_SOAK_SESSIONS=10000.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ZF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZF_SANITIZED 1
#endif
#endif
#ifndef ZF_SANITIZED
#define ZF_SANITIZED 0
#endif
// Under a sanitizer freed memory sits in a quarantine (RSS is no measure of leaks there; LSan
// checks them) and everything runs ~5x slower: shorter defaults, no RSS bound.
constexpr bool kSanitized = ZF_SANITIZED != 0;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : def;
}

// Resident set size in KiB (/proc/self/statm).
long RssKiB() {
  long pages = 0, rss = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    std::fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

zf_model* Load(const std::string& path) {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.device = ZF_DEVICE_CPU;
  p.n_threads = 1;
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_OK) << zf_last_error();
  return m;
}

zf_session* Session(zf_model* m, int32_t n_ctx = 128) {
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  p.n_ctx = n_ctx;
  p.n_threads = 1;
  zf_session* s = nullptr;
  EXPECT_EQ(zf_session_create(m, &p, &s), ZF_OK) << zf_last_error();
  return s;
}

std::string Greedy(zf_session* s, const std::string& prompt, int32_t n) {
  return zf::capitest::GreedyText(s, prompt, n, ZF_GENERATE_IGNORE_EOS);
}

TEST(Soak, LoadFreeCyclesKeepRssFlat) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const int cycles = EnvInt("ZF_SOAK_LOADS", kSanitized ? 6 : 20);
  const int warm = cycles < 10 ? 1 : 5;
  long base = 0;
  for (int i = 0; i < cycles; ++i) {
    zf_model* m = Load(path);
    ASSERT_NE(m, nullptr);
    zf_session* s = Session(m, 32);
    if (i % 10 == 0) EXPECT_FALSE(Greedy(s, "Hi", 2).empty());
    zf_session_free(s);
    zf_model_free(m);
    if (i + 1 == warm) base = RssKiB();
  }
  const long end = RssKiB();
  std::printf("[ soak     ] %d load/free cycles: RSS after free %ld KiB at cycle %d, %ld KiB at the end\n", cycles,
              base, warm, end);
  if (!kSanitized) EXPECT_LT(end - base, 16 * 1024) << "RSS grew by " << (end - base) << " KiB";
}

TEST(Soak, SessionCreateFreeCyclesKeepRssFlat) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const int cycles = EnvInt("ZF_SOAK_SESSIONS", 1000);
  zf_model* m = Load(path);
  ASSERT_NE(m, nullptr);
  long base = 0;
  for (int i = 0; i < cycles; ++i) {
    zf_session* s = Session(m, 64);
    ASSERT_NE(s, nullptr);
    if (i % 500 == 0) EXPECT_FALSE(Greedy(s, "Hi", 1).empty());
    zf_session_free(s);
    if (i == 49) base = RssKiB();
  }
  const long end = RssKiB();
  std::printf("[ soak     ] %d session create/free cycles: RSS %ld KiB at cycle 50, %ld KiB at the end\n", cycles,
              base, end);
  if (!kSanitized) EXPECT_LT(end - base, 8 * 1024) << "RSS grew by " << (end - base) << " KiB";
  zf_model_free(m);
}

// One model, 8 threads x 4 sessions each, all generating at once (each thread interleaves its
// sessions token batch by token batch); every output equals the sequential run's. Under the
// sanitizers (ThreadSanitizer runs it; it took 88 s there) 4 threads x 2 sessions: still every
// session of every thread in the batcher's shared steps at once.
TEST(Soak, EightThreadsWithFourSessionsEachMatchTheSequentialRun) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const int n_threads = kSanitized ? 4 : 8, per_thread = kSanitized ? 2 : 4;
  const int n_tokens = EnvInt("ZF_SOAK_TOKENS", kSanitized ? 3 : 6);
  const std::vector<std::string> prompts = {"The capital of France is", "Once upon a time", "def fibonacci(n):",
                                            "The three primary colors are"};
  zf_model* m = Load(path);
  ASSERT_NE(m, nullptr);
  std::vector<std::string> expected;
  for (int k = 0; k < per_thread; ++k) {
    zf_session* s = Session(m);
    const std::string first = Greedy(s, prompts[size_t(k)], n_tokens);  // (sequenced: operands of + are not)
    expected.push_back(first + "|" + Greedy(s, "", n_tokens));
    zf_session_free(s);
  }
  std::vector<std::string> got(size_t(n_threads * per_thread));
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<zf_session*> ss;
      for (int k = 0; k < per_thread; ++k) ss.push_back(Session(m));
      std::vector<std::string> first(per_thread);
      for (int k = 0; k < per_thread; ++k) first[size_t(k)] = Greedy(ss[size_t(k)], prompts[size_t(k)], n_tokens);
      for (int k = 0; k < per_thread; ++k) {
        got[size_t(t * per_thread + k)] = first[size_t(k)] + "|" + Greedy(ss[size_t(k)], "", n_tokens);
      }
      for (zf_session* s : ss) zf_session_free(s);
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < n_threads; ++t) {
    for (int k = 0; k < per_thread; ++k) EXPECT_EQ(got[size_t(t * per_thread + k)], expected[size_t(k)]) << t << "/" << k;
  }
  zf_model_free(m);
}

// The stream callback waits at its 3rd piece until another thread has called
// zf_session_cancel: the generation must stop at the next token boundary.
TEST(Soak, CancelFromAnotherThreadStopsWithinOneToken) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  zf_model* m = Load(path);
  zf_session* s = Session(m, 512);
  struct Ctx {
    std::mutex mu;
    std::condition_variable cv;
    int pieces = 0;
    bool asked = false, cancelled = false;
    int pieces_at_cancel = 0;
  } ctx;
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lk(ctx.mu);
    ctx.cv.wait(lk, [&] { return ctx.asked; });
    EXPECT_EQ(zf_session_cancel(s), ZF_OK);
    ctx.cancelled = true;
    ctx.cv.notify_all();
  });
  const auto cb = [](void* ud, const char*, size_t, int32_t) -> int32_t {
    Ctx* c = static_cast<Ctx*>(ud);
    std::unique_lock<std::mutex> lk(c->mu);
    if (++c->pieces == 3) {
      c->asked = true;
      c->cv.notify_all();
      c->cv.wait(lk, [&] { return c->cancelled; });
      c->pieces_at_cancel = c->pieces;
    }
    return 0;
  };
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.temperature = 0.0f;
  g.max_tokens = 200;
  g.flags = ZF_GENERATE_IGNORE_EOS;
  zf_generate_result r;
  r.struct_size = sizeof r;
  const std::string prompt = "Count from one to one hundred: one, two, three,";
  ASSERT_EQ(zf_generate(s, prompt.data(), prompt.size(), &g, cb, &ctx, &r), ZF_OK) << zf_last_error();
  canceller.join();
  EXPECT_EQ(r.stop_reason, ZF_STOP_CANCELLED);
  EXPECT_EQ(ctx.pieces_at_cancel, 3);
  EXPECT_LE(r.n_generated, ctx.pieces_at_cancel + 1) << "more than one token after the cancel";
  zf_session_free(s);
  zf_model_free(m);
}

}  // namespace

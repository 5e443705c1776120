// Pull-style generation (zf_generate_begin / zf_generation_next / _result / _free): same output
// as zf_generate, the buffer protocol, cancel, freeing mid-stream, and argument errors.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

Pushed Push(zf_session* s, const std::string& prompt, const zf_generate_params& g, zf_generate_result* r) {
  Pushed c;
  r->struct_size = sizeof *r;
  EXPECT_EQ(zf_generate(s, prompt.data(), prompt.size(), &g, CollectPieces, &c, r), ZF_OK) << zf_last_error();
  return c;
}

// Pulls up to `limit` pieces (all when < 0) with a buffer of `cap` bytes, growing it on demand.
Pushed Pull(zf_generation* gen, size_t cap = 64, int limit = -1, bool* finished = nullptr) {
  Pushed c;
  std::vector<char> buf(cap);
  if (finished) *finished = false;
  while (limit < 0 || int(c.pieces.size()) < limit) {
    size_t len = 0;
    int32_t token = 0, done = 0;
    zf_status st = zf_generation_next(gen, buf.data(), buf.size(), &len, &token, &done);
    if (st == ZF_ERR_BUFFER_TOO_SMALL) {
      EXPECT_GT(len, buf.size());
      buf.resize(len);
      continue;
    }
    EXPECT_EQ(st, ZF_OK) << zf_last_error();
    if (st != ZF_OK) break;
    if (done) {
      EXPECT_EQ(len, 0u);
      EXPECT_EQ(token, -1);
      if (finished) *finished = true;
      break;
    }
    EXPECT_GT(len, 0u);
    c.pieces.emplace_back(buf.data(), len);
    c.tokens.push_back(token);
  }
  return c;
}

zf_generate_result Result(const zf_generation* gen) {
  zf_generate_result r;
  r.struct_size = sizeof r;
  EXPECT_EQ(zf_generation_result(gen, &r), ZF_OK) << zf_last_error();
  return r;
}

class CapiPull : public ::testing::TestWithParam<const char*> {};

TEST_P(CapiPull, GreedyPullEqualsGenerateAcrossTurns) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  const zf_generate_params g = Greedy(40);
  const std::vector<std::string> turns = {"The capital of France is", " And of Italy?"};
  for (const std::string& prompt : turns) {
    zf_generate_result pushed_r;
    Pushed pushed = Push(a.get(), prompt, g, &pushed_r);
    zf_generation* raw = nullptr;
    ASSERT_EQ(zf_generate_begin(b.get(), prompt.data(), prompt.size(), &g, &raw), ZF_OK) << zf_last_error();
    GenerationPtr gen(raw);
    bool finished = false;
    Pushed pulled = Pull(gen.get(), 64, -1, &finished);
    ASSERT_TRUE(finished);
    EXPECT_EQ(pulled.pieces, pushed.pieces);  // the same pieces, split at the same places
    EXPECT_EQ(pulled.tokens, pushed.tokens);
    const zf_generate_result r = Result(gen.get());
    EXPECT_EQ(r.stop_reason, pushed_r.stop_reason);
    EXPECT_EQ(r.n_prompt, pushed_r.n_prompt);
    EXPECT_EQ(r.n_generated, pushed_r.n_generated);
    EXPECT_GT(r.n_generated, 0);
    // Done is sticky.
    size_t len = 1;
    int32_t done = 0;
    EXPECT_EQ(zf_generation_next(gen.get(), nullptr, 0, &len, nullptr, &done), ZF_OK);
    EXPECT_EQ(done, 1);
    gen.reset();
    int32_t na = 0, nb = 0;
    zf_session_n_past(a.get(), &na);
    zf_session_n_past(b.get(), &nb);
    EXPECT_EQ(na, nb);
  }
}

TEST_P(CapiPull, TinyBufferLosesNothing) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  const zf_generate_params g = Greedy(24);
  const std::string prompt = "Write a word in Japanese:";
  zf_generate_result r;
  Pushed pushed = Push(a.get(), prompt, g, &r);
  zf_generation* raw = nullptr;
  ASSERT_EQ(zf_generate_begin(b.get(), prompt.data(), prompt.size(), &g, &raw), ZF_OK);
  GenerationPtr gen(raw);
  // cap 0 first: every piece goes through BUFFER_TOO_SMALL then a retry with the exact size.
  size_t len = 0;
  int32_t done = 0;
  ASSERT_EQ(zf_generation_next(gen.get(), nullptr, 0, &len, nullptr, &done), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(done, 0);
  ASSERT_GT(len, 0u);
  EXPECT_NE(std::string(zf_last_error()).find("does not fit"), std::string::npos);
  Pushed pulled = Pull(gen.get(), 1);
  EXPECT_EQ(pulled.pieces, pushed.pieces);
}

TEST_P(CapiPull, StopStringsAndMaxTokensMatchGenerate) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  zf_generate_params g = Greedy(64);
  const char* stops[] = {"."};
  g.stop = stops;
  g.n_stop = 1;
  const std::string prompt = "Once upon a time";
  zf_generate_result pr;
  Pushed pushed = Push(a.get(), prompt, g, &pr);
  zf_generation* raw = nullptr;
  ASSERT_EQ(zf_generate_begin(b.get(), prompt.data(), prompt.size(), &g, &raw), ZF_OK);
  GenerationPtr gen(raw);
  Pushed pulled = Pull(gen.get());
  EXPECT_EQ(pulled.pieces, pushed.pieces);
  EXPECT_EQ(Result(gen.get()).stop_reason, pr.stop_reason);
}

TEST_P(CapiPull, CancelStopsAtTheNextTokenBoundary) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  zf_generate_params g = Greedy(-1);
  g.flags = ZF_GENERATE_IGNORE_EOS;
  zf_generation* raw = nullptr;
  ASSERT_EQ(zf_generate_begin(s.get(), "Tell me a story", 15, &g, &raw), ZF_OK);
  GenerationPtr gen(raw);
  Pushed first = Pull(gen.get(), 64, 3);
  ASSERT_EQ(first.pieces.size(), 3u);
  std::thread([&] { EXPECT_EQ(zf_session_cancel(s.get()), ZF_OK); }).join();
  bool finished = false;
  Pushed rest = Pull(gen.get(), 64, -1, &finished);
  EXPECT_TRUE(finished);
  EXPECT_TRUE(rest.pieces.size() <= 1u) << rest.pieces.size();  // at most a held-back tail
  const zf_generate_result r = Result(gen.get());
  EXPECT_EQ(r.stop_reason, ZF_STOP_CANCELLED);
  EXPECT_LE(r.n_generated, 4);
  gen.reset();
  // The request was consumed: the session generates again.
  zf_generate_result r2;
  zf_generate_params g4 = Greedy(4);
  g4.flags = ZF_GENERATE_IGNORE_EOS;
  Pushed again = Push(s.get(), " The end.", g4, &r2);
  EXPECT_EQ(r2.stop_reason, ZF_STOP_MAX_TOKENS);
  EXPECT_EQ(r2.n_generated, 4);
}

TEST_P(CapiPull, FreeMidStreamLeavesTheSessionConsistent) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  const std::string prompt = "List the planets of the solar system:";
  // Reference: a callback that stops after 5 pieces, then a second turn.
  struct Stopper {
    Pushed p;
  } st;
  auto stop5 = [](void* ud, const char* piece, size_t len, int32_t token) -> int32_t {
    Pushed* c = &static_cast<Stopper*>(ud)->p;
    c->pieces.emplace_back(piece, len);
    c->tokens.push_back(token);
    return c->pieces.size() >= 5 ? 1 : 0;
  };
  const zf_generate_params g = Greedy(40);
  zf_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(zf_generate(a.get(), prompt.data(), prompt.size(), &g, stop5, &st, &r), ZF_OK);
  ASSERT_EQ(r.stop_reason, ZF_STOP_CALLBACK);
  int32_t na = 0, nb = 0;
  zf_session_n_past(a.get(), &na);
  zf_generate_result ra;
  Pushed next_a = Push(a.get(), " Then", g, &ra);

  zf_generation* raw = nullptr;
  ASSERT_EQ(zf_generate_begin(b.get(), prompt.data(), prompt.size(), &g, &raw), ZF_OK);
  Pushed five = Pull(raw, 64, 5);
  EXPECT_EQ(five.pieces, st.p.pieces);
  // While in progress the session refuses other calls (but not cancel / n_past).
  zf_generate_result busy;
  busy.struct_size = sizeof busy;
  EXPECT_EQ(zf_generate(b.get(), "x", 1, &g, nullptr, nullptr, &busy), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("in progress"), std::string::npos);
  zf_generation* other = nullptr;
  EXPECT_EQ(zf_generate_begin(b.get(), "x", 1, &g, &other), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(other, nullptr);
  EXPECT_EQ(zf_session_reset(b.get()), ZF_ERR_INVALID_ARGUMENT);
  int32_t n_past = 0;
  EXPECT_EQ(zf_session_n_past(b.get(), &n_past), ZF_OK);
  zf_generation_free(raw);  // mid-stream
  zf_session_n_past(b.get(), &nb);
  EXPECT_EQ(na, nb);
  zf_generate_result rb;
  Pushed next_b = Push(b.get(), " Then", g, &rb);
  EXPECT_EQ(next_b.pieces, next_a.pieces);  // the freed generation's last token was kept
  EXPECT_GT(rb.n_generated, 0);
}

TEST_P(CapiPull, SessionAndGenerationFreeInEitherOrder) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  zf_session* s = NewSession(m.get()).release();
  const zf_generate_params g = Greedy(8);
  zf_generation* gen = nullptr;
  ASSERT_EQ(zf_generate_begin(s, "Hi", 2, &g, &gen), ZF_OK);
  Pull(gen, 64, 2);
  zf_session_free(s);  // the generation keeps the memory alive but the session is gone
  size_t len = 0;
  int32_t done = 0;
  char buf[64];
  EXPECT_EQ(zf_generation_next(gen, buf, sizeof buf, &len, nullptr, &done), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("freed"), std::string::npos);
  zf_generate_result r;
  r.struct_size = sizeof r;
  EXPECT_EQ(zf_generation_result(gen, &r), ZF_OK);
  zf_generation_free(gen);
}

TEST_P(CapiPull, ArgumentErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 64);
  zf_generation* gen = reinterpret_cast<zf_generation*>(0x1);
  const zf_generate_params g = Greedy(4);
  EXPECT_EQ(zf_generate_begin(nullptr, "x", 1, &g, &gen), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gen, nullptr);
  EXPECT_NE(std::string(zf_last_error()).find("session"), std::string::npos);
  EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &g, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generate_begin(s.get(), nullptr, 3, &g, &gen), ZF_ERR_INVALID_ARGUMENT);
  zf_generate_params bad = g;
  bad.temperature = -1.0f;
  EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &bad, &gen), ZF_ERR_INVALID_ARGUMENT);
  bad = g;
  bad.flags = 0x80;
  EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &bad, &gen), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("0x80"), std::string::npos);
  bad = g;
  bad.struct_size = 2;
  EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &bad, &gen), ZF_ERR_INVALID_ARGUMENT);
  bad = g;
  bad.n_stop = 1;
  bad.stop = nullptr;
  EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &bad, &gen), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generate_begin(s.get(), "\xff\xfe", 2, &g, &gen), ZF_ERR_INVALID_UTF8);
  zf_generate_params raw_prompt = g;
  raw_prompt.flags = ZF_GENERATE_NO_SPECIAL;  // no BOS either: nothing at all to evaluate
  EXPECT_EQ(zf_generate_begin(s.get(), "", 0, &raw_prompt, &gen), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("nothing to continue"), std::string::npos);
  const std::string long_prompt(2000, 'a');
  EXPECT_EQ(zf_generate_begin(s.get(), long_prompt.data(), long_prompt.size(), &g, &gen), ZF_ERR_CONTEXT_FULL);
  EXPECT_NE(std::string(zf_last_error()).find("does not fit"), std::string::npos);
  EXPECT_EQ(gen, nullptr);
  int32_t n_past = -1;
  zf_session_n_past(s.get(), &n_past);
  EXPECT_EQ(n_past, 0);

  size_t len = 0;
  int32_t done = 0;
  char buf[8];
  EXPECT_EQ(zf_generation_next(nullptr, buf, sizeof buf, &len, nullptr, &done), ZF_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(zf_generate_begin(s.get(), "Hi", 2, nullptr, &gen), ZF_OK) << zf_last_error();
  EXPECT_EQ(zf_generation_next(gen, buf, sizeof buf, nullptr, nullptr, &done), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generation_next(gen, buf, sizeof buf, &len, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generation_next(gen, nullptr, 8, &len, nullptr, &done), ZF_ERR_INVALID_ARGUMENT);
  zf_generate_result r;
  r.struct_size = 0;
  EXPECT_EQ(zf_generation_result(gen, &r), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generation_result(nullptr, &r), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generation_result(gen, nullptr), ZF_ERR_INVALID_ARGUMENT);
  zf_generation_free(gen);
  zf_generation_free(nullptr);
}

INSTANTIATE_TEST_SUITE_P(RealModels, CapiPull, ::testing::Values("gemma3", "smollm2"));

}  // namespace

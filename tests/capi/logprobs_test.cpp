// Token log-probabilities (zf_generate_params.n_logprobs, zf_session_logprobs): the values are
// the log-softmax of the logits zf_session_eval returns, greedy picks the top alternative, every
// delivered token is reported once (a piece may carry several), the callback and the pull API
// report the same values, and the parameter and buffer errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

// One piece and the logprob entries zf_session_logprobs gave for it.
struct Piece {
  std::string text;
  int32_t token = -1;
  std::vector<zf_token_logprob> lp;
  size_t stride = 0;
};

std::vector<zf_token_logprob> Logprobs(const zf_session* s, size_t* stride) {
  size_t n = 0;
  zf_status st = zf_session_logprobs(s, nullptr, 0, &n, stride);
  std::vector<zf_token_logprob> out(n);
  if (n == 0) {
    EXPECT_EQ(st, ZF_OK) << zf_last_error();
    return out;
  }
  EXPECT_EQ(st, ZF_ERR_BUFFER_TOO_SMALL);
  size_t n2 = 0;
  EXPECT_EQ(zf_session_logprobs(s, out.data(), out.size(), &n2, stride), ZF_OK) << zf_last_error();
  EXPECT_EQ(n2, n);
  return out;
}

struct PushCtx {
  zf_session* session;
  std::vector<Piece> pieces;
};

int32_t OnPiece(void* ud, const char* piece, size_t len, int32_t token) {
  PushCtx* c = static_cast<PushCtx*>(ud);
  Piece p;
  p.text.assign(piece, len);
  p.token = token;
  p.lp = Logprobs(c->session, &p.stride);
  c->pieces.push_back(std::move(p));
  return 0;
}

std::vector<Piece> Push(zf_session* s, const std::string& prompt, const zf_generate_params& g, zf_generate_result* r) {
  PushCtx c{s, {}};
  r->struct_size = sizeof *r;
  EXPECT_EQ(zf_generate(s, prompt.data(), prompt.size(), &g, OnPiece, &c, r), ZF_OK) << zf_last_error();
  size_t n = 1, stride = 0;
  EXPECT_EQ(zf_session_logprobs(s, nullptr, 0, &n, &stride), ZF_OK);
  EXPECT_EQ(n, 0u);  // nothing after the generation ended
  return c.pieces;
}

std::vector<Piece> Pull(zf_session* s, const std::string& prompt, const zf_generate_params& g, zf_generate_result* r) {
  zf_generation* raw = nullptr;
  EXPECT_EQ(zf_generate_begin(s, prompt.data(), prompt.size(), &g, &raw), ZF_OK) << zf_last_error();
  GenerationPtr gen(raw);
  std::vector<Piece> pieces;
  if (raw == nullptr) return pieces;
  size_t n = 1;
  EXPECT_EQ(zf_session_logprobs(s, nullptr, 0, &n, nullptr), ZF_OK);
  EXPECT_EQ(n, 0u);  // nothing before the first piece
  char buf[2];       // tiny: BUFFER_TOO_SMALL keeps the piece and its logprobs
  for (;;) {
    size_t len = 0;
    int32_t token = -1, done = 0;
    zf_status st = zf_generation_next(gen.get(), buf, sizeof buf, &len, &token, &done);
    Piece p;
    if (st == ZF_ERR_BUFFER_TOO_SMALL) {
      const std::vector<zf_token_logprob> before = Logprobs(s, &p.stride);
      std::vector<char> big(len);
      EXPECT_EQ(zf_generation_next(gen.get(), big.data(), big.size(), &len, &token, &done), ZF_OK);
      p.text.assign(big.data(), len);
      p.lp = Logprobs(s, &p.stride);
      EXPECT_EQ(p.lp.size(), before.size());
    } else {
      EXPECT_EQ(st, ZF_OK) << zf_last_error();
      if (st != ZF_OK || done) break;
      p.text.assign(buf, len);
      p.lp = Logprobs(s, &p.stride);
    }
    p.token = token;
    pieces.push_back(std::move(p));
  }
  r->struct_size = sizeof *r;
  EXPECT_EQ(zf_generation_result(gen.get(), r), ZF_OK);
  EXPECT_EQ(zf_session_logprobs(s, nullptr, 0, &n, nullptr), ZF_OK);
  EXPECT_EQ(n, 0u);  // nothing after done
  return pieces;
}

// The generated tokens in order, from the pieces' logprob entries (checking the structure).
std::vector<int32_t> Tokens(const std::vector<Piece>& pieces, size_t want_stride) {
  std::vector<int32_t> tokens;
  for (const Piece& p : pieces) {
    EXPECT_EQ(p.stride, want_stride);
    EXPECT_FALSE(p.lp.empty());
    EXPECT_EQ(p.lp.size() % want_stride, 0u);
    for (size_t i = 0; i + want_stride <= p.lp.size(); i += want_stride) tokens.push_back(p.lp[i].token);
    if (!p.lp.empty()) EXPECT_EQ(p.lp[p.lp.size() - want_stride].token, p.token);  // the piece's token last
  }
  return tokens;
}

double LogSumExp(const std::vector<float>& logits) {
  float mx = -INFINITY;
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - double(mx));
  return double(mx) + std::log(sum);
}

class CapiLogprobs : public ::testing::TestWithParam<const char*> {};

// Greedy: the chosen token is the top alternative, alternatives descend and hold at most all
// the mass, and every value equals the log-softmax of zf_session_eval's logits at that position.
TEST_P(CapiLogprobs, GreedyMatchesEvalLogits) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  zf_generate_params g = Greedy(24);
  g.n_logprobs = 5;
  const std::string prompt = "The capital of France is";
  zf_generate_result r;
  const std::vector<Piece> pieces = Push(a.get(), prompt, g, &r);
  const std::vector<int32_t> tokens = Tokens(pieces, 6);
  ASSERT_GT(r.n_generated, 0);
  EXPECT_EQ(int32_t(tokens.size()), r.n_generated);  // no stop string: every token delivered

  zf_model_summary info;
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_model_info(m.get(), &info), ZF_OK);
  std::vector<int32_t> in(512);
  size_t n_in = 0;
  ASSERT_EQ(zf_tokenize(m.get(), prompt.data(), prompt.size(), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL,
                        in.data(), in.size(), &n_in),
            ZF_OK);
  in.resize(n_in);
  std::vector<float> logits(size_t(info.n_vocab));
  size_t k = 0;
  for (const Piece& p : pieces) {
    for (size_t i = 0; i < p.lp.size(); i += 6, ++k) {
      ASSERT_EQ(zf_session_eval(b.get(), in.data(), in.size(), logits.data(), logits.size()), ZF_OK) << zf_last_error();
      const double log_z = LogSumExp(logits);
      const zf_token_logprob* e = &p.lp[i];
      EXPECT_EQ(e[0].token, e[1].token) << "greedy takes the top alternative, token " << k;
      EXPECT_FLOAT_EQ(e[0].logprob, e[1].logprob);
      double mass = 0;
      for (int j = 0; j < 6; ++j) {
        EXPECT_NEAR(e[j].logprob, double(logits[size_t(e[j].token)]) - log_z, 1e-4) << "token " << k << " entry " << j;
        EXPECT_LE(e[j].logprob, 0.0f);
        if (j > 1) {
          EXPECT_LE(e[j].logprob, e[j - 1].logprob);
          EXPECT_NE(e[j].token, e[j - 1].token);
        }
        if (j > 0) mass += std::exp(double(e[j].logprob));
      }
      EXPECT_LE(mass, 1.0 + 1e-5);
      // Nothing outside the top 5 is more likely than the fifth.
      int better = 0;
      for (float l : logits) better += double(l) - log_z > double(e[5].logprob) + 1e-5 ? 1 : 0;
      EXPECT_LE(better, 4);
      in.assign(1, e[0].token);
    }
  }
}

// The callback and the pull API report the same pieces with the same log-probabilities, also
// with sampling, n_logprobs = ZF_MAX_LOGPROBS, stop strings and across turns. EOS is ignored: a
// sampled first token may be end-of-generation on one kernel path and not on another (AVX-512's
// logits differ from AVX2's in the last bits), and an empty answer compares nothing.
TEST_P(CapiLogprobs, PullEqualsCallback) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get()), b = NewSession(m.get());
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = 40;
  g.seed = 1234;
  g.flags = ZF_GENERATE_IGNORE_EOS;
  g.n_logprobs = ZF_MAX_LOGPROBS;
  const char* stops[] = {".\n\nQ", "!!!"};
  g.stop = stops;
  g.n_stop = 2;
  bool multi = false;
  for (const std::string prompt : {"Write one sentence about cats.", " And dogs?"}) {
    zf_generate_result ra, rb;
    const std::vector<Piece> pushed = Push(a.get(), prompt, g, &ra);
    const std::vector<Piece> pulled = Pull(b.get(), prompt, g, &rb);
    ASSERT_EQ(pushed.size(), pulled.size());
    ASSERT_GT(pushed.size(), 0u);
    for (size_t i = 0; i < pushed.size(); ++i) {
      EXPECT_EQ(pushed[i].text, pulled[i].text) << i;
      EXPECT_EQ(pushed[i].token, pulled[i].token) << i;
      ASSERT_EQ(pushed[i].lp.size(), pulled[i].lp.size()) << i;
      multi = multi || pushed[i].lp.size() > size_t(1 + ZF_MAX_LOGPROBS);
      for (size_t j = 0; j < pushed[i].lp.size(); ++j) {
        EXPECT_EQ(pushed[i].lp[j].token, pulled[i].lp[j].token) << i << "/" << j;
        EXPECT_EQ(pushed[i].lp[j].logprob, pulled[i].lp[j].logprob) << i << "/" << j;
      }
    }
    const std::vector<int32_t> tokens = Tokens(pushed, 1 + ZF_MAX_LOGPROBS);
    EXPECT_LE(int32_t(tokens.size()), ra.n_generated);
    if (ra.stop_reason != ZF_STOP_STRING) EXPECT_EQ(int32_t(tokens.size()), ra.n_generated);
    EXPECT_EQ(ra.n_generated, rb.n_generated);
    // The reported tokens are the conversation's generated tokens, in order.
    std::vector<int32_t> conv(4096);
    size_t n_conv = 0;
    ASSERT_EQ(zf_session_tokens(a.get(), conv.data(), conv.size(), &n_conv), ZF_OK);
    ASSERT_GE(n_conv, tokens.size());
    if (ra.stop_reason != ZF_STOP_STRING) {
      EXPECT_EQ(std::vector<int32_t>(conv.begin() + long(n_conv - tokens.size()), conv.begin() + long(n_conv)), tokens);
    }
  }
  std::printf("[          ] a piece carried several tokens: %s\n", multi ? "yes" : "no");
}

TEST_P(CapiLogprobs, OffAndArgumentErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get());
  zf_generate_params g = Greedy(4);
  EXPECT_EQ(g.n_logprobs, 0);
  EXPECT_EQ(g.reserved1, 0u);
  zf_generate_result r;
  const std::vector<Piece> off = Push(s.get(), "Hello", g, &r);
  ASSERT_FALSE(off.empty());
  for (const Piece& p : off) {
    EXPECT_TRUE(p.lp.empty());
    EXPECT_EQ(p.stride, 0u);
  }
  for (int32_t bad : {-1, ZF_MAX_LOGPROBS + 1, 1000}) {
    g.n_logprobs = bad;
    EXPECT_EQ(zf_generate(s.get(), "x", 1, &g, nullptr, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(zf_last_error()).find("n_logprobs"), std::string::npos) << zf_last_error();
    zf_generation* gen = nullptr;
    EXPECT_EQ(zf_generate_begin(s.get(), "x", 1, &g, &gen), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gen, nullptr);
  }
  g.n_logprobs = 1;
  g.reserved1 = 1;
  EXPECT_EQ(zf_generate(s.get(), "x", 1, &g, nullptr, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("reserved1"), std::string::npos) << zf_last_error();
  g.reserved1 = 0;

  // A caller compiled against the 0.2 struct (64 bytes) gets logprobs off.
  zf_generate_params old = Greedy(2);
  old.struct_size = 64;
  old.n_logprobs = 7;  // beyond struct_size: not read
  const std::vector<Piece> p_old = Push(s.get(), " more", old, &r);
  for (const Piece& p : p_old) EXPECT_TRUE(p.lp.empty());

  // Buffer protocol inside the callback, and argument errors.
  struct Ctx {
    zf_session* s;
    int calls = 0;
  } ctx{s.get()};
  g.n_logprobs = 3;
  ASSERT_EQ(zf_generate(s.get(), " again", 6, &g,
                        [](void* ud, const char*, size_t, int32_t token) -> int32_t {
                          Ctx* c = static_cast<Ctx*>(ud);
                          zf_token_logprob one[1];
                          size_t n = 0, stride = 0;
                          EXPECT_EQ(zf_session_logprobs(c->s, one, 1, &n, &stride), ZF_ERR_BUFFER_TOO_SMALL);
                          EXPECT_EQ(stride, 4u);
                          EXPECT_GE(n, 4u);
                          std::vector<zf_token_logprob> all(n);
                          EXPECT_EQ(zf_session_logprobs(c->s, all.data(), all.size(), &n, nullptr), ZF_OK);
                          EXPECT_EQ(all[n - 4].token, token);
                          ++c->calls;
                          return 0;
                        },
                        &ctx, nullptr),
            ZF_OK)
      << zf_last_error();
  EXPECT_GT(ctx.calls, 0);
  // A callback that stops the generation ends it: nothing is reported afterwards.
  ASSERT_EQ(zf_generate(s.get(), " stop", 5, &g, [](void*, const char*, size_t, int32_t) -> int32_t { return 1; },
                        nullptr, nullptr),
            ZF_OK);
  size_t after = 1;
  EXPECT_EQ(zf_session_logprobs(s.get(), nullptr, 0, &after, nullptr), ZF_OK);
  EXPECT_EQ(after, 0u);
  size_t n = 0;
  zf_token_logprob one[1];
  EXPECT_EQ(zf_session_logprobs(nullptr, one, 1, &n, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_logprobs(s.get(), one, 1, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_logprobs(s.get(), nullptr, 1, &n, nullptr), ZF_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(RealModels, CapiLogprobs, ::testing::Values("gemma3", "smollm2"));

}  // namespace

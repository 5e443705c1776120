// Prompt reuse and session state through the C API: zf_session_tokens / zf_session_truncate
// keep a shared prefix and evaluate only the rest, and a saved state restored into a new
// session continues exactly as the original would; states from another model, truncated or
// corrupted ones are refused without touching the session.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

std::vector<int32_t> Tokens(const zf_session* s) {
  size_t n = 0;
  const zf_status probe = zf_session_tokens(s, nullptr, 0, &n);
  EXPECT_EQ(probe, n == 0 ? ZF_OK : ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<int32_t> t(n);
  EXPECT_EQ(zf_session_tokens(s, t.data(), t.size(), &n), ZF_OK) << zf_last_error();
  return t;
}

std::vector<uint8_t> Save(const zf_session* s) {
  size_t size = 0, written = 0;
  EXPECT_EQ(zf_session_state_size(s, &size), ZF_OK) << zf_last_error();
  std::vector<uint8_t> buf(size);
  EXPECT_EQ(zf_session_state_save(s, buf.data(), 4, &written), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, size);
  EXPECT_EQ(zf_session_state_save(s, buf.data(), buf.size(), &written), ZF_OK) << zf_last_error();
  return buf;
}

TEST(SessionState, RestoredSessionContinuesExactlyLikeTheOriginal) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  SessionPtr a = NewSession(m.get());
  GreedyText(a.get(), "The three primary colors are", 12);  // stops at max_tokens: a pending token
  const std::vector<uint8_t> state = Save(a.get());
  const std::vector<int32_t> conv = Tokens(a.get());
  SessionPtr b = NewSession(m.get());
  ASSERT_EQ(zf_session_state_load(b.get(), state.data(), state.size()), ZF_OK) << zf_last_error();
  EXPECT_EQ(Tokens(b.get()), conv);
  int32_t past_a = 0, past_b = 0;
  zf_session_n_past(a.get(), &past_a);
  zf_session_n_past(b.get(), &past_b);
  EXPECT_EQ(past_a, past_b);
  const std::string next_a = GreedyText(a.get(), " and", 16);
  const std::string next_b = GreedyText(b.get(), " and", 16);
  EXPECT_FALSE(next_a.empty());
  EXPECT_EQ(next_a, next_b);
}

TEST(SessionState, TruncateKeepsThePrefixAndReevaluatesOnlyTheRest) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  const std::string prompt = "Paris is the capital of";
  std::vector<int32_t> toks(64);
  size_t n = 0;
  ASSERT_EQ(zf_tokenize(m.get(), prompt.data(), prompt.size(), ZF_TOKENIZE_ADD_SPECIAL, toks.data(), toks.size(), &n),
            ZF_OK);
  toks.resize(n);
  ASSERT_GE(n, 3u);
  int32_t n_vocab = 0;
  {
    zf_model_summary s{};
    s.struct_size = sizeof s;
    ASSERT_EQ(zf_model_info(m.get(), &s), ZF_OK);
    n_vocab = s.n_vocab;
  }
  // Reference: the prefix, then the last token alone (the decode path).
  SessionPtr ref = NewSession(m.get());
  std::vector<float> want(size_t(n_vocab), 0.0f), got(size_t(n_vocab), 0.0f);
  ASSERT_EQ(zf_session_eval(ref.get(), toks.data(), n - 1, nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval(ref.get(), &toks[n - 1], 1, want.data(), want.size()), ZF_OK);
  // The same prefix, then other tokens, then back to the prefix and the same last token.
  SessionPtr s = NewSession(m.get());
  ASSERT_EQ(zf_session_eval(s.get(), toks.data(), n - 1, nullptr, 0), ZF_OK);
  const int32_t other[3] = {toks[1], toks[2], toks[1]};
  ASSERT_EQ(zf_session_eval(s.get(), other, 3, nullptr, 0), ZF_OK);
  EXPECT_EQ(zf_session_truncate(s.get(), n + 5), ZF_ERR_INVALID_ARGUMENT);  // beyond the conversation
  ASSERT_EQ(zf_session_truncate(s.get(), n - 1), ZF_OK) << zf_last_error();
  EXPECT_EQ(Tokens(s.get()), std::vector<int32_t>(toks.begin(), toks.end() - 1));
  ASSERT_EQ(zf_session_eval(s.get(), &toks[n - 1], 1, got.data(), got.size()), ZF_OK);
  EXPECT_EQ(got, want);  // bit-identical: the kept rows are the same, the rest were overwritten
  ASSERT_EQ(zf_session_truncate(s.get(), 0), ZF_OK);
  EXPECT_TRUE(Tokens(s.get()).empty());
}

TEST(SessionState, ForeignTruncatedOrCorruptStatesAreRefusedAndChangeNothing) {
  ZF_REQUIRE_MODEL(smol, "smollm2");
  ZF_REQUIRE_MODEL(gemma, "gemma3");
  ModelPtr m = Load(smol);
  ModelPtr g = Load(gemma);
  SessionPtr a = NewSession(m.get());
  GreedyText(a.get(), "Hello", 4);
  const std::vector<uint8_t> state = Save(a.get());

  SessionPtr other = NewSession(g.get());
  GreedyText(other.get(), "Hi", 2);
  const std::vector<int32_t> before = Tokens(other.get());
  EXPECT_EQ(zf_session_state_load(other.get(), state.data(), state.size()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("another model"), std::string::npos) << zf_last_error();
  EXPECT_EQ(Tokens(other.get()), before);

  SessionPtr b = NewSession(m.get());
  EXPECT_EQ(zf_session_state_load(b.get(), state.data(), state.size() - 1), ZF_ERR_FORMAT);
  std::vector<uint8_t> bad = state;
  bad[0] = 'X';
  EXPECT_EQ(zf_session_state_load(b.get(), bad.data(), bad.size()), ZF_ERR_FORMAT);
  EXPECT_EQ(zf_session_state_load(b.get(), state.data(), 3), ZF_ERR_FORMAT);
  EXPECT_TRUE(Tokens(b.get()).empty());
  SessionPtr tiny = NewSession(m.get(), 4);  // the state's tokens do not fit
  EXPECT_EQ(zf_session_state_load(tiny.get(), state.data(), state.size()), ZF_ERR_CONTEXT_FULL);
  EXPECT_EQ(zf_session_state_load(nullptr, state.data(), state.size()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_state_load(b.get(), nullptr, 0), ZF_ERR_INVALID_ARGUMENT);
}

}  // namespace

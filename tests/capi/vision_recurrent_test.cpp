// Embedding rows (an image's) through a model with recurrent layers: the synthesized LFM2 of the
// fixture vision.models (scripts/synth_families.py: short-convolution and attention layers).
// The rows pass the short convolutions in order like token rows; zf_session_truncate() into or
// after the rows evaluates them again from the session's copy (a recurrent model rolls back to a
// state checkpoint and replays), bit for bit what a session that never went past the cut gives;
// a loaded state has no rows to replay (refused by name), nor do rows attending both ways run.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "zerfoo.h"

namespace {

using zf::capitest::Load;
using zf::capitest::ModelPtr;
using zf::capitest::NewSession;
using zf::capitest::SessionPtr;

class CapiRecurrentEmbd : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/lfm2-f32.gguf";
    ZF_REQUIRE_VISION_FILE(lm);
    model_ = Load(lm);
    ASSERT_NE(model_, nullptr);
    zf_model_summary s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    ASSERT_EQ(zf_model_info(model_.get(), &s), ZF_OK);
    n_vocab_ = size_t(s.n_vocab);
    E_ = size_t(s.n_embd);
    std::mt19937 rng(46);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    rows_.resize(kRows * E_);
    for (float& x : rows_) x = nd(rng);
  }
  // Text, the first n rows as one span, then each piece of text in its own call (the same
  // steps as the session under test); the last logits.
  std::vector<float> Fresh(size_t n_rows, const std::vector<std::vector<int32_t>>& after) {
    SessionPtr s = NewSession(model_.get(), 1024);
    std::vector<float> l(n_vocab_);
    EXPECT_EQ(zf_session_eval(s.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK) << zf_last_error();
    EXPECT_EQ(zf_session_eval_embeddings(s.get(), rows_.data(), n_rows, E_, 0, nullptr, 0), ZF_OK) << zf_last_error();
    for (const std::vector<int32_t>& t : after)
      EXPECT_EQ(zf_session_eval(s.get(), t.data(), t.size(), l.data(), l.size()), ZF_OK) << zf_last_error();
    return l;
  }
  static constexpr size_t kRows = 150;
  const std::vector<int32_t> kBefore = {1, 100, 200, 300, 400, 500, 600, 700, 800, 900};
  const std::vector<int32_t> kAfter = {11, 12, 13, 14, 15};
  ModelPtr model_;
  size_t n_vocab_ = 0, E_ = 0;
  std::vector<float> rows_;
};

TEST_F(CapiRecurrentEmbd, RowsRunThroughTheShortConvolutions) {
  SessionPtr s = NewSession(model_.get(), 1024);
  std::vector<float> a(n_vocab_), b(n_vocab_);
  ASSERT_EQ(zf_session_eval(s.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_embeddings(s.get(), rows_.data(), kRows, E_, 0, a.data(), a.size()), ZF_OK) << zf_last_error();
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, int32_t(kBefore.size() + kRows));
  // Other rows give other logits (the rows reach the output through every layer).
  std::vector<float> other = rows_;
  for (size_t i = 0; i < E_; ++i) other[(kRows - 1) * E_ + i] *= -1.0f;
  SessionPtr t = NewSession(model_.get(), 1024);
  ASSERT_EQ(zf_session_eval(t.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_embeddings(t.get(), other.data(), kRows, E_, 0, b.data(), b.size()), ZF_OK);
  EXPECT_NE(a, b);
  // Rows both ways: no recurrent family has them.
  SessionPtr u = NewSession(model_.get(), 1024);
  EXPECT_EQ(zf_session_eval_embeddings(u.get(), rows_.data(), 16, E_, ZF_EMBD_BIDIRECTIONAL, nullptr, 0), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("recurrent"), std::string::npos) << zf_last_error();
}

TEST_F(CapiRecurrentEmbd, TruncateReplaysTheRowsExactly) {
  // Cut inside the rows (past the checkpoint at position 64, so rows 54..100 are evaluated
  // again), then text: the bits of a session that only ever had the first 100 rows.
  SessionPtr s = NewSession(model_.get(), 1024);
  std::vector<float> got(n_vocab_), want(n_vocab_);
  ASSERT_EQ(zf_session_eval(s.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_embeddings(s.get(), rows_.data(), kRows, E_, 0, nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval(s.get(), kAfter.data(), kAfter.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_truncate(s.get(), kBefore.size() + 100), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), kAfter.data(), kAfter.size(), got.data(), got.size()), ZF_OK) << zf_last_error();
  // The same positions in the same steps without the detour (rows[0..100) as a span of their
  // own: the hash only names the entries).
  want = Fresh(100, {kAfter});
  EXPECT_EQ(got, want);
  // A cut in the text after the rows replays rows 54..150 and the text up to the cut.
  ASSERT_EQ(zf_session_truncate(s.get(), 0), ZF_OK);
  ASSERT_EQ(zf_session_eval(s.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_embeddings(s.get(), rows_.data(), kRows, E_, 0, nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval(s.get(), kAfter.data(), kAfter.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_truncate(s.get(), kBefore.size() + kRows + 2), ZF_OK) << zf_last_error();
  const std::vector<int32_t> head(kAfter.begin(), kAfter.begin() + 2), tail(kAfter.begin() + 2, kAfter.end());
  ASSERT_EQ(zf_session_eval(s.get(), tail.data(), tail.size(), got.data(), got.size()), ZF_OK);
  want = Fresh(kRows, {head, tail});
  EXPECT_EQ(got, want);
}

TEST_F(CapiRecurrentEmbd, LoadedStateCannotReplayRows) {
  SessionPtr s = NewSession(model_.get(), 1024);
  ASSERT_EQ(zf_session_eval(s.get(), kBefore.data(), kBefore.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_embeddings(s.get(), rows_.data(), kRows, E_, 0, nullptr, 0), ZF_OK);
  size_t need = 0;
  ASSERT_EQ(zf_session_state_size(s.get(), &need), ZF_OK) << zf_last_error();
  std::vector<uint8_t> buf(need);
  size_t written = 0;
  ASSERT_EQ(zf_session_state_save(s.get(), buf.data(), buf.size(), &written), ZF_OK) << zf_last_error();
  SessionPtr t = NewSession(model_.get(), 1024);
  ASSERT_EQ(zf_session_state_load(t.get(), buf.data(), written), ZF_OK) << zf_last_error();
  // Continuing works; a cut inside the rows would evaluate rows it does not have.
  EXPECT_EQ(zf_session_eval(t.get(), kAfter.data(), kAfter.size(), nullptr, 0), ZF_OK) << zf_last_error();
  EXPECT_EQ(zf_session_truncate(t.get(), kBefore.size() + 100), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("embedding rows"), std::string::npos) << zf_last_error();
  // Cuts at or before a checkpoint that needs no rows still work.
  EXPECT_EQ(zf_session_truncate(t.get(), 5), ZF_OK) << zf_last_error();
}

}  // namespace

// Qwen2.5-VL through the C ABI on the synthesized qwen2vl model (Qwen 2 blocks with M-RoPE
// sections [8, 12, 12, 0], width 256; the fixture vision.models writes it with Qwen-VL's vision
// tokens as qwen2vl-vl.gguf) and
// the synthesized qwen2.5vl_merger projectors: zf_image_embed gives libmtmd's rows (the golden of
// tests/vision/qwen25vl_test.cpp); zf_session_eval_image places them as libmtmd does
// (tests/data/golden/vision/qwen25vl-<type>-lm.json, mmproj_recorder --lm-chatml: a ChatML
// prompt with the landscape Pattern picture): <|vision_start|>, the rows at 2D M-RoPE positions
// (t, t + row, t + column), <|vision_end|> and the text after at t + max(rows, columns), so the
// session's KV rows and rope positions part; then the exactness rules across that parting:
// chunks, truncation after and into the image, saved state, the prefix cache, chat turns and
// batched decode give the same bits as one plain evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/turn_outcome.h"
#include "capi/vision_handles.h"
#include "vision/golden_check.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::ImageTurn;
using zf::capitest::Outcome;
using zf::capitest::MmprojPtr;
using zf::capitest::ModelPtr;
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;
using zf::capitest::SessionTokens;

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.9995;  // measured 0.99988 (F16), 0.99985 (Q8_0); sequential positions 0.981

std::string LmPath() { return std::string(ZF_VISION_MODELS_DIR) + "/qwen2vl-vl.gguf"; }
std::string MmprojPath(const std::string& type) {
  return std::string(ZF_VISION_MODELS_DIR) + "/mmproj-qwen25vl-" + type + ".gguf";
}

ModelPtr LoadLm(int32_t prefix_cache_mib, int32_t max_batch = 0) {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.prefix_cache_mib = prefix_cache_mib;
  p.max_batch = max_batch;
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(LmPath().c_str(), &p, &m), ZF_OK) << zf_last_error();
  return ModelPtr(m);
}

MmprojPtr LoadMmproj(zf_model* m, const std::string& type) {
  zf_mmproj* p = nullptr;
  EXPECT_EQ(zf_mmproj_load(m, MmprojPath(type).c_str(), 0, &p), ZF_OK) << zf_last_error();
  return MmprojPtr(p);
}

#define ZF_REQUIRE_QWEN2VL() ZF_REQUIRE_VISION_FILE(LmPath())

TEST(CapiQwen25vl, EmbedsAsLibmtmdAndRefusesRowsWithoutTheirGrid) {
  ZF_REQUIRE_QWEN2VL();
  ModelPtr model = LoadLm(0);
  ASSERT_NE(model, nullptr);
  MmprojPtr mmproj = LoadMmproj(model.get(), "f16");
  ASSERT_NE(mmproj, nullptr);
  std::vector<float> rows;  // 23 x 14 blocks of the 644 x 392 resize
  zf::capitest::ExpectEmbedsAsGolden(mmproj.get(), "qwen2.5vl_merger", 256, "qwen25vl-f16", 0.9999, &rows);
  if (HasFatalFailure()) return;

  // Rows alone do not say their grid, which gives their M-RoPE positions: refused by name, the
  // session unchanged.
  SessionPtr s = NewSession(model.get(), 1024);
  ASSERT_NE(s, nullptr) << zf_last_error();
  EXPECT_EQ(zf_session_eval_embeddings(s.get(), rows.data(), rows.size() / 256, 256, 0, nullptr, 0), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("M-RoPE"), std::string::npos) << zf_last_error();
  EXPECT_NE(std::string(zf_last_error()).find("zf_session_eval_image"), std::string::npos) << zf_last_error();
  int32_t n_past = -1;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 0);
}

// The prompt of a placement golden through zf_session_eval_image: the first text chunk less its
// <|vision_start|> (the image's own marker), the image, the last chunk less <|vision_end|>.
struct Prompt {
  std::vector<int32_t> before, after;
  size_t image_rows = 0;
  int32_t nx = 0, ny = 0, n_pos = 0;
};

size_t CountTokens(const zf_model* m, const char* text) {
  size_t n = 0;
  int32_t ids[16];
  EXPECT_EQ(zf_tokenize(m, text, std::strlen(text), ZF_TOKENIZE_PARSE_SPECIAL, ids, 16, &n), ZF_OK) << zf_last_error();
  return n;
}

Prompt PromptOf(const json& golden, const zf_model* m) {
  Prompt p;
  const json& chunks = golden["chunks"];
  EXPECT_EQ(chunks.size(), 3u);
  p.before = chunks[0]["text"].get<std::vector<int32_t>>();
  p.after = chunks[2]["text"].get<std::vector<int32_t>>();
  p.before.resize(p.before.size() - CountTokens(m, "<|vision_start|>"));
  p.after.erase(p.after.begin(), p.after.begin() + std::ptrdiff_t(CountTokens(m, "<|vision_end|>")));
  p.image_rows = chunks[1]["image_tokens"];
  p.nx = chunks[1]["nx"];
  p.ny = chunks[1]["ny"];
  p.n_pos = chunks[1]["n_pos"];
  return p;
}

// Evaluates before, the image, after (logits of the last position); the text in chunks of
// `step` tokens (0: each run in one call).
void EvalPrompt(zf_session* s, const zf_mmproj* mmproj, const zf_image& im, const Prompt& p, size_t step,
                std::vector<float>* logits) {
  const auto text = [&](const std::vector<int32_t>& t, bool last) {
    const size_t k = step == 0 ? t.size() : step;
    for (size_t i = 0; i < t.size(); i += k) {
      const size_t n = std::min(k, t.size() - i);
      const bool end = last && i + n == t.size();
      ASSERT_EQ(zf_session_eval(s, t.data() + i, n, end ? logits->data() : nullptr, end ? logits->size() : 0), ZF_OK)
          << zf_last_error();
    }
  };
  text(p.before, false);
  ASSERT_EQ(zf_session_eval_image(s, mmproj, &im, nullptr, 0), ZF_OK) << zf_last_error();
  text(p.after, true);
}

class CapiQwen25vlPlacement : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override { LoadCase(LmPath(), "qwen25vl"); }
};

TEST_P(CapiQwen25vlPlacement, RowsPlacedAsLibmtmdPlacesThem) {
  const Prompt p = PromptOf(c_.golden, c_.model.get());
  // libmtmd's image chunk: nx x ny tokens taking max(nx, ny) positions, so its n_past (the next
  // position) is past the rows by the difference; ours counts KV rows.
  EXPECT_EQ(p.image_rows, size_t(p.nx) * size_t(p.ny));
  EXPECT_EQ(p.n_pos, std::max(p.nx, p.ny));
  const size_t text = c_.golden["chunks"][0]["text"].size() + c_.golden["chunks"][2]["text"].size();
  EXPECT_EQ(c_.golden["n_past"].get<size_t>(), text + size_t(p.n_pos));

  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  SessionPtr s = NewSession(c_.model.get(), 1024);
  std::vector<float> logits(c_.n_vocab);
  EvalPrompt(s.get(), c_.mmproj.get(), im, p, 0, &logits);
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(size_t(n_past), text + p.image_rows);
  const zf::capitest::GoldenRun r = zf::capitest::ExpectRunAsGolden(c_.golden, s.get(), logits, kMinCosine, kTieMargin);
  std::printf("[ qwen25vl %s ] %d x %d tokens at %d positions; first-step centred cosine %.7f; greedy %d/%zu exact, "
              "worst near-tie gap %.3f\n",
              GetParam().c_str(), p.nx, p.ny, p.n_pos, r.cosine, r.exact, c_.golden["greedy"].size(), r.worst_gap);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiQwen25vlPlacement, ::testing::Values("f16", "q8_0"));

// Exactness across the image on a model without a prefix cache (every row computed), with the
// landscape Pattern picture of qwen25vl-f16.json in a ChatML prompt: the text in chunks and one
// token at a time, truncation after the image and re-evaluation, a saved state loaded elsewhere
// (its image places kept), each the same bits as the plain evaluation.
class CapiQwen25vlExact : public ::testing::Test {
 protected:
  void SetUp() override {
    ZF_REQUIRE_QWEN2VL();
    model_ = LoadLm(-1);
    ASSERT_NE(model_, nullptr);
    mmproj_ = LoadMmproj(model_.get(), "f16");
    ASSERT_NE(mmproj_, nullptr);
    zf_model_summary ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    ASSERT_EQ(zf_model_info(model_.get(), &ms), ZF_OK);
    n_vocab_ = size_t(ms.n_vocab);
    std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/qwen25vl-f16.json");
    ASSERT_TRUE(g.good());
    const json golden = json::parse(g);
    const json& gi = golden["images"][0];
    w_ = gi["width"];
    h_ = gi["height"];
    rgb_ = zf::vision::test::Pattern(int(w_), int(h_), gi["seed"].get<uint32_t>());
    im_ = Rgb(rgb_, w_, h_);
    p_.before = Tokens("<|im_start|>user\nDescribe the picture.");
    p_.after = Tokens("<|im_end|>\n<|im_start|>assistant\n");
    p_.image_rows = gi["n_tokens"];
  }
  std::vector<int32_t> Tokens(const std::string& text) const {
    std::vector<int32_t> ids(64);
    size_t n = 0;
    EXPECT_EQ(zf_tokenize(model_.get(), text.data(), text.size(), ZF_TOKENIZE_PARSE_SPECIAL, ids.data(), ids.size(), &n),
              ZF_OK);
    ids.resize(n);
    return ids;
  }
  // The prompt, then three greedy tokens one at a time: every position's logits.
  std::vector<std::vector<float>> Run(zf_session* s, size_t step, const zf_mmproj* mmproj = nullptr) {
    std::vector<std::vector<float>> out(1, std::vector<float>(n_vocab_));
    EvalPrompt(s, mmproj != nullptr ? mmproj : mmproj_.get(), im_, p_, step, &out[0]);
    for (int i = 0; i < 3; ++i) {
      const std::vector<float>& l = out.back();
      const int32_t t = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
      out.emplace_back(n_vocab_);
      EXPECT_EQ(zf_session_eval(s, &t, 1, out.back().data(), n_vocab_), ZF_OK) << zf_last_error();
    }
    return out;
  }
  ModelPtr model_;
  MmprojPtr mmproj_;
  size_t n_vocab_ = 0;
  uint32_t w_ = 0, h_ = 0;
  std::vector<uint8_t> rgb_;
  zf_image im_{};
  Prompt p_;
};

TEST_F(CapiQwen25vlExact, ChunksTruncationAndStateGiveTheSameBits) {
  SessionPtr a = NewSession(model_.get(), 1024);
  const std::vector<std::vector<float>> ref = Run(a.get(), 0);
  // The text one token at a time, and in chunks of 5.
  for (size_t step : {size_t(1), size_t(5)}) {
    SessionPtr b = NewSession(model_.get(), 1024);
    EXPECT_EQ(Run(b.get(), step), ref) << "text in steps of " << step;
  }
  // Truncated after the image (into the text after it) and evaluated again: the text resumes at
  // its M-RoPE position, not at its KV row.
  const std::vector<int32_t> all = SessionTokens(a.get());
  const size_t image_at = p_.before.size() + CountTokens(model_.get(), "<|vision_start|>");
  const size_t image_end = image_at + p_.image_rows;
  for (size_t keep : {image_end, image_end + 2, all.size() - 1}) {
    ASSERT_EQ(zf_session_truncate(a.get(), keep), ZF_OK) << zf_last_error();
    std::vector<float> l(n_vocab_);
    ASSERT_EQ(zf_session_eval(a.get(), all.data() + keep, all.size() - keep, l.data(), l.size()), ZF_OK) << zf_last_error();
    EXPECT_EQ(l, ref.back()) << "truncated to " << keep;
  }
  // A saved state keeps the image's place: loaded into another session, the next steps (and a
  // truncation into the text after the image there) give the original bits.
  ASSERT_EQ(zf_session_truncate(a.get(), all.size() - 1), ZF_OK);
  size_t size = 0, written = 0;
  ASSERT_EQ(zf_session_state_size(a.get(), &size), ZF_OK) << zf_last_error();
  std::vector<uint8_t> state(size);
  ASSERT_EQ(zf_session_state_save(a.get(), state.data(), state.size(), &written), ZF_OK) << zf_last_error();
  SessionPtr b = NewSession(model_.get(), 1024);
  ASSERT_EQ(zf_session_state_load(b.get(), state.data(), written), ZF_OK) << zf_last_error();
  EXPECT_EQ(SessionTokens(b.get()), std::vector<int32_t>(all.begin(), all.end() - 1));
  std::vector<float> lb(n_vocab_);
  ASSERT_EQ(zf_session_eval(b.get(), &all.back(), 1, lb.data(), lb.size()), ZF_OK) << zf_last_error();
  EXPECT_EQ(lb, ref.back());
  ASSERT_EQ(zf_session_truncate(b.get(), image_end + 1), ZF_OK);
  ASSERT_EQ(zf_session_eval(b.get(), all.data() + image_end + 1, all.size() - image_end - 1, lb.data(), lb.size()), ZF_OK);
  EXPECT_EQ(lb, ref.back());
  // Cut into the image: its first rows stay in place, text goes on past the image's extent;
  // a saved and loaded copy of the cut session continues with the same bits.
  {
    SessionPtr c = NewSession(model_.get(), 1024), d = NewSession(model_.get(), 1024);
    (void)Run(c.get(), 0);
    ASSERT_EQ(zf_session_truncate(c.get(), image_at + 5), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_state_size(c.get(), &size), ZF_OK) << zf_last_error();
    std::vector<uint8_t> cut(size);
    ASSERT_EQ(zf_session_state_save(c.get(), cut.data(), cut.size(), &written), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_state_load(d.get(), cut.data(), written), ZF_OK) << zf_last_error();
    std::vector<float> lc(n_vocab_), ld(n_vocab_);
    ASSERT_EQ(zf_session_eval(c.get(), p_.after.data(), p_.after.size(), lc.data(), lc.size()), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_eval(d.get(), p_.after.data(), p_.after.size(), ld.data(), ld.size()), ZF_OK) << zf_last_error();
    EXPECT_EQ(lc, ld);
    EXPECT_NE(lc, ref[0]);  // five of the image's rows are not the image
  }
  // A state without images (a text-only session: the version older zerfoo writes) still loads.
  SessionPtr t = NewSession(model_.get(), 1024);
  ASSERT_EQ(zf_session_eval(t.get(), p_.before.data(), p_.before.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_state_size(t.get(), &size), ZF_OK);
  state.assign(size, 0);
  ASSERT_EQ(zf_session_state_save(t.get(), state.data(), state.size(), &written), ZF_OK);
  uint32_t version = 0;
  std::memcpy(&version, state.data() + 4, 4);
  EXPECT_EQ(version, 1u);
  ASSERT_EQ(zf_session_state_load(b.get(), state.data(), written), ZF_OK) << zf_last_error();
  // Then the image placed after that text: the same bits as the fresh session's.
  ASSERT_EQ(zf_session_eval_image(b.get(), mmproj_.get(), &im_, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(b.get(), p_.after.data(), p_.after.size(), lb.data(), lb.size()), ZF_OK) << zf_last_error();
  EXPECT_EQ(lb, ref[0]);
}

// Batched decode: a session of a batched model (max_batch 4) steps among another session's
// decode steps; each rotates its rows at its own positions (the image's shift is per sequence).
TEST_F(CapiQwen25vlExact, BatchedDecodeGivesTheSameBits) {
  SessionPtr a = NewSession(model_.get(), 1024);
  const std::vector<std::vector<float>> ref = Run(a.get(), 0);
  SessionPtr plain = NewSession(model_.get(), 1024);
  std::vector<std::vector<float>> text_ref;
  std::vector<int32_t> text = p_.before;
  text.insert(text.end(), p_.after.begin(), p_.after.end());
  const auto text_run = [&](zf_session* s, std::vector<std::vector<float>>* out) {
    out->assign(1, std::vector<float>(n_vocab_));
    ASSERT_EQ(zf_session_eval(s, text.data(), text.size(), out->back().data(), n_vocab_), ZF_OK) << zf_last_error();
    for (int i = 0; i < 6; ++i) {
      const int32_t t = int32_t(std::max_element(out->back().begin(), out->back().end()) - out->back().begin());
      out->emplace_back(n_vocab_);
      ASSERT_EQ(zf_session_eval(s, &t, 1, out->back().data(), n_vocab_), ZF_OK) << zf_last_error();
    }
  };
  text_run(plain.get(), &text_ref);

  ModelPtr batched = LoadLm(-1, 4);
  ASSERT_NE(batched, nullptr);
  MmprojPtr mmproj = LoadMmproj(batched.get(), "f16");
  SessionPtr x = NewSession(batched.get(), 1024), y = NewSession(batched.get(), 1024);
  std::vector<std::vector<float>> got_x, got_y;
  std::thread other([&] { text_run(y.get(), &got_y); });
  got_x = Run(x.get(), 0, mmproj.get());
  other.join();
  EXPECT_EQ(got_x, ref);
  EXPECT_EQ(got_y, text_ref);
}

// Chat turns with an image_url part on qwen2vl (the model's template: zerfoo's ChatML fallback
// where the synthesized file has none): the prompt holds <|vision_start|>, the rows, <|vision_end|>; a fresh session takes
// the image's blocks from the model's prefix cache and a session truncated into the image
// continues it, both with the first turn's logprobs bit for bit, as a cold model computes them.
TEST_F(CapiQwen25vlExact, ChatTurnsReuseAndContinueTheImageExactly) {
  const std::string png = zf::capitest::Base64(zf::vision::test::Png(int(w_), int(h_), rgb_));
  ModelPtr cached = LoadLm(64);
  ASSERT_NE(cached, nullptr);
  MmprojPtr mmproj = LoadMmproj(cached.get(), "f16");
  SessionPtr s = NewSession(cached.get(), 1024);
  Outcome a;
  ASSERT_EQ(ImageTurn(s.get(), mmproj.get(), png, &a), ZF_OK) << zf_last_error();
  ASSERT_FALSE(a.ids.empty());
  // The prompt: <|vision_start|>, the image's nx x ny entries, <|vision_end|>.
  const std::vector<int32_t> toks = SessionTokens(s.get());
  size_t image_at = 0, n_rows = 0;
  zf::capitest::FindImageEntries(toks, &image_at, &n_rows);
  ASSERT_LT(image_at, toks.size());
  EXPECT_EQ(n_rows, p_.image_rows);
  int32_t id[4];
  size_t n = 0;
  const char* markers = "<|vision_start|><|vision_end|>";
  ASSERT_EQ(zf_tokenize(cached.get(), markers, std::strlen(markers), ZF_TOKENIZE_PARSE_SPECIAL, id, 4, &n), ZF_OK)
      << zf_last_error() << " " << n;
  if (n == 2) {
    EXPECT_EQ(toks[image_at - 1], id[0]);
    EXPECT_EQ(toks[image_at + n_rows], id[1]);
  }

  // A cold model (no prefix cache): the same bits.
  {
    SessionPtr cold = NewSession(model_.get(), 1024);
    Outcome h;
    ASSERT_EQ(ImageTurn(cold.get(), mmproj_.get(), png, &h), ZF_OK) << zf_last_error();
    EXPECT_EQ(h.n_cached, 0);
    EXPECT_EQ(h.ids, a.ids);
    EXPECT_EQ(h.logprobs, a.logprobs);
  }
  // A fresh session: the image's blocks from the prefix cache.
  SessionPtr fresh = NewSession(cached.get(), 1024);
  Outcome b;
  ASSERT_EQ(ImageTurn(fresh.get(), mmproj.get(), png, &b), ZF_OK) << zf_last_error();
  EXPECT_GE(b.n_cached, 64) << "the prefix cache served none of the image's blocks";
  EXPECT_EQ(b.ids, a.ids);
  EXPECT_EQ(b.logprobs, a.logprobs);
  // Truncated into the image (its first rows kept) and after it: the turn continues the image
  // from its kept rows at their positions, then the text after it.
  for (size_t keep : {image_at + 1, image_at + n_rows / 2, image_at + n_rows + 1}) {
    ASSERT_EQ(zf_session_truncate(s.get(), keep), ZF_OK) << zf_last_error();
    Outcome c;
    ASSERT_EQ(ImageTurn(s.get(), mmproj.get(), png, &c), ZF_OK) << zf_last_error();
    EXPECT_GE(c.n_cached, int32_t(keep)) << keep;
    EXPECT_EQ(c.ids, a.ids) << "truncated to " << keep;
    EXPECT_EQ(c.logprobs, a.logprobs) << "truncated to " << keep;
  }
}

}  // namespace

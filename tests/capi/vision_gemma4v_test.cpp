// Gemma 4's vision tower (gemma4v) placed in a Gemma 4 model through the C ABI: the synthesized
// gemma4v projectors (fixture vision.models) on the family tests' synthesized gemma4 model
// (width 256, per-layer inputs, sliding and full layers; the fixture writes gemma4-f32.gguf).
// zf_session_eval_image against libmtmd (tests/data/golden/vision/gemma4v-<type>-lm.json,
// mmproj_recorder --lm-gemma4: a Gemma 4 chat prompt with the landscape Pattern picture at its
// own size, 104 rows between <|image> and <image|>, decoded with causal attention off as
// libmtmd does for widths other than E2B's / E4B's): the entries, the first step's logits and 8
// teacher-forced greedy steps; rows taken causally land farther from libmtmd.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::Argmax;
using zf::capitest::Base64;
using zf::capitest::Load;
using zf::capitest::ModelPtr;
using zf::capitest::MmprojPtr;
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;
using zf::capitest::SessionTokens;
using zf::capitest::Tokenize;

// The F32 model against llama.cpp's: the first step's centred logits (every 64th id and
// libmtmd's top 32) at this cosine, greedy tokens equal or a near-tie.
constexpr double kMinCosine = 0.9995;
constexpr double kTieMargin = 0.05;

class CapiGemma4v : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override { LoadCase(std::string(ZF_VISION_MODELS_DIR) + "/gemma4-f32.gguf", "gemma4v"); }
  // libmtmd's text chunks around the image without the markers zf_session_eval_image adds.
  std::vector<int32_t> Before() const {
    std::vector<int32_t> t = c_.golden["chunks"][0]["text"];
    t.pop_back();
    return t;
  }
  std::vector<int32_t> After() const {
    std::vector<int32_t> t = c_.golden["chunks"][2]["text"];
    t.erase(t.begin());
    return t;
  }
};

TEST_P(CapiGemma4v, ImagePlacedAsLibmtmdPlacesIt) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(c_.mmproj.get());
  if (HasFailure()) return;
  EXPECT_STREQ(info.projector_type, "gemma4v");
  EXPECT_EQ(info.n_tokens, 0);  // each image at its own size: zf_image_embed says
  EXPECT_EQ(info.image_size, 0);
  EXPECT_EQ(info.n_embd, 256);
  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, c_.golden["chunks"][1]["image_tokens"].get<int32_t>());  // 13 x 8 pooled patches
  EXPECT_EQ(needed, size_t(n_tok) * 256);

  SessionPtr s = NewSession(c_.model.get(), 1024);
  std::vector<float> logits(c_.n_vocab);
  const std::vector<int32_t> before = Before(), after = After();
  ASSERT_EQ(zf_session_eval(s.get(), before.data(), before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_image(s.get(), c_.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK);
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, c_.golden["n_past"].get<int32_t>());
  const zf::capitest::GoldenRun r = zf::capitest::ExpectRunAsGolden(c_.golden, s.get(), logits, kMinCosine, kTieMargin);
  // The rows taken causally: another computation, farther from libmtmd.
  {
    std::vector<float> rows(needed), lc(c_.n_vocab);
    ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, rows.data(), rows.size(), &needed, &n_tok), ZF_OK);
    SessionPtr c = NewSession(c_.model.get(), 1024);
    const std::vector<int32_t> t0 = c_.golden["chunks"][0]["text"], t2 = c_.golden["chunks"][2]["text"];
    ASSERT_EQ(zf_session_eval(c.get(), t0.data(), t0.size(), nullptr, 0), ZF_OK);
    ASSERT_EQ(zf_session_eval_embeddings(c.get(), rows.data(), size_t(n_tok), 256, 0, nullptr, 0), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_eval(c.get(), t2.data(), t2.size(), lc.data(), lc.size()), ZF_OK);
    const double c2 = zf::capitest::GoldenFirstCosine(c_.golden, lc);
    std::printf("[ gemma4v %s ] rows attending causally: centred cosine %.6f\n", GetParam().c_str(), c2);
    EXPECT_LT(c2, r.cosine);
  }
  std::printf("[ gemma4v %s ] first-step centred cosine %.7f; greedy %d/%zu exact, worst near-tie gap %.3f\n",
              GetParam().c_str(), r.cosine, r.exact, c_.golden["greedy"].size(), r.worst_gap);
}

// A chat turn with an image_url part through Gemma 4's own template: the rendered prompt shows
// <|image><image|> where the message's image is, the turn's entries are that prompt's tokens with
// the image's rows between the markers, and its first token is the raw route's.
TEST_P(CapiGemma4v, ChatTurnPlacesTheImageAsTheRawRoute) {
  zf::capitest::TurnAgainstRaw t;
  zf::capitest::ExpectTurnAsRawRoute(c_, "<|image><image|>", 0, &t);
  if (HasFatalFailure()) return;
  const int32_t rows = c_.golden["chunks"][1]["image_tokens"];
  EXPECT_EQ(t.n_prompt, int32_t(t.before.size() + 2 + t.after.size()) + rows);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiGemma4v, ::testing::Values("f16", "q8_0"));

// A file with an audio tower beside the vision one (as Gemma 4's are) loads both towers; its
// images encode as the vision-only file's do.
TEST(CapiGemma4vFiles, BothTowersLoadAndImagesEncodeAsTheVisionOnlyFile) {
  const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/gemma4-f32.gguf";
  ZF_REQUIRE_VISION_FILE(lm);
  ModelPtr model = Load(lm);
  ASSERT_NE(model, nullptr) << zf_last_error();
  std::vector<float> rows[2];
  const char* files[2] = {"mmproj-gemma4v-f16.gguf", "mmproj-gemma4v-av-f16.gguf"};
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(200, 120, 7);
  const zf_image im = Rgb(rgb, 200, 120);
  for (int i = 0; i < 2; ++i) {
    zf_mmproj* p = nullptr;
    ASSERT_EQ(zf_mmproj_load(model.get(), (std::string(ZF_VISION_MODELS_DIR) + "/" + files[i]).c_str(), 0, &p), ZF_OK)
        << zf_last_error();
    MmprojPtr mm(p);
    const zf_mmproj_summary info = zf::capitest::SummaryOf(p);
    if (HasFailure()) return;
    // The two-tower file holds Gemma 4's audio tower too (gemma4a, audio_test.cpp).
    EXPECT_EQ(info.modalities, uint32_t(i == 0 ? ZF_MODALITY_IMAGE : ZF_MODALITY_IMAGE | ZF_MODALITY_AUDIO));
    size_t needed = 0;
    int32_t n_tok = 0;
    ASSERT_EQ(zf_image_embed(p, &im, 1, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
    rows[i].resize(needed);
    ASSERT_EQ(zf_image_embed(p, &im, 1, rows[i].data(), needed, &needed, &n_tok), ZF_OK) << zf_last_error();
  }
  EXPECT_EQ(rows[0], rows[1]);
}

}  // namespace

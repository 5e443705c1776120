// Idefics3 (SmolVLM) through the C ABI: the synthesized idefics3 projectors (fixture
// vision.models) on smollm2-vlm.gguf (SmolLM2-135M with SmolVLM's image tokens, written by the
// fixture when SmolLM2 is at hand). zf_session_eval_image against libmtmd
// (tests/data/golden/vision/idefics3-<type>-lm.json, mmproj_recorder --lm-chatml: a ChatML
// prompt with the landscape Pattern picture, cut into 2 x 2 tiles and an overview): the tile
// markers and rows in libmtmd's order and positions, the first step's logits and 8
// teacher-forced greedy steps. Then a chat turn with an image_url part places the image as the
// raw route does, and zf_chat_turn_prompt shows the markers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <sys/stat.h>
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
using zf::capitest::CentredCosine;
using zf::capitest::Encoded;
using zf::capitest::Load;
using zf::capitest::ModelPtr;
using zf::capitest::MmprojPtr;
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;
using zf::capitest::SessionTokens;
using zf::capitest::Tokenize;

// As vision_placement_test.cpp: a greedy token may differ from libmtmd's only at a near-tie;
// the first step's centred logits (every 64th id and libmtmd's top 32) at this cosine.
// Measured 0.99962 / 0.99963 (F16 / Q8_0; ZF_NO_AVX512=1 0.99941 / 0.99968), greedy 7/8 exact
// (the other a near-tie within 0.1); the tiles attending both ways give 0.9951-0.9959.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.998;

// The libmtmd text between the image's rows: per tile "<fake_token_around_image><row_R_col_C>",
// "\n" between rows of tiles, "\n\n<fake_token_around_image><global-img>" before the overview.
constexpr const char* kMarkers2x2 =
    "<fake_token_around_image><row_1_col_1><fake_token_around_image><row_1_col_2>\n"
    "<fake_token_around_image><row_2_col_1><fake_token_around_image><row_2_col_2>\n\n"
    "<fake_token_around_image><global-img><fake_token_around_image>";

std::string Lm() { return std::string(ZF_VISION_MODELS_DIR) + "/smollm2-vlm.gguf"; }

class CapiIdefics3 : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override {
    struct stat st;
    if (stat(Lm().c_str(), &st) != 0) GTEST_SKIP() << Lm() << " not written (SmolLM2 missing: scripts/fetch_models.sh smollm2)";
    LoadCase(Lm(), "idefics3");
  }
  // libmtmd's first text chunk without the first tile's marker (zf_session_eval_image adds
  // the markers), and its last without the overview's closing marker.
  std::vector<int32_t> Before() const {
    std::vector<int32_t> t = c_.golden["chunks"][0]["text"];
    t.resize(t.size() - 2);
    return t;
  }
  std::vector<int32_t> After() const {
    std::vector<int32_t> t = c_.golden["chunks"].back()["text"];
    t.erase(t.begin());
    return t;
  }

};

TEST_P(CapiIdefics3, TilesPlacedAsLibmtmdPlacesThem) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(c_.mmproj.get());
  if (HasFailure()) return;
  EXPECT_STREQ(info.projector_type, "idefics3");
  EXPECT_EQ(info.n_tokens, 64);  // per tile
  EXPECT_EQ(info.image_size, 512);
  // zf_image_embed: every tile's rows and the overview's (2 x 2 + 1), known before encoding.
  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, 5 * 64);
  EXPECT_EQ(needed, size_t(5 * 64 * 576));

  SessionPtr s = NewSession(c_.model.get(), 1024);
  std::vector<float> logits(c_.n_vocab);
  const std::vector<int32_t> before = Before(), after = After();
  ASSERT_EQ(zf_session_eval(s.get(), before.data(), before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_image(s.get(), c_.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK);
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, c_.golden["n_past"].get<int32_t>());
  // Entry by entry: libmtmd's text chunks' tokens, each image chunk as that many image rows.
  std::vector<int32_t> want;
  for (const json& c : c_.golden["chunks"]) {
    if (c.contains("text")) {
      for (int32_t t : c["text"]) want.push_back(t);
    } else {
      want.resize(want.size() + c["image_tokens"].get<size_t>(), -1);
    }
  }
  const std::vector<int32_t> got = SessionTokens(s.get());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] < 0) EXPECT_LT(got[i], 0) << i;
    else EXPECT_EQ(got[i], want[i]) << i;
  }

  const json& first = c_.golden["first"];
  std::vector<double> ours, ref = first["every64"].get<std::vector<double>>();
  for (size_t i = 0; i < c_.n_vocab; i += 64) ours.push_back(logits[i]);
  const std::vector<int32_t> top = first["top_ids"];
  const std::vector<double> top_l = first["top_logits"];
  for (size_t k = 0; k < top.size(); ++k) ours.push_back(logits[size_t(top[k])]), ref.push_back(top_l[k]);
  ASSERT_EQ(ours.size(), ref.size());
  const double cos = CentredCosine(ours, ref);
  EXPECT_GE(cos, kMinCosine);
  // Idefics3's rows attend causally (libmtmd: not mtmd_decode_use_non_causal): both ways is
  // another computation, farther from libmtmd.
  {
    std::vector<float> rows(needed);
    ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, rows.data(), rows.size(), &needed, &n_tok), ZF_OK);
    SessionPtr c = NewSession(c_.model.get(), 1024);
    std::vector<float> lc(c_.n_vocab);
    size_t row = 0;
    for (const json& ch : c_.golden["chunks"]) {
      if (ch.contains("text")) {
        const std::vector<int32_t> t = ch["text"];
        ASSERT_EQ(zf_session_eval(c.get(), t.data(), t.size(), lc.data(), lc.size()), ZF_OK);
      } else {
        ASSERT_EQ(zf_session_eval_embeddings(c.get(), rows.data() + row * 576, 64, 576, ZF_EMBD_BIDIRECTIONAL, nullptr, 0),
                  ZF_OK) << zf_last_error();
        row += 64;
      }
    }
    std::vector<double> other;
    for (size_t i = 0; i < c_.n_vocab; i += 64) other.push_back(lc[i]);
    for (int32_t id : top) other.push_back(lc[size_t(id)]);
    const double c2 = CentredCosine(other, ref);
    std::printf("[ idefics3 %s ] tiles attending both ways: centred cosine %.6f\n", GetParam().c_str(), c2);
    EXPECT_LT(c2, cos);
  }
  double worst_gap = 0;
  int exact = 0;
  const json& greedy = c_.golden["greedy"];
  for (size_t step = 0; step < greedy.size(); ++step) {
    const int32_t want_tok = greedy[step]["token"];
    const int32_t best = Argmax(logits);
    if (best == want_tok) {
      ++exact;
    } else {
      const double gap = double(logits[size_t(best)]) - logits[size_t(want_tok)];
      worst_gap = std::max(worst_gap, gap);
      EXPECT_LE(gap, kTieMargin) << "step " << step << ": ours " << best << ", libmtmd's " << want_tok;
    }
    ASSERT_EQ(zf_session_eval(s.get(), &want_tok, 1, logits.data(), logits.size()), ZF_OK) << zf_last_error();
  }
  std::printf("[ idefics3 %s ] first-step centred cosine %.6f; greedy %d/%zu exact, worst near-tie gap %.3f\n",
              GetParam().c_str(), cos, exact, greedy.size(), worst_gap);
}

// A chat turn with an image_url part: the rendered prompt shows the tile markers, the turn's
// entries are that prompt's tokens with the tiles' rows, and its first token is the raw
// route's on the same text.
TEST_P(CapiIdefics3, ChatTurnPlacesTilesAsTheRawRoute) {
  zf::capitest::TurnAgainstRaw t;
  zf::capitest::ExpectTurnAsRawRoute(c_, std::string("Describe the picture.") + kMarkers2x2, std::strlen("Describe the picture."), &t);
  if (HasFatalFailure()) return;
  const std::vector<int32_t> markers = Tokenize(c_.model.get(), kMarkers2x2, ZF_TOKENIZE_PARSE_SPECIAL);
  EXPECT_EQ(t.n_prompt, int32_t(t.before.size() + markers.size() + t.after.size() + 5 * 64));
}

INSTANTIATE_TEST_SUITE_P(Types, CapiIdefics3, ::testing::Values("f16", "q8_0"));

}  // namespace

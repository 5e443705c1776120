// LFM2-VL through the C ABI: the synthesized lfm2 projectors (fixture vision.models) on
// lfm2-vl.gguf (the fixture's synthesized LFM2, short-convolution and attention layers, with
// LFM2-VL's image tokens appended). zf_session_eval_image against libmtmd
// (tests/data/golden/vision/lfm2-<type>-lm.json, mmproj_recorder --lm-chatml: a ChatML prompt
// with the landscape Pattern picture, 640 x 384 px after the resize: 20 x 12 tokens):
// <|image_start|>, the rows, <|image_end|> in libmtmd's positions, the first step's logits and 8
// teacher-forced greedy steps; and the same for a 1024 x 768 Pattern picture that libmtmd tiles
// (lfm2-<type>-lm-tiled.json, --lm-chatml 1024x768: 3 x 2 tiles of 256 rows, each after its
// <|img_row_R_col_C|>, then <|img_thumbnail|> and the 234-row thumbnail).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "zerfoo.h"

namespace {

using zf::capitest::Rgb;

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.998;

class CapiLfm2Vl : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override {
    LoadCase(std::string(ZF_VISION_MODELS_DIR) + "/lfm2-vl.gguf", "lfm2");
  }
};

TEST_P(CapiLfm2Vl, RowsPlacedAsLibmtmdPlacesThem) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(c_.mmproj.get());
  if (HasFailure()) return;
  EXPECT_STREQ(info.projector_type, "lfm2");
  EXPECT_EQ(info.n_tokens, 0);  // each image at its own size
  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, c_.golden["chunks"][1]["image_tokens"].get<int32_t>());
  EXPECT_EQ(needed, size_t(n_tok) * 256);

  // libmtmd's chunks: the text ending in <|image_start|>, the rows, <|image_end|> and the rest;
  // zf_session_eval_image places the two markers itself.
  zf::capitest::ExpectPlacedAsGolden(c_, "lfm2 " + GetParam(), 1, 1, kMinCosine, kTieMargin);
}

// A picture libmtmd tiles: every tile's and the thumbnail's rows after their markers, as
// libmtmd's chunks; zf_image_embed's rows are all of them (tiles first).
TEST_P(CapiLfm2Vl, TiledImagePlacedAsLibmtmdPlacesIt) {
  zf::capitest::PlacementCase t;
  zf::capitest::LoadPlacementCase(std::string(ZF_VISION_MODELS_DIR) + "/lfm2-vl.gguf", "lfm2", GetParam(), &t, "-tiled");
  if (IsSkipped() || HasFatalFailure()) return;
  int32_t images = 0, rows = 0;
  for (const nlohmann::json& c : t.golden["chunks"])
    if (c.contains("image_tokens")) ++images, rows += c["image_tokens"].get<int32_t>();
  EXPECT_GT(images, 2) << "the golden's picture is not tiled";
  const zf_image im = Rgb(t.rgb, t.w, t.h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(t.mmproj.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, rows);
  EXPECT_EQ(needed, size_t(rows) * 256);
  // The first chunk ends in <|image_start|><|img_row_1_col_1|>, the last starts with <|image_end|>.
  zf::capitest::ExpectPlacedAsGolden(t, "lfm2 tiled " + GetParam(), 2, 1, kMinCosine, kTieMargin);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiLfm2Vl, ::testing::Values("f16", "q8_0"));

}  // namespace

// LFM2-VL through the C ABI: the synthesized lfm2 projectors (fixture vision.models) on
// lfm2-vl.gguf (the fixture's synthesized LFM2, short-convolution and attention layers, with
// LFM2-VL's image tokens appended). zf_session_eval_image against libmtmd
// (tests/data/golden/vision/lfm2-<type>-lm.json, mmproj_recorder --lm-chatml: a ChatML prompt
// with the landscape Pattern picture, 640 x 384 px after the resize: 20 x 12 tokens):
// <|image_start|>, the rows, <|image_end|> in libmtmd's positions, the first step's logits and 8
// teacher-forced greedy steps.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "zerfoo.h"

namespace {

using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.998;

class CapiLfm2Vl : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    zf::capitest::LoadPlacementCase(std::string(ZF_VISION_MODELS_DIR) + "/lfm2-vl.gguf", "lfm2", GetParam(), &c_);
  }
  zf::capitest::PlacementCase c_;
};

TEST_P(CapiLfm2Vl, RowsPlacedAsLibmtmdPlacesThem) {
  zf_mmproj_summary info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_mmproj_info(c_.mmproj.get(), &info), ZF_OK);
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

// An image libmtmd would cut into tiles: refused by name, the session unchanged.
TEST_P(CapiLfm2Vl, TiledImageRefused) {
  const std::vector<uint8_t> rgb(size_t(1200) * 1000 * 3, 100);
  const zf_image im = Rgb(rgb, 1200, 1000);
  SessionPtr s = NewSession(c_.model.get(), 4096);
  EXPECT_NE(zf_session_eval_image(s.get(), c_.mmproj.get(), &im, nullptr, 0), ZF_OK);
  EXPECT_NE(std::string(zf_last_error()).find("tiles"), std::string::npos) << zf_last_error();
  int32_t n_past = -1;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiLfm2Vl, ::testing::Values("f16", "q8_0"));

}  // namespace

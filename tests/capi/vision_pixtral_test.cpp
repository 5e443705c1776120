// Pixtral through the C ABI: the synthesized pixtral projectors (fixture vision.models) on
// smollm2-pixtral.gguf (SmolLM2-135M with [IMG], [IMG_BREAK], [IMG_END], written by the fixture
// when SmolLM2 is at hand). zf_session_eval_image against libmtmd
// (tests/data/golden/vision/pixtral-<type>-lm.json, mmproj_recorder --lm-chatml: a ChatML prompt
// with the landscape Pattern picture, 640 x 416 px: 20 x 13 tokens and 12 [IMG_BREAK] rows):
// the rows then [IMG_END] in libmtmd's positions, the first step's logits and 8 teacher-forced
// greedy steps; a chat turn with an image_url part gives the raw route's first token; and the
// same placement on mistral3-pixtral.gguf (that model as general.architecture mistral3, Mistral
// Small 3.1 / 3.2's language model) against libmtmd on that file (pixtral-<type>-lm-mistral3.json).
#include <gtest/gtest.h>

#include <cstring>
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
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.998;

std::string Lm() { return std::string(ZF_VISION_MODELS_DIR) + "/smollm2-pixtral.gguf"; }

class CapiPixtral : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override {
    struct stat st;
    if (stat(Lm().c_str(), &st) != 0) GTEST_SKIP() << Lm() << " not written (SmolLM2 missing: scripts/fetch_models.sh smollm2)";
    LoadCase(Lm(), "pixtral");
  }
};

TEST_P(CapiPixtral, RowsPlacedAsLibmtmdPlacesThem) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(c_.mmproj.get());
  if (HasFailure()) return;
  EXPECT_STREQ(info.projector_type, "pixtral");
  // zf_image_embed: the image's own size decides the rows, known before encoding.
  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, c_.golden["chunks"][1]["image_tokens"].get<int32_t>());
  EXPECT_EQ(needed, size_t(n_tok) * 576);

  // libmtmd's chunks: the text, the image's rows, "[IMG_END]" and the rest (the image's marker
  // is zf_session_eval_image's).
  zf::capitest::ExpectPlacedAsGolden(c_, "pixtral " + GetParam(), 0, 1, kMinCosine, kTieMargin);
}

// A chat turn with an image_url part: its first token is the raw route's (the template's text
// around the image, the rows, [IMG_END]).
TEST_P(CapiPixtral, ChatTurnFirstTokenIsTheRawRoutes) {
  zf::capitest::TurnAgainstRaw t;
  zf::capitest::ExpectTurnAsRawRoute(c_, "Describe the picture.[IMG_END]", std::strlen("Describe the picture."), &t);
}

// The projector binds to a mistral3 model of its width and places the rows as libmtmd does there.
TEST_P(CapiPixtral, Mistral3LanguageModel) {
  zf::capitest::PlacementCase m;
  zf::capitest::LoadPlacementCase(std::string(ZF_VISION_MODELS_DIR) + "/mistral3-pixtral.gguf", "pixtral", GetParam(), &m,
                                  "-mistral3");
  if (IsSkipped() || HasFatalFailure()) return;
  zf_model_summary sum;
  std::memset(&sum, 0, sizeof sum);
  sum.struct_size = sizeof sum;
  ASSERT_EQ(zf_model_info(m.model.get(), &sum), ZF_OK);
  EXPECT_STREQ(sum.architecture, "mistral3");
  zf::capitest::ExpectPlacedAsGolden(m, "pixtral on mistral3 " + GetParam(), 0, 1, kMinCosine, kTieMargin);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiPixtral, ::testing::Values("f16", "q8_0"));

}  // namespace

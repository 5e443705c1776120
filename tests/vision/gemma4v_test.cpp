// Gemma 4's vision tower (gemma4v) against libmtmd (tests/data/golden/vision/gemma4v-<type>.json,
// mmproj_recorder on the synthesized projectors of the fixture vision.models: 16 px patches,
// 3 x 3 pooling, images at their own sizes, projection to the synthesized gemma4 model's 256):
// the planned size, the preprocessed image pixel for pixel (bicubic), the embeddings of two
// Pattern pictures, and refusals of broken files.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "golden_images.h"
#include "own_size_golden.h"
#include "test_images.h"
#include "vision/encoder.h"
#include "vision/gemma4v.h"
#include "vision/image.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"
#include "vision/projector.h"

namespace zf::vision {
namespace {

TEST(Gemma4v, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("gemma4v", "f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->vit, Vit::kGemma4v);
  EXPECT_EQ(hp.spec->tiling, Tiling::kDynamic);
  EXPECT_EQ(hp.n_merge, 3);  // clip.cpp's default: the file has no scale factor
  EXPECT_EQ(hp.proj_width, 256);
  EXPECT_EQ(hp.min_pixels, 70 * 48 * 48);
  EXPECT_EQ(hp.max_pixels, 1120 * 48 * 48);
  ASSERT_NE(m->gemma4v, nullptr);
  EXPECT_EQ(m->gemma4v->pos_size, 256);
  EXPECT_TRUE(m->gemma4v->proj.clamped);
  EXPECT_TRUE(m->gemma4v->blocks[0].down.clamped);
  EXPECT_FALSE(m->gemma4v->blocks[0].up.clamped);
  EXPECT_FLOAT_EQ(m->gemma4v->blocks[1].out_scale, 0.9f);
  // Sizes: rounded to whole 48 px blocks, then into 70..1120 tokens.
  const TileGrid a = PlanTiles(hp, 640, 400);
  EXPECT_EQ(a.w, 624);
  EXPECT_EQ(a.h, 384);
  EXPECT_EQ(a.rows, 13 * 8);
  const TileGrid small = PlanTiles(hp, 50, 50);  // scaled up to the 70-token floor
  EXPECT_GE(small.rows, 70);
  const TileGrid big = PlanTiles(hp, 4000, 3000);  // scaled down under 1120 tokens
  EXPECT_LE(big.rows, 1120);
  EXPECT_EQ(big.w % 48, 0);
  std::string text;
  for (const LayoutPiece& p : Layout(*hp.spec, a, hp.n_tokens())) text += p.rows ? "[" + std::to_string(p.rows) + "]" : p.text;
  EXPECT_EQ(text, "<|image>[104]<image|>");
}

struct Variant {
  const char* name;
  double min_cosine;
  double max_norm_error;  // relative, per token (Q8_0's measured 1.0e-3: its activations' rounding)
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Gemma4vGolden : public ::testing::TestWithParam<Variant> {};

TEST_P(Gemma4vGolden, PreprocessingAndEmbeddingsMatchLibmtmd) {
  test::ExpectImagesGolden("gemma4v", GetParam().name, GetParam().min_cosine, GetParam().max_norm_error);
}

INSTANTIATE_TEST_SUITE_P(Types, Gemma4vGolden,
                         ::testing::Values(Variant{"f32", 0.9999, 1e-3}, Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 3e-3}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// llama.cpp's tools/mtmd/test-1.jpeg (mmproj_recorder --tiles: decoded by libmtmd, 640 x 488 ->
// 624 x 480, 130 tokens): the decoded bytes, the preprocessed image and the embeddings.
TEST_P(Gemma4vGolden, TestJpegAsLibmtmd) {
  const Variant& var = GetParam();
  if (std::string(var.name) == "f32") GTEST_SKIP() << "recorded for F16 and Q8_0";
  nlohmann::json plain;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("gemma4v", var.name, &plain);
  ASSERT_NE(m, nullptr);
  const nlohmann::json golden = nlohmann::json::parse(
      test::ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/gemma4v-" + var.name + "-tiles.json"));
  ASSERT_EQ(golden["mmproj_sha256"], plain["mmproj_sha256"]);
  const nlohmann::json& gi = golden["images"][2];
  ASSERT_EQ(gi["name"], "file");
  const Image img = test::GoldenImage(gi);
  TileGrid grid;
  const std::vector<Image> inputs = TileImages(m->hparams(), img, &grid);
  ASSERT_EQ(inputs.size(), 1u);
  nlohmann::json chunk = gi["chunks"][1];
  test::ExpectPreprocessed(inputs[0], chunk["preprocessed"], "test-1.jpeg");
  ASSERT_EQ(grid.rows, chunk["n_tokens"].get<int64_t>());
  std::vector<float> embd;
  VisionEncoder enc(*m, 2);
  const Status s = enc.Encode(img, &embd);
  ASSERT_TRUE(s.ok()) << s.message();
  chunk["n_embd"] = gi["n_embd"];
  const test::GoldenFit fit = test::ExpectMatchesGolden(embd, chunk, var.min_cosine, "test-1.jpeg", var.max_norm_error);
  std::printf("[ gemma4v ] %s test-1.jpeg (%lld tokens): min cosine %.7f, max |diff| %.3g, worst norm rel. error %.2g\n",
              var.name, static_cast<long long>(grid.rows), fit.min_cosine, fit.max_abs, fit.worst_norm);
}

// The fixture's F16 file with one equal-length byte edit; the load's error.
std::string LoadEdited(const std::string& from, const std::string& to) { return test::LoadEditedF16("gemma4v", from, to); }

TEST(Gemma4v, BrokenFilesAreRefusedByName) {
  EXPECT_NE(LoadEdited("v.blk.0.attn_q_norm.weight", "v.blk.0.attn_q_nore.weight").find("'v.blk.0.attn_q_norm.weight' is missing"),
            std::string::npos);
  EXPECT_NE(LoadEdited("v.std_scale", "v.std_scalf").find("v.std_bias and v.std_scale come together"), std::string::npos);
  EXPECT_NE(LoadEdited("mm.input_projection.output_min", "mm.input_projection.output_mix").find("'mm.input_projection.output_mix' is not part of"),
            std::string::npos);
}

}  // namespace
}  // namespace zf::vision

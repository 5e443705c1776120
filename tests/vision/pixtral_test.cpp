// Pixtral (Mistral Small 3.1's layout) against libmtmd (tests/data/golden/vision/pixtral-<type>.json,
// mmproj_recorder --tiles): the synthesized projectors of the fixture vision.models (16 px
// patches, patch merger by 2, SiLU-gated RMS-norm ViT with 2D rotary positions, mm.1 / GELU /
// mm.2 to SmolLM2's 576, the [IMG_BREAK] row) on two Pattern pictures and test-1.jpeg: the
// resized image pixel for pixel (Pillow's bicubic into whole 32 px blocks), the rows with their
// [IMG_BREAK] rows, and the layout (the rows, then [IMG_END]).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "golden_images.h"
#include "own_size_golden.h"
#include "vision/encoder.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"
#include "vision/projector.h"
#include "vision/rope2d.h"

namespace zf::vision {
namespace {

TEST(Pixtral, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("pixtral", "f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  EXPECT_EQ(hp.projector, "pixtral");
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->vit, Vit::kPixtral);
  EXPECT_EQ(hp.spec->tiling, Tiling::kDynamic);
  EXPECT_FALSE(hp.spec->bidirectional);
  EXPECT_EQ(hp.n_merge, 2);
  EXPECT_EQ(hp.proj_width, 576);
  EXPECT_EQ(hp.min_pixels, 8 * 32 * 32);
  EXPECT_EQ(hp.max_pixels, 1024 * 32 * 32);
  EXPECT_EQ(m->img_break.size(), 576u);
  // Sizes from the dimensions alone: each side rounded to 32 px blocks; 20 x 13 tokens and 12
  // [IMG_BREAK] rows for 640 x 400 (640 x 416).
  EXPECT_EQ(PlanTiles(hp, 640, 400).rows, 20 * 13 + 12);
  EXPECT_EQ(PlanTiles(hp, 300, 700).rows, 9 * 22 + 21);
  // Over the budget (1024 tokens): scaled down, each side floored to blocks.
  int32_t w = 0, h = 0;
  DynamicSize(hp, 4000, 3000, &w, &h);
  EXPECT_LE(int64_t(w) * h, hp.max_pixels);
  EXPECT_EQ(w % 32, 0);
  EXPECT_EQ(h % 32, 0);
  // Under it (8 tokens): scaled up.
  DynamicSize(hp, 20, 20, &w, &h);
  EXPECT_GE(int64_t(w) * h, hp.min_pixels);
}

TEST(Pixtral, LayoutIsLibmtmds) {
  std::string text;
  TileGrid g;
  g.rows = 272;
  for (const LayoutPiece& x : Layout(*FindProjector("pixtral"), g, 0)) text += x.rows ? "[" + std::to_string(x.rows) + "]" : x.text;
  EXPECT_EQ(text, "[272][IMG_END]");
}

TEST(Pixtral, RopeLayoutIsGgmls) {
  // Head width 8: the row rotates dims 0..3 in adjacent pairs (frequencies 1, 1/100), the
  // column dims 4..7 with the odd ones (1/10, 1/1000).
  const std::vector<RopeSegment> l = PixtralRope(8, 10000.0f);
  ASSERT_EQ(l.size(), 2u);
  std::vector<int32_t> pos[2] = {{3}, {5}};
  std::vector<float> x = {1, 0, 1, 0, 1, 0, 1, 0};
  ApplyRope2D(l, 10000.0f, pos, 1, 1, 8, x.data());
  const double want[4] = {3.0, 3.0 / 100, 5.0 / 10, 5.0 / 1000};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(x[size_t(2 * i)], std::cos(want[i]), 1e-5) << i;
    EXPECT_NEAR(x[size_t(2 * i + 1)], std::sin(want[i]), 1e-5) << i;
  }
}

struct Variant {
  const char* name;
  // max_norm_error: per token's norm, relative. Q8_0's five block products after the ViT
  // (merger, mm.1, mm.2 and the blocks' own) quantize their inputs as ggml does, so the last-bit
  // differences flip some roundings: measured up to 4.6e-3 with cosine still >= 0.99991.
  double min_cosine, max_norm_error;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class PixtralGolden : public ::testing::TestWithParam<Variant> {};

// libmtmd's chunks: the image's rows, then [IMG_END] as text.
TEST_P(PixtralGolden, PixelsAndEmbeddingsMatchLibmtmd) {
  const Variant& var = GetParam();
  test::ExpectOwnSizeGolden("pixtral", var.name, 0, 2, var.min_cosine, var.max_norm_error);
}

INSTANTIATE_TEST_SUITE_P(Types, PixtralGolden,
                         ::testing::Values(Variant{"f32", 0.9999, 1e-3}, Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 1e-2}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zf::vision

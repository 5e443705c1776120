// LFM2-VL (clip.projector_type lfm2) against libmtmd (tests/data/golden/vision/lfm2-<type>.json,
// mmproj_recorder --tiles): the synthesized projectors of the fixture vision.models (SigLIP,
// width 64, 16 px patches, a 16 x 16 position table, pixel unshuffle by 2, LayerNorm + mm.1 /
// GELU / mm.2 to the synthesized LFM2's 256) on two Pattern pictures and test-1.jpeg, each one
// image under lfm2's 256-token budget (640 x 384, 288 x 704, 576 x 416 after the resize: the
// position table resized up on one side and down on the other): the resized image pixel for
// pixel (Pillow's bilinear, no border), the rows, the markers around them; and a 1024 x 768
// Pattern picture (lfm2-<type>-tiled.json, --tiles 1024x768) that libmtmd cuts into 3 x 2 tiles
// of 512 px (a PAD_CEIL fit) and a 576 x 416 thumbnail: every input pixel for pixel, every
// chunk's rows.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chunked_golden.h"
#include "golden_check.h"
#include "golden_images.h"
#include "own_size_golden.h"
#include "test_images.h"
#include "vision/encoder.h"
#include "vision/lfm2_vl.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"
#include "vision/projector.h"

namespace zf::vision {
namespace {

TEST(Lfm2Vl, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("lfm2", "f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  EXPECT_EQ(hp.projector, "lfm2");
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->vit, Vit::kLfm2);
  EXPECT_EQ(hp.spec->tiling, Tiling::kSmartResize);
  EXPECT_FALSE(hp.spec->bidirectional);
  EXPECT_EQ(hp.n_merge, 2);
  EXPECT_EQ(hp.proj_width, 256);
  EXPECT_EQ(m->mm1.in, 64 * 4);
  EXPECT_EQ(m->input_norm.size(), 256u);
  EXPECT_EQ(m->input_norm_b.size(), 256u);
  EXPECT_EQ(hp.min_pixels, 64 * 32 * 32);
  EXPECT_EQ(hp.max_pixels, 256 * 32 * 32);
  EXPECT_TRUE(m->CheckLanguageModel(256).ok());
  // 640 x 400 -> 640 x 384 (20 x 12 tokens); over the budget scaled down, under it up.
  EXPECT_EQ(PlanTiles(hp, 640, 400).rows, 240);
  int32_t w = 0, h = 0;
  DynamicSize(hp, 640, 488, &w, &h);
  EXPECT_EQ(w, 576);
  EXPECT_EQ(h, 416);
  DynamicSize(hp, 40, 40, &w, &h);
  EXPECT_GE(int64_t(w) * h, hp.min_pixels);
  // Over twice the budget (block-rounded sides, > 524288 px) libmtmd cuts tiles.
  EXPECT_FALSE(OverTileBudget(hp, 700, 700));
  EXPECT_FALSE(OverTileBudget(hp, 720, 720));  // 22.5 blocks round to even: 704 x 704
  EXPECT_TRUE(OverTileBudget(hp, 740, 740));   // 736 x 736: 541696 px
  EXPECT_TRUE(OverTileBudget(hp, 1024, 768));
  EXPECT_EQ(PlanTiles(hp, 700, 700).x, 0);
  const TileGrid g = PlanTiles(hp, 1024, 768);
  EXPECT_EQ(g.tile_rows, 256);  // 512 px tiles: 16 x 16 tokens
  EXPECT_EQ(g.total_rows(hp.n_tokens()), g.x * g.y * 256 + g.rows);
}

TEST(Lfm2Vl, TileGridByAspectRatio) {
  // The grids of 2..10 tiles whose aspect ratio is the image's, or the closest.
  const TileRule& r = FindProjector("lfm2")->tiles;
  int32_t x = 0, y = 0;
  ChooseTileGrid(r, 2048, 1024, &x, &y);
  EXPECT_EQ(x * 1, y * 2);
  ChooseTileGrid(r, 600, 3000, &x, &y);
  EXPECT_EQ(x * 5, y * 1);
  ChooseTileGrid(r, 1500, 1000, &x, &y);
  EXPECT_EQ(x * 2, y * 3);
  // A square: 2 x 2 and 3 x 3 tie; the larger wins when the image covers half of its pixels
  // (3 x 3 x 512 x 512 / 2 = 1179648).
  ChooseTileGrid(r, 1000, 1000, &x, &y);
  EXPECT_EQ(x, 2);
  ChooseTileGrid(r, 1100, 1100, &x, &y);
  EXPECT_EQ(x, 3);
  EXPECT_EQ(y, 3);
}

TEST(Lfm2Vl, LayoutIsLibmtmds) {
  std::string text;
  TileGrid g;
  g.rows = 240;
  for (const LayoutPiece& x : Layout(*FindProjector("lfm2"), g, 0)) text += x.rows ? "[" + std::to_string(x.rows) + "]" : x.text;
  EXPECT_EQ(text, "<|image_start|>[240]<|image_end|>");
  // Tiled (mtmd.cpp's MTMD_SLICE_TMPL_LFM2): each tile after its row/column marker, no text
  // between rows, the thumbnail after <|img_thumbnail|>, all between the image's markers.
  g.x = 2;
  g.y = 2;
  g.rows = 234;
  g.tile_rows = 256;
  text.clear();
  for (const LayoutPiece& x : Layout(*FindProjector("lfm2"), g, 64)) text += x.rows ? "[" + std::to_string(x.rows) + "]" : x.text;
  EXPECT_EQ(text,
            "<|image_start|><|img_row_1_col_1|>[256]<|img_row_1_col_2|>[256]<|img_row_2_col_1|>[256]<|img_row_2_col_2|>[256]"
            "<|img_thumbnail|>[234]<|image_end|>");
}

TEST(Lfm2Vl, PositionResize) {
  // The same size: the table itself; a constant table stays constant either way.
  const std::vector<float> ramp = {0, 1, 2, 3};  // 2 x 2, one channel
  EXPECT_EQ(ResizePositions(ramp, 1, 2, 2, 2), ramp);
  const std::vector<float> flat(size_t(4 * 4 * 3), 0.25f);
  for (float v : ResizePositions(flat, 3, 4, 7, 2)) EXPECT_FLOAT_EQ(v, 0.25f);
  // Doubling a 2-wide row: half-pixel centres, edges clamped (0, 0.25, 0.75, 1).
  const std::vector<float> up = ResizePositions(std::vector<float>{0, 1, 0, 1}, 1, 2, 4, 2);
  ASSERT_EQ(up.size(), 8u);
  EXPECT_FLOAT_EQ(up[0], 0.0f);
  EXPECT_FLOAT_EQ(up[1], 0.25f);
  EXPECT_FLOAT_EQ(up[2], 0.75f);
  EXPECT_FLOAT_EQ(up[3], 1.0f);
}

struct Variant {
  const char* name;
  double min_cosine, max_norm_error;  // max_norm_error: per token's norm, relative
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Lfm2VlGolden : public ::testing::TestWithParam<Variant> {};

// libmtmd's chunks: <|image_start|> as text, the image's rows, <|image_end|>.
TEST_P(Lfm2VlGolden, PixelsAndEmbeddingsMatchLibmtmd) {
  const Variant& var = GetParam();
  test::ExpectOwnSizeGolden("lfm2", var.name, 1, 3, var.min_cosine, var.max_norm_error);
}

// A picture libmtmd tiles (and the two it does not, again): tiles and thumbnail pixel for pixel,
// then every chunk's rows, tiles first.
TEST_P(Lfm2VlGolden, TilesAndThumbnailMatchLibmtmd) {
  const Variant& var = GetParam();
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("lfm2", var.name, &golden, "-tiled");
  ASSERT_NE(m, nullptr);
  bool tiled = false;
  for (const auto& gi : golden["images"]) tiled = tiled || gi["chunks"].size() > 3;
  EXPECT_TRUE(tiled) << "the golden has no tiled picture";
  test::ExpectChunkedGolden(*m, golden, std::string("lfm2 ") + var.name, var.min_cosine, var.max_norm_error);
}

INSTANTIATE_TEST_SUITE_P(Types, Lfm2VlGolden,
                         ::testing::Values(Variant{"f32", 0.9999, 1e-3}, Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 1e-2}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zf::vision

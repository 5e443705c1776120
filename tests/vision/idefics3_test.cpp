// Idefics3 (SmolVLM) against libmtmd (tests/data/golden/vision/idefics3-<type>.json,
// mmproj_recorder --tiles): the synthesized projectors of the fixture vision.models (512 px
// tiles, patch 16, pixel shuffle 4: 64 tokens per tile, projection to SmolLM2's 576) on two
// Pattern pictures (2 x 2 and 1 x 2 tiles) and llama.cpp's tools/mtmd/test-1.jpeg (2 x 2): the
// tile grid, every tile and the overview pixel for pixel (Lanczos resizes), every chunk's
// embeddings, and the layout's order against the recorder's chunks.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chunked_golden.h"
#include "golden_check.h"
#include "golden_images.h"
#include "test_images.h"
#include "vision/encoder.h"
#include "vision/image.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"
#include "vision/projector.h"

namespace zf::vision {
namespace {

std::unique_ptr<Mmproj> Load(const std::string& type, nlohmann::json* golden) {
  return test::LoadWithGolden("idefics3", type, golden);
}

TEST(Idefics3, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = Load("f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  EXPECT_EQ(hp.projector, "idefics3");
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->merge, Merge::kPixelShuffle);
  EXPECT_EQ(hp.spec->tiling, Tiling::kLongestEdge);
  EXPECT_FALSE(hp.spec->bidirectional);
  EXPECT_EQ(hp.image_size, 512);
  EXPECT_EQ(hp.n_merge, 4);
  EXPECT_EQ(hp.longest_edge, 1024);
  EXPECT_EQ(hp.n_tokens(), 64);
  EXPECT_EQ(hp.proj_width, 576);
  EXPECT_EQ(m->proj.in, 64 * 16);
  EXPECT_TRUE(m->CheckLanguageModel(576).ok());
  EXPECT_FALSE(m->CheckLanguageModel(640).ok());
  // The grid from the size alone: the longer side to 1024, the other by the ratio (even).
  EXPECT_EQ(PlanTiles(hp, 640, 400).x, 2);
  EXPECT_EQ(PlanTiles(hp, 640, 400).y, 2);   // 1024 x 640
  EXPECT_EQ(PlanTiles(hp, 300, 700).x, 1);   // 438 x 1024
  EXPECT_EQ(PlanTiles(hp, 300, 700).y, 2);
  EXPECT_EQ(PlanTiles(hp, 512, 512).n_images(), 5);  // 1024 x 1024: upscaled, 2 x 2
  EXPECT_EQ(PlanTiles(hp, 4000, 10).n_images(), 3);  // 1024 x 2: one row of two tiles
}

TEST(Idefics3, LayoutIsLibmtmds) {
  const ProjectorSpec& s = *FindProjector("idefics3");
  const std::vector<LayoutPiece> p = Layout(s, TileGrid{2, 1}, 64);
  std::string text;
  int64_t rows = 0;
  for (const LayoutPiece& x : p) {
    text += x.rows > 0 ? "[" + std::to_string(x.rows) + "]" : x.text;
    rows += x.rows;
  }
  EXPECT_EQ(text,
            "<fake_token_around_image><row_1_col_1>[64]<fake_token_around_image><row_1_col_2>[64]\n\n"
            "<fake_token_around_image><global-img>[64]<fake_token_around_image>");
  EXPECT_EQ(rows, 3 * 64);
  std::string g;
  for (const LayoutPiece& x : Layout(*FindProjector("gemma3"), TileGrid{}, 256)) g += x.rows ? "[]" : x.text;
  EXPECT_EQ(g, "<start_of_image>[]<end_of_image>");
  EXPECT_EQ(FindProjector("lightonocr"), nullptr);
}

struct Variant {
  const char* name;
  double min_cosine;
  // Per token's norm, relative. Q8_0's mm.model.fc quantizes its input to Q8_0 as ggml does, so
  // the encoder's last-bit differences flip some of its roundings: measured up to 9e-4
  // (AVX-512) and 1.1e-3 (ZF_NO_AVX512=1), cosine still >= 0.99996.
  double max_norm_error;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Idefics3Golden : public ::testing::TestWithParam<Variant> {};

// Tiles and overview pixel for pixel, then every chunk's rows.
TEST_P(Idefics3Golden, TilesAndEmbeddingsMatchLibmtmd) {
  const Variant& var = GetParam();
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = Load(var.name, &golden);
  ASSERT_NE(m, nullptr);
  test::ExpectChunkedGolden(*m, golden, std::string("idefics3 ") + var.name, var.min_cosine, var.max_norm_error);
}

INSTANTIATE_TEST_SUITE_P(Types, Idefics3Golden, ::testing::Values(Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 3e-3}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zf::vision

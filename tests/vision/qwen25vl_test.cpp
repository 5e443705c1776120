// Qwen2.5-VL's vision encoder (clip.projector_type qwen2.5vl_merger) against libmtmd
// (tests/data/golden/vision/qwen25vl-<type>.json, mmproj_recorder on the synthesized projectors of
// the fixture vision.models: 14 px patches merged 2 x 2, 4 blocks with window attention on 0 and
// 2, images at their own sizes, projection to the synthesized qwen2vl model's 256): the planned
// size, the preprocessed image pixel for pixel (bicubic), the embeddings of two Pattern pictures,
// the window order, and refusals of broken files.
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
#include "vision/image.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"
#include "vision/projector.h"
#include "vision/qwen_vl.h"

namespace zf::vision {
namespace {

TEST(Qwen25vl, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("qwen25vl", "f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->vit, Vit::kQwen25vl);
  EXPECT_EQ(hp.spec->tiling, Tiling::kDynamic);
  EXPECT_EQ(std::string(hp.spec->family), "qwen2vl");
  EXPECT_EQ(hp.n_merge, 2);  // clip.cpp's default: the file has no spatial_merge_size
  EXPECT_EQ(hp.proj_width, 256);
  EXPECT_EQ(hp.min_pixels, 8 * 28 * 28);
  EXPECT_EQ(hp.max_pixels, 4096 * 28 * 28);
  ASSERT_NE(m->qwen_vl, nullptr);
  EXPECT_EQ(m->qwen_vl->n_wa_pattern, 2);
  // Sizes: rounded to whole 28 px blocks, then into 8..4096 tokens.
  const TileGrid a = PlanTiles(hp, 640, 400);
  EXPECT_EQ(a.w, 644);
  EXPECT_EQ(a.h, 392);
  EXPECT_EQ(a.rows, 23 * 14);
  const TileGrid small = PlanTiles(hp, 20, 20);  // scaled up to the 8-token floor
  EXPECT_GE(small.rows, 8);
  const TileGrid big = PlanTiles(hp, 4000, 3000);  // scaled down under 4096 tokens
  EXPECT_LE(big.rows, 4096);
  EXPECT_EQ(big.w % 28, 0);
  std::string text;
  for (const LayoutPiece& p : Layout(*hp.spec, a, hp.n_tokens())) text += p.rows ? "[" + std::to_string(p.rows) + "]" : p.text;
  EXPECT_EQ(text, "<|vision_start|>[322]<|vision_end|>");
}

TEST(Qwen25vl, WindowOrder) {
  // 5 x 3 merged tokens in 2 x 2 windows: [0 1 5 6] [2 3 7 8] [4 9] [10 11] [12 13] [14].
  std::vector<int32_t> idx, inv, windows;
  QwenVlWindows(5, 3, 2, &idx, &inv, &windows);
  EXPECT_EQ(inv, (std::vector<int32_t>{0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(windows, (std::vector<int32_t>{4, 4, 2, 2, 2, 1}));
  for (size_t i = 0; i < idx.size(); ++i) EXPECT_EQ(inv[size_t(idx[i])], int32_t(i));
}

TEST(Qwen25vl, RopeRotatesRowsThenColumns) {
  // Head width 8: pairs (0, 4), (1, 5) by the row, (2, 6), (3, 7) by the column, base 10000,
  // frequencies 10000^(-2j/4) within each section.
  std::vector<float> x = {1, 1, 1, 1, 0, 0, 0, 0};
  const int32_t py = 2, px = 3;
  QwenVlRope(&py, &px, 1, 1, 8, x.data());
  const float th[4] = {2.0f, 2.0f * 0.01f, 3.0f, 3.0f * 0.01f};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(x[size_t(j)], std::cos(th[j]), 1e-6) << j;
    EXPECT_NEAR(x[size_t(j + 4)], std::sin(th[j]), 1e-6) << j;
  }
}

struct Variant {
  const char* name;
  double min_cosine;
  double max_norm_error;  // relative, per token
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Qwen25vlGolden : public ::testing::TestWithParam<Variant> {};

TEST_P(Qwen25vlGolden, PreprocessingAndEmbeddingsMatchLibmtmd) {
  test::ExpectImagesGolden("qwen25vl", GetParam().name, GetParam().min_cosine, GetParam().max_norm_error);
}

// Q8_0: every activation of the 4 blocks and the merger rounded to 8 bits on both sides, in
// different orders (measured: min cosine 0.99979, worst token norm 5.6e-3 relative).
INSTANTIATE_TEST_SUITE_P(Types, Qwen25vlGolden,
                         ::testing::Values(Variant{"f32", 0.9999, 1e-3}, Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 1e-2}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// The fixture's F16 file with one equal-length byte edit; the load's error.
std::string LoadEdited(const std::string& from, const std::string& to) { return test::LoadEditedF16("qwen25vl", from, to); }

TEST(Qwen25vl, BrokenFilesAreRefusedByName) {
  EXPECT_NE(LoadEdited("v.patch_embd.weight.1", "v.patch_embd.weight.2").find("'v.patch_embd.weight.1' is missing"),
            std::string::npos);
  EXPECT_NE(LoadEdited("clip.vision.n_wa_pattern", "clip.vision.n_wa_patterx").find("clip.vision.n_wa_pattern"),
            std::string::npos);
  EXPECT_NE(LoadEdited("v.blk.1.ffn_gate.bias", "v.blk.1.ffn_gate.biax").find("v.blk.1.ffn_gate.bias"), std::string::npos);
  EXPECT_NE(LoadEdited("clip.use_silu", "clip.use_silx").find("clip.use_silu"), std::string::npos);
}

}  // namespace
}  // namespace zf::vision

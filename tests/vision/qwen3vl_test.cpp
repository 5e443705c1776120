// Qwen3-VL's vision encoder (clip.projector_type qwen3vl_merger) against libmtmd
// (tests/data/golden/vision/qwen3vl-<type>.json, mmproj_recorder on the synthesized projectors of
// the fixture vision.models: 16 px patches merged 2 x 2, a 32 x 32 position table resized to each
// image's grid, 3 LayerNorm blocks with fused q/k/v and a GELU MLP, a deepstack merger after
// block 1, projection to the synthesized qwen3vl model's 256): the planned size, the preprocessed
// image pixel for pixel, the embeddings of two Pattern pictures (each row the main merger's 256
// floats, then the deepstack merger's 256, as libmtmd's output), and refusals of broken files.
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

TEST(Qwen3vl, Hparams) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = test::LoadWithGolden("qwen3vl", "f16", &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  ASSERT_NE(hp.spec, nullptr);
  EXPECT_EQ(hp.spec->vit, Vit::kQwen3vl);
  EXPECT_EQ(hp.spec->tiling, Tiling::kDynamic);
  EXPECT_TRUE(ForFamily(*hp.spec, "qwen3vl"));
  EXPECT_TRUE(ForFamily(*hp.spec, "qwen35"));  // Qwen 3.5's files: the same type, no deepstack
  EXPECT_TRUE(ForFamily(*hp.spec, "qwen35moe"));
  EXPECT_FALSE(ForFamily(*hp.spec, "qwen2vl"));
  EXPECT_EQ(hp.n_merge, 2);
  EXPECT_EQ(hp.proj_width, 256);
  EXPECT_EQ(hp.n_deepstack, 1);
  EXPECT_EQ(hp.row_width(), 512);
  EXPECT_EQ(hp.min_pixels, 8 * 32 * 32);
  EXPECT_EQ(hp.max_pixels, 4096 * 32 * 32);
  ASSERT_NE(m->qwen_vl, nullptr);
  EXPECT_TRUE(m->qwen_vl->layer_norm);
  EXPECT_EQ(m->qwen_vl->n_wa_pattern, 0);  // no windows
  EXPECT_EQ(m->qwen_vl->pos_side, 32);
  ASSERT_EQ(m->qwen_vl->deepstack.size(), 1u);
  EXPECT_EQ(m->qwen_vl->deepstack[0].layer, 1);
  // The LM's input row is n_embd x (1 + deepstack layers), as libmtmd checks it.
  EXPECT_TRUE(m->CheckLanguageModel(512).ok());
  const Status s = m->CheckLanguageModel(256);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deepstack"), std::string::npos) << s.message();
  EXPECT_EQ(golden["images"][0]["n_embd"].get<int>(), 512);  // libmtmd's row (clip_n_mmproj_embd)
  const TileGrid a = PlanTiles(hp, 640, 400);
  EXPECT_EQ(a.w % 32, 0);
  EXPECT_EQ(a.h % 32, 0);
  EXPECT_EQ(a.rows, int64_t(a.w / 32) * (a.h / 32));
  std::string text;
  for (const LayoutPiece& p : Layout(*hp.spec, a, hp.n_tokens())) text += p.rows ? "[" + std::to_string(p.rows) + "]" : p.text;
  EXPECT_EQ(text, "<|vision_start|>[" + std::to_string(a.rows) + "]<|vision_end|>");
}

TEST(Qwen3vl, PositionTableResizedWithCornersAligned) {
  // A 2 x 2 table of one float to 3 x 3 (ggml_interpolate, bilinear, ALIGN_CORNERS): the corners
  // as they are, the edges' midpoints and the centre the means.
  const std::vector<float> t = {0, 4, 8, 16};
  const std::vector<float> r = ResizePositionsAligned(t, 1, 2, 3, 3);
  EXPECT_EQ(r, (std::vector<float>{0, 2, 4, 4, 7, 10, 8, 12, 16}));
  EXPECT_EQ(ResizePositionsAligned(t, 1, 2, 2, 2), t);  // the table's own size: as is
  // Down to one column: ggml's scale out / in and no offset take the first column.
  EXPECT_EQ(ResizePositionsAligned(t, 1, 2, 1, 2), (std::vector<float>{0, 8}));
}

struct Variant {
  const char* name;
  double min_cosine;
  double max_norm_error;  // relative, per token
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Qwen3vlGolden : public ::testing::TestWithParam<Variant> {};

TEST_P(Qwen3vlGolden, PreprocessingAndEmbeddingsMatchLibmtmd) {
  test::ExpectImagesGolden("qwen3vl", GetParam().name, GetParam().min_cosine, GetParam().max_norm_error);
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen3vlGolden,
                         ::testing::Values(Variant{"f32", 0.9999, 1e-3}, Variant{"f16", 0.9999, 1e-3}, Variant{"q8_0", 0.999, 1e-2}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// The fixture's F16 file with one equal-length byte edit; the load's error.
std::string LoadEdited(const std::string& from, const std::string& to) { return test::LoadEditedF16("qwen3vl", from, to); }

TEST(Qwen3vl, BrokenFilesAreRefusedByName) {
  EXPECT_NE(LoadEdited("v.patch_embd.bias", "v.patch_embd.biax").find("v.patch_embd.bias"), std::string::npos);
  EXPECT_NE(LoadEdited("v.position_embd.weight", "v.position_embd.weighx").find("v.position_embd.weight"),
            std::string::npos);
  EXPECT_NE(LoadEdited("v.blk.2.ln2.bias", "v.blk.2.ln2.biax").find("v.blk.2.ln2.bias"), std::string::npos);
  EXPECT_NE(LoadEdited("v.deepstack.1.fc2.weight", "v.deepstack.1.fc2.weighx").find("v.deepstack.1.fc2.weight"),
            std::string::npos);
  EXPECT_NE(LoadEdited("clip.use_gelu", "clip.use_gelx").find("clip.use_gelu"), std::string::npos);
}

}  // namespace
}  // namespace zf::vision

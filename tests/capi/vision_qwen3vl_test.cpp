// Qwen3-VL through the C ABI on the synthesized qwen3vl model (Qwen 3 blocks, interleaved M-RoPE
// sections [12, 14, 14, 0], one deepstack layer, width 256; the fixture vision.models writes
// qwen3vl-q8_0.gguf) and the synthesized qwen3vl_merger projectors: zf_image_embed gives libmtmd's
// rows, each 256 x (1 + 1) floats (the main merger's, then the deepstack merger's: the golden of
// tests/vision/qwen3vl_test.cpp); zf_session_eval_embeddings takes rows of that width only;
// zf_session_eval_image places them as libmtmd does (tests/data/golden/vision/qwen3vl-<type>-lm.json,
// mmproj_recorder --lm-chatml): the rows at 2D M-RoPE positions, each row's first 256 floats the
// input and the next 256 added to layer 0's output, the text after the image at t + max(nx, ny).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "vision/golden_check.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::MmprojPtr;
using zf::capitest::ModelPtr;
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;

std::string LmPath() { return std::string(ZF_VISION_MODELS_DIR) + "/qwen3vl-q8_0.gguf"; }
// The same model with Qwen-VL's vision tokens (libmtmd's markers): the placement goldens' LM.
std::string VlLmPath() { return std::string(ZF_VISION_MODELS_DIR) + "/qwen3vl-vl.gguf"; }

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
constexpr double kMinCosine = 0.998;

TEST(CapiQwen3vl, EmbedsRowsWithTheirDeepstackSlices) {
  ZF_REQUIRE_VISION_FILE(LmPath());
  zf_model* raw = nullptr;
  ASSERT_EQ(zf_model_load(LmPath().c_str(), nullptr, &raw), ZF_OK) << zf_last_error();
  ModelPtr model(raw);
  zf_mmproj* p = nullptr;
  const std::string mm = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-qwen3vl-f16.gguf";
  ASSERT_EQ(zf_mmproj_load(model.get(), mm.c_str(), 0, &p), ZF_OK) << zf_last_error();
  MmprojPtr mmproj(p);
  std::vector<float> rows;  // the row: n_embd 256 x (1 + 1 deepstack merger)
  zf::capitest::ExpectEmbedsAsGolden(mmproj.get(), "qwen3vl_merger", 512, "qwen3vl-f16", 0.9999, &rows);
  if (HasFatalFailure()) return;

  // Rows of the model's n_embd alone lack the deepstack slices: refused by name.
  SessionPtr s = NewSession(model.get(), 1024);
  ASSERT_NE(s, nullptr) << zf_last_error();
  EXPECT_EQ(zf_session_eval_embeddings(s.get(), rows.data(), 4, 256, 0, nullptr, 0), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("256 x (1 + 1 deepstack layers) = 512"), std::string::npos)
      << zf_last_error();

  // A Qwen2.5-VL projector (rows of 256, no deepstack) does not bind to it, naming the widths.
  const std::string q25 = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-qwen25vl-f16.gguf";
  EXPECT_EQ(zf_mmproj_load(model.get(), q25.c_str(), 0, &p), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("input width (n_embd x (1 + deepstack layers)) 512"), std::string::npos)
      << zf_last_error();
}

size_t CountTokens(const zf_model* m, const char* text) {
  size_t n = 0;
  int32_t ids[16];
  EXPECT_EQ(zf_tokenize(m, text, std::strlen(text), ZF_TOKENIZE_PARSE_SPECIAL, ids, 16, &n), ZF_OK) << zf_last_error();
  return n;
}

class CapiQwen3vlPlacement : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override { LoadCase(VlLmPath(), "qwen3vl"); }
};

// The golden's prompt through zf_session_eval_image (which places <|vision_start|> and
// <|vision_end|> itself): the entries, the image's grid and positions, the first step's centred
// logits and teacher-forced greedy steps as libmtmd's; n_past counts entries (libmtmd's counts
// positions: the image takes max(nx, ny) of them).
TEST_P(CapiQwen3vlPlacement, RowsAndDeepstackPlacedAsLibmtmdPlacesThem) {
  const json& chunks = c_.golden["chunks"];
  ASSERT_EQ(chunks.size(), 3u);
  std::vector<int32_t> before = chunks[0]["text"], after = chunks[2]["text"];
  before.resize(before.size() - CountTokens(c_.model.get(), "<|vision_start|>"));
  after.erase(after.begin(), after.begin() + std::ptrdiff_t(CountTokens(c_.model.get(), "<|vision_end|>")));
  const int32_t nx = chunks[1]["nx"], ny = chunks[1]["ny"], n_pos = chunks[1]["n_pos"];
  EXPECT_EQ(chunks[1]["image_tokens"].get<int32_t>(), nx * ny);
  EXPECT_EQ(n_pos, std::max(nx, ny));

  const zf_image im = Rgb(c_.rgb, c_.w, c_.h);
  SessionPtr s = NewSession(c_.model.get(), 1024);
  std::vector<float> logits(c_.n_vocab);
  ASSERT_EQ(zf_session_eval(s.get(), before.data(), before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_image(s.get(), c_.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK) << zf_last_error();
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, c_.golden["n_past"].get<int32_t>() - n_pos + nx * ny);
  const zf::capitest::GoldenRun r = zf::capitest::ExpectRunAsGolden(c_.golden, s.get(), logits, kMinCosine, kTieMargin);
  std::printf("[ qwen3vl %s ] %d x %d tokens at %d positions; first-step centred cosine %.7f; greedy %d/%zu exact, "
              "worst near-tie gap %.3f\n",
              GetParam().c_str(), nx, ny, n_pos, r.cosine, r.exact, c_.golden["greedy"].size(), r.worst_gap);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiQwen3vlPlacement, ::testing::Values("f16", "q8_0"));

}  // namespace

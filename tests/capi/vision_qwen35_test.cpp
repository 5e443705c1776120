// Qwen 3.5's images through the C ABI: the synthesized qwen35 model (gated DeltaNet layers and
// gated attention with interleaved M-RoPE sections [3, 3, 2, 0], width 128; the fixture
// vision.models writes it with Qwen-VL's vision tokens as qwen35-vl.gguf) and a qwen3vl_merger
// projector without deepstack (mmproj-qwen35-<type>.gguf, as libmtmd's converter writes Qwen
// 3.5's). zf_session_eval_image places the rows as libmtmd does (tests/data/golden/vision/
// qwen35-<type>-lm.json, mmproj_recorder --lm-chatml): 2D M-RoPE positions in the attention
// layers, the rows in order through the DeltaNet layers, the text after the image at
// t + max(nx, ny). A session truncated into or after the image (a recurrent model: back to a
// state checkpoint, the image's rows evaluated again at their places) continues with the bits of
// a fresh evaluation.
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
using zf::capitest::ImageTurn;
using zf::capitest::MmprojPtr;
using zf::capitest::ModelPtr;
using zf::capitest::NewSession;
using zf::capitest::Outcome;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;
using zf::capitest::SessionTokens;

std::string VlLmPath() { return std::string(ZF_VISION_MODELS_DIR) + "/qwen35-vl.gguf"; }

// As the other placement tests: a greedy token may differ from libmtmd's only at a near-tie.
constexpr double kTieMargin = 1.25;
// Measured 0.99978 (F16) / 0.99921 (Q8_0), with ZF_NO_AVX512=1 0.99969 / 0.99812: this narrow
// synthesized hybrid amplifies the rows' last bits (doc/vision.md, Qwen 3.5).
constexpr double kMinCosine = 0.996;

size_t CountTokens(const zf_model* m, const char* text) {
  size_t n = 0;
  int32_t ids[16];
  EXPECT_EQ(zf_tokenize(m, text, std::strlen(text), ZF_TOKENIZE_PARSE_SPECIAL, ids, 16, &n), ZF_OK) << zf_last_error();
  return n;
}

class CapiQwen35Placement : public zf::capitest::PlacementTest {
 protected:
  void SetUp() override { LoadCase(VlLmPath(), "qwen35"); }
};

// The golden's prompt through zf_session_eval_image (which places <|vision_start|> and
// <|vision_end|> itself): the entries, the first step's centred logits and teacher-forced greedy
// steps as libmtmd's; n_past counts entries (libmtmd's counts positions).
TEST_P(CapiQwen35Placement, RowsPlacedAsLibmtmdPlacesThem) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(c_.mmproj.get());
  if (HasFailure()) return;
  EXPECT_STREQ(info.projector_type, "qwen3vl_merger");
  EXPECT_EQ(info.n_embd, 128);  // no deepstack: a row is the model's n_embd
  // The rows themselves as libmtmd's (qwen35-<type>.json: mmproj_recorder on the same pair).
  std::ifstream eg(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/qwen35-" + GetParam() + ".json");
  ASSERT_TRUE(eg.good());
  const json embd_golden = json::parse(eg);
  const json& gi = embd_golden["images"][0];
  ASSERT_EQ(gi["width"].get<uint32_t>(), c_.w);
  const zf_image eim = Rgb(c_.rgb, c_.w, c_.h);
  std::vector<float> rows(size_t(gi["n_tokens"].get<int32_t>()) * 128);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(c_.mmproj.get(), &eim, 2, rows.data(), rows.size(), &needed, &n_tok), ZF_OK) << zf_last_error();
  const zf::vision::test::GoldenFit fit = zf::vision::test::ExpectMatchesGolden(
      rows, gi, GetParam() == "q8_0" ? 0.9995 : 0.99999, "qwen35 " + GetParam() + " rows", 1e-2);

  const json& img = c_.golden["chunks"][1];
  EXPECT_EQ(img["n_pos"].get<int32_t>(), std::max(img["nx"].get<int32_t>(), img["ny"].get<int32_t>()));
  std::printf("[ qwen35 %s ] rows: min cosine %.7f, worst norm %.2e\n", GetParam().c_str(), fit.min_cosine, fit.worst_norm);
  zf::capitest::ExpectPlacedAsGolden(c_, "qwen35 " + GetParam(), CountTokens(c_.model.get(), "<|vision_start|>"),
                                     CountTokens(c_.model.get(), "<|vision_end|>"), kMinCosine, kTieMargin);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiQwen35Placement, ::testing::Values("f16", "q8_0"));

// Chat turns with the image (zerfoo's ChatML fallback: the synthesized file has no template):
// truncated at the image's first row, at half its rows (past the state checkpoints at 64 and
// 128) and after it, the session rolls back to a checkpoint, evaluates the kept rows again at
// their M-RoPE places, and the next turn continues the image with the first turn's bits; a
// fresh session gives them too. And the raw route truncated after the image: the text resumes
// at its M-RoPE position.
TEST(CapiQwen35, TruncationIntoAndAfterTheImageGivesFreshBits) {
  ZF_REQUIRE_VISION_FILE(VlLmPath());
  ModelPtr model = zf::capitest::Load(VlLmPath());
  ASSERT_NE(model, nullptr);
  zf_mmproj* p = nullptr;
  const std::string mm = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-qwen35-f16.gguf";
  ASSERT_EQ(zf_mmproj_load(model.get(), mm.c_str(), 0, &p), ZF_OK) << zf_last_error();
  MmprojPtr mmproj(p);
  std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/qwen35-f16-lm.json");
  ASSERT_TRUE(g.good());
  const json golden = json::parse(g);
  const uint32_t w = golden["image"]["width"], h = golden["image"]["height"];
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(int(w), int(h), golden["image"]["seed"].get<uint32_t>());
  const std::string png = zf::capitest::Base64(zf::vision::test::Png(int(w), int(h), rgb));

  SessionPtr s = NewSession(model.get(), 1024);
  Outcome a;
  ASSERT_EQ(ImageTurn(s.get(), mmproj.get(), png, &a), ZF_OK) << zf_last_error();
  ASSERT_FALSE(a.ids.empty());
  const std::vector<int32_t> toks = SessionTokens(s.get());
  size_t image_at = 0, n_rows = 0;
  zf::capitest::FindImageEntries(toks, &image_at, &n_rows);
  ASSERT_LT(image_at, toks.size());
  EXPECT_EQ(n_rows, golden["chunks"][1]["image_tokens"].get<size_t>());
  {
    SessionPtr fresh = NewSession(model.get(), 1024);
    Outcome b;
    ASSERT_EQ(ImageTurn(fresh.get(), mmproj.get(), png, &b), ZF_OK) << zf_last_error();
    EXPECT_EQ(b.ids, a.ids);
    EXPECT_EQ(b.logprobs, a.logprobs);
  }
  for (size_t keep : {image_at + 1, image_at + n_rows / 2, image_at + n_rows + 1}) {
    ASSERT_EQ(zf_session_truncate(s.get(), keep), ZF_OK) << zf_last_error();
    EXPECT_EQ(SessionTokens(s.get()), std::vector<int32_t>(toks.begin(), toks.begin() + std::ptrdiff_t(keep)));
    Outcome c;
    ASSERT_EQ(ImageTurn(s.get(), mmproj.get(), png, &c), ZF_OK) << zf_last_error();
    EXPECT_EQ(c.ids, a.ids) << "truncated to " << keep;
    EXPECT_EQ(c.logprobs, a.logprobs) << "truncated to " << keep;
  }

  // The raw route: truncated into the text after the image, the prompt's next entries give the
  // logits they gave before (the text at its M-RoPE positions).
  const size_t image_end = image_at + n_rows, last = image_end + 3;
  ASSERT_LT(last, toks.size());
  zf_model_summary ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  ASSERT_EQ(zf_model_info(model.get(), &ms), ZF_OK);
  std::vector<float> want(size_t(ms.n_vocab)), got(want.size());
  ASSERT_EQ(zf_session_truncate(s.get(), last), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), &toks[last], 1, want.data(), want.size()), ZF_OK) << zf_last_error();
  for (size_t keep : {image_end, image_end + 2}) {
    ASSERT_EQ(zf_session_truncate(s.get(), keep), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_eval(s.get(), &toks[keep], last + 1 - keep, got.data(), got.size()), ZF_OK) << zf_last_error();
    EXPECT_EQ(got, want) << "truncated to " << keep;
  }
}

}  // namespace

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
  zf_mmproj_summary info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_mmproj_info(c_.mmproj.get(), &info), ZF_OK);
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
  const std::vector<uint8_t> png = zf::vision::test::Png(int(c_.w), int(c_.h), c_.rgb);
  const json messages = json::array(
      {{{"role", "user"},
        {"content", json::array({{{"type", "text"}, {"text", "Describe the picture."}},
                                 {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + Base64(png)}}}}})}}});
  const std::string req = json{{"messages", messages}}.dump();
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.temperature = 0.0f;
  g.max_tokens = 1;
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  p.generate = &g;
  p.mmproj = c_.mmproj.get();
  size_t needed = 0;
  ASSERT_EQ(zf_chat_turn_prompt(c_.model.get(), &p, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  std::string prompt(needed, '\0');
  ASSERT_EQ(zf_chat_turn_prompt(c_.model.get(), &p, &prompt[0], prompt.size(), &needed), ZF_OK) << zf_last_error();
  prompt.resize(needed - 1);
  const std::string marker = "Describe the picture.[IMG_END]";
  const size_t at = prompt.find(marker);
  ASSERT_NE(at, std::string::npos) << prompt;

  SessionPtr s = NewSession(c_.model.get(), 1024);
  std::string text;
  ASSERT_EQ(zf_chat_turn(s.get(), &p,
                         [](void* u, const zf_turn_event* e) {
                           if (e->kind == ZF_TURN_CONTENT) static_cast<std::string*>(u)->append(e->text, e->text_len);
                           return int32_t(0);
                         },
                         &text, nullptr),
            ZF_OK)
      << zf_last_error();
  const std::vector<int32_t> turn = zf::capitest::SessionTokens(s.get());

  // The raw route on the same text: before the image, the image ([IMG_END] included), after.
  const size_t img_at = at + std::strlen("Describe the picture.");
  const auto tok = [&](const std::string& t, uint32_t flags) {
    std::vector<int32_t> ids(t.size() + 8);
    size_t n = 0;
    EXPECT_EQ(zf_tokenize(c_.model.get(), t.data(), t.size(), flags, ids.data(), ids.size(), &n), ZF_OK) << zf_last_error();
    ids.resize(n);
    return ids;
  };
  const std::vector<int32_t> before = tok(prompt.substr(0, img_at), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
  const std::vector<int32_t> after = tok(prompt.substr(at + marker.size()), ZF_TOKENIZE_PARSE_SPECIAL);
  SessionPtr r = NewSession(c_.model.get(), 1024);
  std::vector<float> logits(c_.n_vocab);
  const zf_image im = zf::capitest::Encoded(png);
  ASSERT_EQ(zf_session_eval(r.get(), before.data(), before.size(), nullptr, 0), ZF_OK);
  ASSERT_EQ(zf_session_eval_image(r.get(), c_.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(r.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK);
  const std::vector<int32_t> raw = zf::capitest::SessionTokens(r.get());
  ASSERT_GE(turn.size(), raw.size());
  EXPECT_EQ(std::vector<int32_t>(turn.begin(), turn.begin() + std::ptrdiff_t(raw.size())), raw);
  const int32_t first = Argmax(logits);
  if (turn.size() > raw.size()) EXPECT_EQ(turn[raw.size()], first);
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

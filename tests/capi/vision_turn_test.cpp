// Chat turns with images (zf_turn_params.mmproj, OpenAI image_url parts with data URLs) on
// Gemma 3 270M and the synthesized F16 projector (fixture vision.models): the prompt a turn
// evaluates is libmtmd's for the prompt llama-server renders (the token ids of
// tests/data/golden/vision/gemma3-f16-lm.json around the image, whose text is Gemma 3's template
// on this request) and its first greedy token libmtmd's; a second turn that keeps the image
// reuses the first turn's KV rows and gives a fresh session's logprobs bit for bit; another
// image at the same place is never served from the session or the prefix cache; refusals.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/turn_outcome.h"
#include "capi/vision_handles.h"
#include "common/test_models.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::Collect;
using zf::capitest::Outcome;
using zf::capitest::Load;
using zf::capitest::ModelPtr;
using zf::capitest::MmprojPtr;
using zf::capitest::NewSession;
using zf::capitest::SessionPtr;

json ImagePart(const std::vector<uint8_t>& png) { return zf::capitest::ImageUrlPart(zf::capitest::Base64(png)); }

class CapiVisionTurn : public ::testing::Test {
 protected:
  void SetUp() override {
    ZF_REQUIRE_MODEL(path, "gemma3");
    zf_model_params mp;
    zf_model_params_init(&mp, sizeof mp);
    mp.prefix_cache_mib = 64;  // sessions share KV blocks, those with image positions included
    zf_model* m = nullptr;
    ASSERT_EQ(zf_model_load(path.c_str(), &mp, &m), ZF_OK) << zf_last_error();
    model_.reset(m);
    zf_mmproj* p = nullptr;
    const std::string f = zf::capitest::MmprojFixture("f16");
    ASSERT_EQ(zf_mmproj_load(model_.get(), f.c_str(), 0, &p), ZF_OK) << zf_last_error();
    mmproj_.reset(p);
    std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/gemma3-f16-lm.json");
    ASSERT_TRUE(g.good());
    golden_ = json::parse(g);
    const json& im = golden_["image"];
    png_ = zf::vision::test::Png(im["width"], im["height"],
                                 zf::vision::test::Pattern(im["width"], im["height"], im["seed"].get<uint32_t>()));
  }
  zf_status Turn(zf_session* s, const json& messages, Outcome* out, const zf_mmproj* mmproj, int32_t max_tokens = 3) {
    zf_generate_params g;
    zf_generate_params_init(&g, sizeof g);
    g.temperature = 0.0f;
    g.max_tokens = max_tokens;
    g.n_logprobs = 5;
    zf_turn_params p;
    zf_turn_params_init(&p, sizeof p);
    const std::string req = json{{"messages", messages}}.dump();
    p.request_json = req.c_str();
    p.generate = &g;
    p.mmproj = mmproj;
    return zf_chat_turn(s, &p, Collect, out, nullptr);
  }
  json UserWithImage(const std::vector<uint8_t>& png) const {
    return {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "Describe the picture."}}, ImagePart(png)})}};
  }
  std::vector<int32_t> Tokens(const zf_session* s) const {
    size_t n = 0;
    (void)zf_session_tokens(s, nullptr, 0, &n);
    std::vector<int32_t> t(n);
    EXPECT_EQ(zf_session_tokens(s, t.data(), t.size(), &n), ZF_OK);
    return t;
  }

  ModelPtr model_;
  MmprojPtr mmproj_;
  json golden_;
  std::vector<uint8_t> png_;
};

TEST_F(CapiVisionTurn, PromptIsLibmtmdsAndReusedAcrossTurns) {
  SessionPtr s = NewSession(model_.get(), 1024);
  const json first = json::array({UserWithImage(png_)});
  Outcome a;
  ASSERT_EQ(Turn(s.get(), first, &a, mmproj_.get()), ZF_OK) << zf_last_error();
  // libmtmd's chunks: text (with <start_of_image>), 256 image positions, text.
  std::vector<int32_t> want = golden_["chunks"][0]["text"];
  const size_t image_at = want.size();
  want.resize(image_at + 256, -1);
  for (int32_t t : golden_["chunks"][2]["text"]) want.push_back(t);
  const std::vector<int32_t> got = Tokens(s.get());
  ASSERT_GE(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] < 0) {
      EXPECT_LT(got[i], 0) << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << i;
    }
  }
  EXPECT_EQ(a.n_prompt, int32_t(want.size()));
  ASSERT_FALSE(a.ids.empty());
  EXPECT_EQ(a.ids[0], golden_["greedy"][0]["token"].get<int32_t>());  // libmtmd's first greedy token

  // Turn 2 keeps the image in the history: the session's rows up to the answer are reused.
  json second = first;
  second.push_back({{"role", "assistant"}, {"content", a.text}});
  second.push_back({{"role", "user"}, {"content", "And the colours?"}});
  Outcome b;
  ASSERT_EQ(Turn(s.get(), second, &b, mmproj_.get()), ZF_OK) << zf_last_error();
  EXPECT_GE(b.n_cached, int32_t(want.size())) << "n_prompt " << b.n_prompt;
  // A fresh session gives the same logprobs bit for bit: it takes the image's blocks from the
  // model's prefix cache (their keys hold the image's hash) and evaluates the image's last rows
  // over them, attending both ways as the whole image did.
  SessionPtr fresh = NewSession(model_.get(), 1024);
  Outcome c;
  ASSERT_EQ(Turn(fresh.get(), second, &c, mmproj_.get()), ZF_OK) << zf_last_error();
  EXPECT_EQ(c.n_prompt, b.n_prompt);
  EXPECT_GE(c.n_cached, 64) << "the prefix cache served none of the image's blocks";
  EXPECT_EQ(b.ids, c.ids);
  EXPECT_EQ(b.logprobs, c.logprobs);
  EXPECT_EQ(b.text, c.text);
  // And a cold computation: the same file loaded without a prefix cache, its own projector.
  {
    ZF_REQUIRE_MODEL(path, "gemma3");
    zf_model_params mp;
    zf_model_params_init(&mp, sizeof mp);
    mp.prefix_cache_mib = -1;
    zf_model* m = nullptr;
    ASSERT_EQ(zf_model_load(path.c_str(), &mp, &m), ZF_OK) << zf_last_error();
    ModelPtr cold_model(m);
    zf_mmproj* p = nullptr;
    const std::string file = zf::capitest::MmprojFixture("f16");
    ASSERT_EQ(zf_mmproj_load(m, file.c_str(), 0, &p), ZF_OK) << zf_last_error();
    MmprojPtr cold_mmproj(p);
    SessionPtr cold = NewSession(m, 1024);
    Outcome h;
    ASSERT_EQ(Turn(cold.get(), second, &h, p), ZF_OK) << zf_last_error();
    EXPECT_EQ(h.n_cached, 0);
    EXPECT_EQ(b.logprobs, h.logprobs);
    EXPECT_EQ(b.text, h.text);
  }

  // Another image in the same place: nothing past the text before it is reused, from the
  // session or from the model's prefix cache (its blocks' keys hold the image's hash).
  const std::vector<uint8_t> other = zf::vision::test::Png(
      golden_["image"]["width"], golden_["image"]["height"],
      zf::vision::test::Pattern(golden_["image"]["width"], golden_["image"]["height"], 7));
  json third = second;
  third[0] = UserWithImage(other);
  SessionPtr e = NewSession(model_.get(), 1024);
  Outcome f;
  ASSERT_EQ(Turn(e.get(), third, &f, mmproj_.get()), ZF_OK) << zf_last_error();
  EXPECT_LE(f.n_cached, int32_t(image_at)) << "the prefix cache served rows of another image";
  // The conversation holding the first image: its own rows are kept up to the image; the other
  // image's blocks now come from the prefix cache (stored by the fresh session), the same bits.
  Outcome d;
  ASSERT_EQ(Turn(s.get(), third, &d, mmproj_.get()), ZF_OK) << zf_last_error();
  EXPECT_EQ(d.logprobs, f.logprobs);
  EXPECT_EQ(d.text, f.text);
  // A session cut inside the image continues it exactly: the first turn again, from 100 rows in
  // (the prefix cache adds the image's later full blocks; its last rows are evaluated over them).
  ASSERT_EQ(zf_session_truncate(fresh.get(), image_at + 100), ZF_OK);
  Outcome g;
  ASSERT_EQ(Turn(fresh.get(), first, &g, mmproj_.get()), ZF_OK) << zf_last_error();
  EXPECT_GE(g.n_cached, int32_t(image_at + 100));
  EXPECT_LT(g.n_cached, int32_t(image_at + 256));
  EXPECT_EQ(g.logprobs, a.logprobs);
  std::printf("[ turns ] 1: %d prompt tokens; 2: %d, %d cached (fresh session: %d); other image: %d cached "
              "(fresh session: %d); answer '%s'\n", a.n_prompt, b.n_prompt, b.n_cached, c.n_cached, d.n_cached,
              f.n_cached, a.text.c_str());
}

// zf_chat_turn_prompt with a projector: each image as its marker text, so the prompt's tokens
// plus the image's rows are the turn's n_prompt (what a server's token count answers).
TEST_F(CapiVisionTurn, RenderedPromptCountsAsTheTurn) {
  const json messages = json::array({UserWithImage(png_)});
  const std::string req = json{{"messages", messages}}.dump();
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  size_t needed = 0;
  EXPECT_EQ(zf_chat_turn_prompt(model_.get(), &p, nullptr, 0, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("request.messages[0].content[1]"), std::string::npos) << zf_last_error();
  p.mmproj = mmproj_.get();
  ASSERT_EQ(zf_chat_turn_prompt(model_.get(), &p, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  std::string text(needed, '\0');
  ASSERT_EQ(zf_chat_turn_prompt(model_.get(), &p, text.data(), text.size(), &needed), ZF_OK) << zf_last_error();
  text.resize(needed - 1);
  const size_t at = text.find("<start_of_image><end_of_image>");
  EXPECT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find("<start_of_image>", at + 1), std::string::npos) << text;  // one image, once
  std::vector<int32_t> toks(4096);
  size_t n = 0;
  ASSERT_EQ(zf_tokenize(model_.get(), text.data(), text.size(), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL,
                        toks.data(), toks.size(), &n),
            ZF_OK);
  zf_mmproj_summary info;
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_mmproj_info(mmproj_.get(), &info), ZF_OK);
  SessionPtr s = NewSession(model_.get(), 1024);
  Outcome a;
  ASSERT_EQ(Turn(s.get(), messages, &a, mmproj_.get(), 1), ZF_OK) << zf_last_error();
  EXPECT_EQ(int32_t(n) + info.n_tokens, a.n_prompt);
}

TEST_F(CapiVisionTurn, RefusalsNameThePart) {
  SessionPtr s = NewSession(model_.get(), 1024);
  Outcome o;
  const auto msg = [] { return std::string(zf_last_error()); };
  // No projector: the part is named and the reason given.
  EXPECT_EQ(Turn(s.get(), json::array({UserWithImage(png_)}), &o, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("request.messages[0].content[1]: an image part needs the model's vision projector"),
            std::string::npos) << msg();
  // An older caller's struct (before mmproj) is the same as none.
  {
    zf_turn_params p;
    zf_turn_params_init(&p, sizeof p);
    const std::string req = json{{"messages", json::array({UserWithImage(png_)})}}.dump();
    p.request_json = req.c_str();
    p.mmproj = mmproj_.get();
    p.struct_size = offsetof(zf_turn_params, mmproj);
    EXPECT_EQ(zf_chat_turn(s.get(), &p, Collect, &o, nullptr), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_NE(msg().find("needs the model's vision projector"), std::string::npos) << msg();
  }
  const auto with_url = [](const std::string& url) {
    return json::array({{{"role", "user"},
                         {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", url}}}}})}}});
  };
  EXPECT_EQ(Turn(s.get(), with_url("https://example.com/a.png"), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("request.messages[0].content[0].image_url.url: an http(s) URL"), std::string::npos) << msg();
  EXPECT_NE(msg().find("fetch the image first"), std::string::npos) << msg();
  EXPECT_EQ(Turn(s.get(), with_url("data:text/plain;base64,aGVsbG8="), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("is not an image"), std::string::npos) << msg();
  EXPECT_EQ(Turn(s.get(), with_url("data:image/png;base64,@@@"), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("invalid base64"), std::string::npos) << msg();
  EXPECT_EQ(Turn(s.get(), with_url("data:image/png;base64,aGVsbG8gd29ybGQ="), &o, mmproj_.get()),
            ZF_ERR_INVALID_ARGUMENT);  // bytes that are no image
  EXPECT_NE(msg().find("request.messages[0].content[0]"), std::string::npos) << msg();
  const json audio = json::array(
      {{{"role", "user"},
        {"content", json::array({{{"type", "input_audio"}, {"input_audio", {{"data", "AAAA"}, {"format", "wav"}}}}})}}});
  EXPECT_EQ(Turn(s.get(), audio, &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);  // an image projector
  EXPECT_NE(msg().find("request.messages[0].content[0]: the projector 'gemma3' encodes images, not audio"),
            std::string::npos)
      << msg();
  // A projector of another model (the same file loaded twice is two models).
  {
    ZF_REQUIRE_MODEL(path, "gemma3");
    ModelPtr other = Load(path);
    SessionPtr t = NewSession(other.get(), 1024);
    EXPECT_EQ(Turn(t.get(), json::array({UserWithImage(png_)}), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_NE(msg().find("params->mmproj was loaded for another model"), std::string::npos) << msg();
  }
  int32_t n_past = -1;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 0);
}

}  // namespace

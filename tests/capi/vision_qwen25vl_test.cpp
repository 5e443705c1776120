// Qwen2.5-VL's projector (qwen2.5vl_merger) through the C ABI on the synthesized qwen2vl model
// (tests/family's layout, width 256; the fixture vision.models writes qwen2vl-q8_0.gguf): the
// projector binds to the model, zf_image_embed gives libmtmd's rows (the golden of
// tests/vision/qwen25vl_test.cpp), and placement in the language model is refused by name until
// its M-RoPE positions are done (sequential positions would answer differently from libmtmd).
#include <gtest/gtest.h>

#include <sys/stat.h>

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

using zf::capitest::Load;
using zf::capitest::MmprojPtr;
using zf::capitest::ModelPtr;
using zf::capitest::NewSession;
using zf::capitest::Rgb;
using zf::capitest::SessionPtr;

TEST(CapiQwen25vl, EmbedsAsLibmtmdAndRefusesPlacementByName) {
  const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/qwen2vl-q8_0.gguf";
  struct stat st;
  if (stat(lm.c_str(), &st) != 0) GTEST_SKIP() << lm << " not written (the fixture vision.models writes it)";
  ModelPtr model = Load(lm);
  ASSERT_NE(model, nullptr) << zf_last_error();
  zf_mmproj* p = nullptr;
  const std::string f = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-qwen25vl-f16.gguf";
  ASSERT_EQ(zf_mmproj_load(model.get(), f.c_str(), 0, &p), ZF_OK) << zf_last_error();
  MmprojPtr mmproj(p);
  zf_mmproj_summary info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_mmproj_info(mmproj.get(), &info), ZF_OK);
  EXPECT_STREQ(info.projector_type, "qwen2.5vl_merger");
  EXPECT_EQ(info.n_embd, 256);

  std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/qwen25vl-f16.json");
  ASSERT_TRUE(g.good());
  const nlohmann::json golden = nlohmann::json::parse(g);
  const nlohmann::json& gi = golden["images"][0];
  const uint32_t w = gi["width"], h = gi["height"];
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(int(w), int(h), gi["seed"].get<uint32_t>());
  const zf_image im = Rgb(rgb, w, h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(mmproj.get(), &im, 2, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, gi["n_tokens"].get<int32_t>());  // 23 x 14 blocks of the 644 x 392 resize
  std::vector<float> rows(needed);
  ASSERT_EQ(zf_image_embed(mmproj.get(), &im, 2, rows.data(), rows.size(), &needed, &n_tok), ZF_OK) << zf_last_error();
  zf::vision::test::ExpectMatchesGolden(rows, gi, 0.9999, "qwen25vl f16 through the ABI");

  SessionPtr s = NewSession(model.get(), 1024);
  ASSERT_NE(s, nullptr) << zf_last_error();
  EXPECT_EQ(zf_session_eval_image(s.get(), mmproj.get(), &im, nullptr, 0), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("M-RoPE"), std::string::npos) << zf_last_error();
  EXPECT_EQ(zf_session_eval_embeddings(s.get(), rows.data(), size_t(n_tok), 256, 0, nullptr, 0), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("qwen2vl"), std::string::npos) << zf_last_error();
  // Text still runs, from an empty session.
  const int32_t tok = 785;
  EXPECT_EQ(zf_session_eval(s.get(), &tok, 1, nullptr, 0), ZF_OK) << zf_last_error();
}

}  // namespace

// The image part of the C ABI (issue #46): zf_mmproj_load / _info / _free and zf_image_embed on
// the synthesized Gemma 3 projectors of the fixture vision.models, bound to Gemma 3 270M (width
// 640). Embeddings through the ABI are checked against libmtmd's goldens as tests/vision checks
// src/vision's (tests/data/golden/vision), RGB8 pixels against the PNG of the same pixels, and
// every refusal by its status and the words of its message.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "common/test_models.h"
#include "vision/golden_check.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace {

using zf::capitest::Load;
using zf::capitest::Encoded;
using zf::capitest::ModelPtr;
using zf::capitest::MmprojPtr;
using zf::capitest::Rgb;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Fixture(const char* type) { return zf::capitest::MmprojFixture(type); }

// Embeds through the ABI the way a binding does: ask for the size, then fill.
std::vector<float> Embed(const zf_mmproj* p, const zf_image& im, int32_t n_threads = 2) {
  size_t needed = 0;
  int32_t n_tok = 0;
  EXPECT_EQ(zf_image_embed(p, &im, n_threads, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<float> out(needed);
  EXPECT_EQ(zf_image_embed(p, &im, n_threads, out.data(), out.size(), &needed, &n_tok), ZF_OK) << zf_last_error();
  EXPECT_EQ(needed, out.size());
  return out;
}

class CapiVision : public ::testing::Test {
 protected:
  void SetUp() override {
    ZF_REQUIRE_MODEL(path, "gemma3");
    model_ = Load(path, ZF_MODEL_VOCAB_ONLY);  // the projector needs the width and family only
    ASSERT_NE(model_, nullptr);
  }
  MmprojPtr LoadMmproj(const char* type) {
    zf_mmproj* p = nullptr;
    EXPECT_EQ(zf_mmproj_load(model_.get(), Fixture(type).c_str(), 0, &p), ZF_OK) << zf_last_error();
    return MmprojPtr(p);
  }
  ModelPtr model_;
};

TEST_F(CapiVision, InfoDescribesTheProjector) {
  MmprojPtr p = LoadMmproj("f32");
  ASSERT_NE(p, nullptr);
  zf_mmproj_summary s;
  std::memset(&s, 0xff, sizeof s);
  s.struct_size = sizeof s;
  ASSERT_EQ(zf_mmproj_info(p.get(), &s), ZF_OK);
  EXPECT_EQ(s.struct_size, sizeof s);
  EXPECT_STREQ(s.projector_type, "gemma3");
  EXPECT_EQ(s.image_size, 896);
  EXPECT_EQ(s.patch_size, 14);
  EXPECT_EQ(s.n_tokens, 256);
  EXPECT_EQ(s.n_embd, 640);
  EXPECT_EQ(s.n_embd_vision, 64);
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(s.reserved, 0u);
  // An older, smaller struct gets only its bytes.
  zf_mmproj_summary small;
  std::memset(&small, 0xab, sizeof small);
  small.struct_size = offsetof(zf_mmproj_summary, n_embd);
  ASSERT_EQ(zf_mmproj_info(p.get(), &small), ZF_OK);
  EXPECT_EQ(small.n_tokens, 256);
  EXPECT_EQ(small.n_embd, int32_t(0xabababab));
  small.struct_size = 2;
  EXPECT_EQ(zf_mmproj_info(p.get(), &small), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_mmproj_info(nullptr, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_mmproj_info(p.get(), nullptr), ZF_ERR_INVALID_ARGUMENT);
}

// Embeddings through the ABI against libmtmd's (the goldens tests/vision holds src/vision to).
TEST_F(CapiVision, EmbeddingsMatchLibmtmd) {
  const std::pair<const char*, double> variants[] = {{"f32", 0.9999}, {"f16", 0.9999}, {"q8_0", 0.999}};
  for (const auto& [type, min_cosine] : variants) {
    const nlohmann::json golden = nlohmann::json::parse(
        ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/gemma3-" + type + ".json"));
    std::string sha = ReadText(Fixture(type) + ".sha256");
    while (!sha.empty() && (sha.back() == '\n' || sha.back() == ' ')) sha.pop_back();
    ASSERT_EQ(sha, golden["mmproj_sha256"].get<std::string>()) << Fixture(type) << " is not the golden's file";
    MmprojPtr p = LoadMmproj(type);
    ASSERT_NE(p, nullptr);
    for (const auto& gi : golden["images"]) {
      const int w = gi["width"], h = gi["height"];
      const std::vector<uint8_t> rgb = zf::vision::test::Pattern(w, h, gi["seed"].get<uint32_t>());
      const std::vector<float> e = Embed(p.get(), Encoded(zf::vision::test::Png(w, h, rgb)));
      const std::string what = std::string(type) + " " + gi["name"].get<std::string>();
      const zf::vision::test::GoldenFit fit = zf::vision::test::ExpectMatchesGolden(e, gi, min_cosine, what);
      std::printf("[ capi vision ] %s: min cosine %.7f, max |diff| %.3g\n", what.c_str(), fit.min_cosine, fit.max_abs);
    }
  }
}

// RGB8 pixels and the PNG of the same pixels are the same image; concurrent calls on one
// projector (each on its own encoder) give what one call alone gives.
TEST_F(CapiVision, Rgb8EqualsPngAndThreadsAgree) {
  MmprojPtr p = LoadMmproj("f16");
  ASSERT_NE(p, nullptr);
  const int w = 300, h = 200;
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(w, h, 7);
  const std::vector<uint8_t> png = zf::vision::test::Png(w, h, rgb);
  const std::vector<float> from_png = Embed(p.get(), Encoded(png));
  const std::vector<float> from_rgb = Embed(p.get(), Rgb(rgb, w, h));
  ASSERT_EQ(from_png.size(), 256u * 640u);
  EXPECT_EQ(from_png, from_rgb);
  std::vector<float> a, b;
  std::thread ta([&] { a = Embed(p.get(), Encoded(png)); });
  std::thread tb([&] { b = Embed(p.get(), Rgb(rgb, w, h)); });
  ta.join();
  tb.join();
  EXPECT_EQ(a, from_png);
  EXPECT_EQ(b, from_png);
}

// The projector holds its model: freeing the model first leaves the projector usable.
TEST_F(CapiVision, ProjectorKeepsItsModel) {
  MmprojPtr p = LoadMmproj("f32");
  ASSERT_NE(p, nullptr);
  model_.reset();
  zf_mmproj_summary s;
  s.struct_size = sizeof s;
  ASSERT_EQ(zf_mmproj_info(p.get(), &s), ZF_OK);
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(32, 32, 3);
  EXPECT_EQ(Embed(p.get(), Rgb(rgb, 32, 32)).size(), 256u * 640u);
  zf_mmproj_free(nullptr);  // a no-op
}

// The status and a phrase of the message of a refused call.
#define EXPECT_FAILS(call, status, phrase)                                          \
  do {                                                                               \
    EXPECT_EQ((call), (status));                                                     \
    EXPECT_NE(std::string(zf_last_error()).find(phrase), std::string::npos)          \
        << "message: " << zf_last_error() << "; expected it to mention: " << phrase; \
  } while (0)

TEST_F(CapiVision, LoadErrorsAreNamed) {
  zf_mmproj* p = reinterpret_cast<zf_mmproj*>(this);
  const std::string f = Fixture("f32");
  EXPECT_FAILS(zf_mmproj_load(nullptr, f.c_str(), 0, &p), ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  EXPECT_EQ(p, nullptr);
  EXPECT_FAILS(zf_mmproj_load(model_.get(), nullptr, 0, &p), ZF_ERR_INVALID_ARGUMENT, "path is NULL");
  EXPECT_FAILS(zf_mmproj_load(model_.get(), f.c_str(), 0, nullptr), ZF_ERR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_FAILS(zf_mmproj_load(model_.get(), f.c_str(), 4, &p), ZF_ERR_INVALID_ARGUMENT, "flags");
  EXPECT_FAILS(zf_mmproj_load(model_.get(), "/nonexistent/mmproj.gguf", 0, &p), ZF_ERR_IO, "/nonexistent/mmproj.gguf");
  // A language model is not a projector.
  const std::string lm = zf::testing::ModelPath("gemma3");
  EXPECT_FAILS(zf_mmproj_load(model_.get(), lm.c_str(), 0, &p), ZF_ERR_FORMAT, "clip");
  EXPECT_EQ(p, nullptr);
  // A projector of another model: SmolLM2 is 576 wide and a llama; both are named.
  ZF_REQUIRE_MODEL(smol_path, "smollm2");
  ModelPtr smol = Load(smol_path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_NE(smol, nullptr);
  EXPECT_EQ(zf_mmproj_load(smol.get(), f.c_str(), 0, &p), ZF_ERR_INVALID_ARGUMENT);
  const std::string msg = zf_last_error();
  EXPECT_NE(msg.find("output width 640 is not the model's embedding width 576"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'gemma3' is for 'gemma3' models, the model is 'llama'"), std::string::npos) << msg;
  EXPECT_EQ(p, nullptr);
}

TEST_F(CapiVision, EmbedErrorsAreNamed) {
  MmprojPtr pp = LoadMmproj("f32");
  ASSERT_NE(pp, nullptr);
  const zf_mmproj* p = pp.get();
  const std::vector<uint8_t> rgb = zf::vision::test::Pattern(16, 8, 1);
  const std::vector<uint8_t> png = zf::vision::test::Png(16, 8, rgb);
  std::vector<float> out(256 * 640);
  size_t needed = 7;
  int32_t n_tok = 7;
  zf_image im = Encoded(png);
  EXPECT_FAILS(zf_image_embed(nullptr, &im, 1, out.data(), out.size(), &needed, &n_tok), ZF_ERR_INVALID_ARGUMENT, "mmproj is NULL");
  EXPECT_FAILS(zf_image_embed(p, nullptr, 1, out.data(), out.size(), &needed, &n_tok), ZF_ERR_INVALID_ARGUMENT, "image is NULL");
  EXPECT_FAILS(zf_image_embed(p, &im, 1, out.data(), out.size(), nullptr, &n_tok), ZF_ERR_INVALID_ARGUMENT, "needed is NULL");
  EXPECT_FAILS(zf_image_embed(p, &im, 1, nullptr, 5, &needed, &n_tok), ZF_ERR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_FAILS(zf_image_embed(p, &im, -1, out.data(), out.size(), &needed, &n_tok), ZF_ERR_INVALID_ARGUMENT, "n_threads");
  // The buffer rule: the size comes back without an encode.
  EXPECT_FAILS(zf_image_embed(p, &im, 1, out.data(), 100, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL, "163840");
  EXPECT_EQ(needed, 256u * 640u);
  EXPECT_EQ(n_tok, 256);

  auto fails = [&](zf_image bad, zf_status status, const char* phrase) {
    EXPECT_FAILS(zf_image_embed(p, &bad, 1, out.data(), out.size(), &needed, &n_tok), status, phrase);
  };
  zf_image bad = im;
  bad.struct_size = 8;
  fails(bad, ZF_ERR_INVALID_ARGUMENT, "image->struct_size 8");
  bad = im;
  bad.data = nullptr;
  fails(bad, ZF_ERR_INVALID_ARGUMENT, "image->data is NULL");
  bad = im;
  bad.size = 0;
  fails(bad, ZF_ERR_INVALID_ARGUMENT, "image->size is 0");
  bad = im;
  bad.format = 9;
  fails(bad, ZF_ERR_INVALID_ARGUMENT, "image->format 9 is unknown");
  bad = im;
  bad.width = 16;
  fails(bad, ZF_ERR_INVALID_ARGUMENT, "must be 0 for ZF_IMAGE_ENCODED");
  // Encoded bytes: unknown container, WebP, truncated, a header over the pixel budget.
  const std::vector<uint8_t> junk(64, 0x42);
  fails(Encoded(junk), ZF_ERR_INVALID_ARGUMENT, "image:");
  std::vector<uint8_t> webp = {'R', 'I', 'F', 'F', 0x24, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '};
  webp.resize(64, 0);
  fails(Encoded(webp), ZF_ERR_INVALID_ARGUMENT, "WebP");
  const std::vector<uint8_t> cut(png.begin(), png.begin() + png.size() / 2);
  fails(Encoded(cut), ZF_ERR_FORMAT, "image:");
  std::vector<uint8_t> huge = png;  // IHDR's width and height (bytes 16..23) set to 10000 x 10000
  for (int i : {16, 20}) {
    huge[size_t(i)] = 0;
    huge[size_t(i + 1)] = 0;
    huge[size_t(i + 2)] = 0x27;
    huge[size_t(i + 3)] = 0x10;
  }
  fails(Encoded(huge), ZF_ERR_INVALID_ARGUMENT, "10000");
  // RGB8: zero size, over the budget, a size that is not width * height * 3.
  fails(Rgb(rgb, 0, 8), ZF_ERR_INVALID_ARGUMENT, "needs both nonzero");
  fails(Rgb(rgb, 10000, 10000), ZF_ERR_INVALID_ARGUMENT, "exceed the budget");
  fails(Rgb(rgb, 16, 9), ZF_ERR_INVALID_ARGUMENT, "width * height * 3 = 432");
  EXPECT_EQ(needed, 0u);
  EXPECT_EQ(n_tok, 0);
}

}  // namespace

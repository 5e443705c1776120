// Gemma 3's vision encoder + projector against libmtmd's embeddings (tests/data/golden/vision,
// scripts/reference/record_mmproj_goldens.sh) on the synthesized projector files of the fixture
// vision.models: two Pattern pictures (landscape and portrait, so both are resized and padded),
// drawn here as the recorder drew them, written as PNG and decoded by vision/image first.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "test_images.h"
#include "vision/encoder.h"
#include "vision/image.h"
#include "vision/mmproj.h"

namespace zf::vision {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Variant {
  const char* name;
  double min_cosine;  // per token
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class GemmaVisionGolden : public ::testing::TestWithParam<Variant> {};

TEST_P(GemmaVisionGolden, EmbeddingsMatchLibmtmd) {
  const Variant& var = GetParam();
  const std::string file = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma3-" + var.name + ".gguf";
  const nlohmann::json golden =
      nlohmann::json::parse(ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/gemma3-" + var.name + ".json"));
  std::string sha = ReadText(file + ".sha256");
  while (!sha.empty() && (sha.back() == '\n' || sha.back() == ' ')) sha.pop_back();
  ASSERT_EQ(sha, golden["mmproj_sha256"].get<std::string>())
      << file << " is not the file the golden was recorded on (generator or its packages changed?)";

  std::unique_ptr<Mmproj> m;
  Status s = Mmproj::Load(file, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(m->CheckLanguageModel(640).ok());  // Gemma 3 270M's width
  VisionEncoder enc(*m, 2);
  for (const auto& gi : golden["images"]) {
    const int w = gi["width"], h = gi["height"];
    const std::vector<uint8_t> rgb = test::Pattern(w, h, gi["seed"].get<uint32_t>());
    const std::vector<uint8_t> png = test::Png(w, h, rgb);
    Image img;
    ASSERT_TRUE(DecodeImage(png.data(), png.size(), &img).ok());
    ASSERT_EQ(img.rgb, rgb);
    std::vector<float> embd;
    s = enc.Encode(img, &embd);
    ASSERT_TRUE(s.ok()) << s.message();
    const int n_tok = gi["n_tokens"], n_embd = gi["n_embd"];
    ASSERT_EQ(n_tok, m->hparams().n_tokens());
    ASSERT_EQ(n_embd, m->hparams().proj_width);
    const test::GoldenFit fit = test::ExpectMatchesGolden(embd, gi, var.min_cosine, gi["name"].get<std::string>());
    std::printf("[ vision ] %s %s: min cosine %.7f, max |diff| %.3g, worst norm rel. error %.2g\n", var.name,
                gi["name"].get<std::string>().c_str(), fit.min_cosine, fit.max_abs, fit.worst_norm);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemmaVisionGolden,
                         ::testing::Values(Variant{"f32", 0.9999}, Variant{"f16", 0.9999}, Variant{"q8_0", 0.999}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace zf::vision

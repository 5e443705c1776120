// vision/preprocess: Gemma 3's fit-and-pad against libmtmd's preprocessed input (pixel for
// pixel: an FNV-1a hash of the 896 x 896 RGB bytes and each row's sum, recorded by
// scripts/reference/mmproj_recorder.cpp), and the resampler's basic properties.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_images.h"
#include "vision/preprocess.h"

namespace zf::vision {
namespace {

Image Make(int w, int h, std::vector<uint8_t> rgb) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb = std::move(rgb);
  return img;
}

TEST(VisionPreprocess, MatchesLibmtmdPixelForPixel) {
  std::ifstream in(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/gemma3-f32.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json golden = nlohmann::json::parse(ss.str());
  for (const auto& gi : golden["images"]) {
    const int w = gi["width"], h = gi["height"];
    const Image fit = FitAndPad(Make(w, h, test::Pattern(w, h, gi["seed"].get<uint32_t>())), 896);
    const auto& pre = gi["preprocessed"];
    ASSERT_EQ(fit.width, pre["width"].get<int>());
    ASSERT_EQ(fit.height, pre["height"].get<int>());
    for (int y = 0; y < fit.height; ++y) {
      uint64_t sum = 0;
      for (int i = 0; i < fit.width * 3; ++i) sum += fit.rgb[size_t(y) * size_t(fit.width) * 3 + size_t(i)];
      ASSERT_EQ(sum, pre["row_sums"][size_t(y)].get<uint64_t>()) << gi["name"] << ": row " << y;
    }
    uint64_t fnv = 1469598103934665603ull;
    for (uint8_t b : fit.rgb) fnv = (fnv ^ b) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv));
    EXPECT_EQ(std::string(hex), pre["fnv1a64"].get<std::string>()) << gi["name"];
  }
}

TEST(VisionPreprocess, FitAndPadGeometry) {
  // 640 x 400 -> 896 x 560, centred: 168 black rows above and below.
  const Image fit = FitAndPad(Make(640, 400, std::vector<uint8_t>(640 * 400 * 3, 200)), 896);
  ASSERT_EQ(fit.width, 896);
  ASSERT_EQ(fit.height, 896);
  auto at = [&](int x, int y) { return fit.rgb[(size_t(y) * 896 + size_t(x)) * 3]; };
  EXPECT_EQ(at(10, 167), 0);
  EXPECT_EQ(at(10, 168), 200);
  EXPECT_EQ(at(895, 727), 200);
  EXPECT_EQ(at(10, 728), 0);
  // A square image of the right size is taken as it is.
  const std::vector<uint8_t> px = test::Pattern(896, 896, 3);
  EXPECT_EQ(FitAndPad(Make(896, 896, px), 896).rgb, px);
}

TEST(VisionPreprocess, ResizeKeepsFlatColourAndAverages) {
  const Image flat = ResizeBilinear(Make(7, 5, std::vector<uint8_t>(7 * 5 * 3, 77)), 19, 3);
  ASSERT_EQ(flat.rgb.size(), size_t(19 * 3 * 3));
  for (uint8_t b : flat.rgb) EXPECT_EQ(b, 77);
  // Halving a 0/100 column stripe: each output pixel covers one pixel of each (weights 1/2).
  std::vector<uint8_t> stripes(8 * 1 * 3);
  for (int x = 0; x < 8; ++x)
    for (int c = 0; c < 3; ++c) stripes[size_t(x) * 3 + size_t(c)] = x % 2 ? 100 : 0;
  const Image half = ResizeBilinear(Make(8, 1, stripes), 4, 1);
  for (uint8_t b : half.rgb) EXPECT_NEAR(int(b), 50, 13);  // triangle weights 1/4 1/2 1/4 at edges differ
}

TEST(VisionPreprocess, Normalizes) {
  const std::vector<float> px = PreprocessFixedSize(Make(2, 2, {0, 255, 51, 0, 255, 51, 0, 255, 51, 0, 255, 51}), 2,
                                                    {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.25f});
  ASSERT_EQ(px.size(), 12u);
  EXPECT_FLOAT_EQ(px[0], -1.0f);
  EXPECT_FLOAT_EQ(px[1], 1.0f);
  EXPECT_FLOAT_EQ(px[2], (51.0f / 255.0f - 0.5f) / 0.25f);
}

}  // namespace
}  // namespace zf::vision

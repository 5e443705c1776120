// The golden checks of the types that take each image at its own size: per golden image the one
// resized encoder input pixel for pixel, its row count and its rows against libmtmd's
// (ExpectOwnSizeGolden: mmproj_recorder --tiles goldens, pixtral and lfm2; ExpectImagesGolden:
// its default mode, gemma4v and the Qwen-VL types); one line of numbers per image. And
// LoadEditedF16: a broken-file case.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "golden_images.h"
#include "test_images.h"
#include "vision/encoder.h"
#include "vision/preprocess.h"

namespace zf::vision::test {

inline void ExpectOwnSizeGolden(const std::string& kind, const char* type, size_t at, size_t n_chunks, double min_cosine,
                                double max_norm_error) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = LoadWithGolden(kind, type, &golden);
  ASSERT_NE(m, nullptr);
  const VisionHparams& hp = m->hparams();
  VisionEncoder enc(*m, 2);
  for (const auto& gi : golden["images"]) {
    const std::string name = gi["name"];
    const Image img = GoldenImage(gi);
    ASSERT_EQ(gi["chunks"].size(), n_chunks) << name;
    nlohmann::json chunk = gi["chunks"][at];
    TileGrid grid;
    const std::vector<Image> in = TileImages(hp, img, &grid);
    ASSERT_EQ(in.size(), 1u);
    ExpectPreprocessed(in[0], chunk["preprocessed"], name);
    EXPECT_EQ(grid.rows, chunk["n_tokens"].get<int64_t>()) << name;
    std::vector<float> embd;
    const Status s = enc.Encode(img, &embd);
    ASSERT_TRUE(s.ok()) << s.message();
    chunk["n_embd"] = gi["n_embd"];
    const GoldenFit fit = ExpectMatchesGolden(embd, chunk, min_cosine, name, max_norm_error);
    std::printf("[ vision ] %s %s %s (%d x %d, %lld rows): min cosine %.7f, max |diff| %.3g, worst norm rel. error %.2g\n",
                kind.c_str(), type, name.c_str(), in[0].width, in[0].height, static_cast<long long>(grid.rows),
                fit.min_cosine, fit.max_abs, fit.worst_norm);
  }
}

// mmproj_recorder's default mode (KIND-TYPE.json): the Pattern pictures, each one input.
inline void ExpectImagesGolden(const std::string& kind, const char* type, double min_cosine, double max_norm_error) {
  nlohmann::json golden;
  std::unique_ptr<Mmproj> m = LoadWithGolden(kind, type, &golden);
  ASSERT_NE(m, nullptr);
  VisionEncoder enc(*m, 2);
  for (const auto& gi : golden["images"]) {
    const int w = gi["width"], h = gi["height"];
    const std::vector<uint8_t> png = Png(w, h, Pattern(w, h, gi["seed"].get<uint32_t>()));
    Image img;
    ASSERT_TRUE(DecodeImage(png.data(), png.size(), &img).ok());
    const std::string name = gi["name"];
    TileGrid grid;
    const std::vector<Image> inputs = TileImages(m->hparams(), img, &grid);
    ASSERT_EQ(inputs.size(), 1u);
    ExpectPreprocessed(inputs[0], gi["preprocessed"], name);
    ASSERT_EQ(grid.rows, gi["n_tokens"].get<int64_t>()) << name;
    std::vector<float> embd;
    const Status s = enc.Encode(img, &embd);
    ASSERT_TRUE(s.ok()) << s.message();
    const GoldenFit fit = ExpectMatchesGolden(embd, gi, min_cosine, name, max_norm_error);
    std::printf("[ %s ] %s %s (%lld tokens): min cosine %.7f, max |diff| %.3g, worst norm rel. error %.2g\n", kind.c_str(),
                type, name.c_str(), static_cast<long long>(grid.rows), fit.min_cosine, fit.max_abs, fit.worst_norm);
  }
}

// The fixture's mmproj-KIND-f16.gguf with one equal-length byte edit: the load's error.
inline std::string LoadEditedF16(const std::string& kind, const std::string& from, const std::string& to) {
  std::string bytes = ReadText(std::string(ZF_VISION_MODELS_DIR) + "/mmproj-" + kind + "-f16.gguf");
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return "";
  bytes.replace(at, from.size(), to);
  const std::string path = ::testing::TempDir() + "/" + kind + "-edited.gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  std::unique_ptr<Mmproj> m;
  const Status s = Mmproj::Load(path, &m);
  EXPECT_FALSE(s.ok());
  return s.message();
}

}  // namespace zf::vision::test

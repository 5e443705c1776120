// The golden check of the types that take each image at its own size (pixtral, lfm2): per
// golden image (mmproj_recorder --tiles) the one resized encoder input pixel for pixel, its row
// count and its rows against libmtmd's image chunk (chunk `at` of n_chunks: the marker text
// chunks around it); one line of numbers per image.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "golden_images.h"
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

}  // namespace zf::vision::test

// The golden check of the types that cut an image into several encoder inputs (idefics3's tiles
// and overview, lfm2's tiles and thumbnail; one input works too): per golden image
// (mmproj_recorder --tiles) every input pixel for pixel against libmtmd's image chunks in order,
// each chunk's row count, and its rows out of VisionEncoder::Encode's (every tile's, then the
// overview's). Returns the worst fit over the images; one line of numbers per image.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "golden_images.h"
#include "vision/encoder.h"
#include "vision/preprocess.h"

namespace zf::vision::test {

inline GoldenFit ExpectChunkedGolden(const Mmproj& m, const nlohmann::json& golden, const std::string& label, double min_cosine,
                                     double max_norm_error) {
  const VisionHparams& hp = m.hparams();
  VisionEncoder enc(m, 2);
  GoldenFit worst;
  for (const auto& gi : golden["images"]) {
    const std::string name = gi["name"];
    const Image img = GoldenImage(gi);
    std::vector<nlohmann::json> chunks;
    for (const auto& c : gi["chunks"])
      if (c.contains("n_tokens")) chunks.push_back(c);
    TileGrid grid;
    const std::vector<Image> inputs = TileImages(hp, img, &grid);
    EXPECT_EQ(inputs.size(), chunks.size()) << name;
    EXPECT_EQ(size_t(grid.n_images()), chunks.size()) << name;
    if (inputs.size() != chunks.size()) continue;
    int64_t rows = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      ExpectPreprocessed(inputs[i], chunks[i]["preprocessed"], name + " input " + std::to_string(i));
      rows += chunks[i]["n_tokens"].get<int64_t>();
    }
    EXPECT_EQ(grid.total_rows(hp.n_tokens()), rows) << name;
    std::vector<float> embd;
    TileGrid g2;
    const Status s = enc.Encode(img, &embd, &g2);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(g2.x, grid.x);
    EXPECT_EQ(g2.y, grid.y);
    const size_t width = size_t(hp.proj_width);
    EXPECT_EQ(embd.size(), size_t(rows) * width) << name;
    if (!s.ok() || embd.size() != size_t(rows) * width) continue;
    GoldenFit fit;
    size_t at = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      nlohmann::json gc = chunks[i];
      gc["n_embd"] = gi["n_embd"];
      const size_t n = gc["n_tokens"].get<size_t>() * width;
      const std::vector<float> one(embd.begin() + std::ptrdiff_t(at), embd.begin() + std::ptrdiff_t(at + n));
      at += n;
      const GoldenFit f = ExpectMatchesGolden(one, gc, min_cosine, name + " chunk " + std::to_string(i), max_norm_error);
      fit.min_cosine = std::min(fit.min_cosine, f.min_cosine);
      fit.max_abs = std::max(fit.max_abs, f.max_abs);
      fit.worst_norm = std::max(fit.worst_norm, f.worst_norm);
    }
    std::printf("[ vision ] %s %s (%d x %d tiles, %lld rows): min cosine %.7f, max |diff| %.3g, worst norm rel. error %.2g\n",
                label.c_str(), name.c_str(), grid.x, grid.y, static_cast<long long>(rows), fit.min_cosine, fit.max_abs,
                fit.worst_norm);
    worst.min_cosine = std::min(worst.min_cosine, fit.min_cosine);
    worst.max_abs = std::max(worst.max_abs, fit.max_abs);
    worst.worst_norm = std::max(worst.worst_norm, fit.worst_norm);
  }
  return worst;
}

}  // namespace zf::vision::test

// The chunked goldens' images and files (mmproj_recorder --tiles: idefics3, pixtral): reading a
// file, the FNV-1a hash the recorder prints, and the golden image's pixels decoded here.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_images.h"
#include "vision/image.h"
#include "vision/mmproj.h"

namespace zf::vision::test {

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline uint64_t Fnv(const std::vector<uint8_t>& b) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t x : b) h = (h ^ x) * 1099511628211ull;
  return h;
}

inline std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The golden image's pixels: a Pattern picture through PNG, or tests/data/vision/test-1.jpeg
// decoded here (its RGB bytes checked against the hash of libmtmd's decoding).
inline Image GoldenImage(const nlohmann::json& gi) {
  Image img;
  if (gi["name"] == "file") {
    const std::string bytes = ReadText(std::string(ZF_TEST_DATA_DIR) + "/vision/test-1.jpeg");
    EXPECT_TRUE(DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &img).ok());
  } else {
    const int w = gi["width"], h = gi["height"];
    const std::vector<uint8_t> png = Png(w, h, Pattern(w, h, gi["seed"].get<uint32_t>()));
    EXPECT_TRUE(DecodeImage(png.data(), png.size(), &img).ok());
  }
  EXPECT_EQ(Hex(Fnv(img.rgb)), gi["rgb_fnv1a64"].get<std::string>()) << "decoded pixels differ from libmtmd's";
  return img;
}

// An encoder input against the golden chunk's "preprocessed" (size, each row's sum, the hash).
inline void ExpectPreprocessed(const Image& in, const nlohmann::json& pre, const std::string& what) {
  ASSERT_EQ(in.width, pre["width"].get<int>()) << what;
  ASSERT_EQ(in.height, pre["height"].get<int>()) << what;
  for (int y = 0; y < in.height; ++y) {
    uint64_t sum = 0;
    for (int k = 0; k < in.width * 3; ++k) sum += in.rgb[size_t(y) * size_t(in.width) * 3 + size_t(k)];
    ASSERT_EQ(sum, pre["row_sums"][size_t(y)].get<uint64_t>()) << what << " row " << y;
  }
  EXPECT_EQ(Hex(Fnv(in.rgb)), pre["fnv1a64"].get<std::string>()) << what;
}

// The fixture's mmproj-KIND-TYPE.gguf and its golden KIND-TYPE[SUFFIX].json (the file's sha256
// checked against the one the golden was recorded on).
inline std::unique_ptr<Mmproj> LoadWithGolden(const std::string& kind, const std::string& type, nlohmann::json* golden,
                                              const std::string& suffix = "") {
  const std::string file = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-" + kind + "-" + type + ".gguf";
  *golden = nlohmann::json::parse(
      ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/" + kind + "-" + type + suffix + ".json"));
  EXPECT_EQ(Trimmed(ReadText(file + ".sha256")), (*golden)["mmproj_sha256"].get<std::string>())
      << file << " is not the file the golden was recorded on (generator or its packages changed?)";
  std::unique_ptr<Mmproj> m;
  const Status s = Mmproj::Load(file, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

}  // namespace zf::vision::test

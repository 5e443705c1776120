// vision/image: decoding of PNG, JPEG, BMP and GIF bytes written at test time (stb_image_write,
// a hand-made GIF), and the errors for bad bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_images.h"
#include "vision/image.h"

namespace zf::vision {
namespace {

TEST(ImageDecode, PngIsLossless) {
  const std::vector<uint8_t> px = test::Gradient(37, 21);
  Image img;
  ASSERT_TRUE(DecodeImage(test::Png(37, 21, px).data(), test::Png(37, 21, px).size(), &img).ok());
  EXPECT_EQ(img.width, 37);
  EXPECT_EQ(img.height, 21);
  EXPECT_EQ(img.rgb, px);
}

TEST(ImageDecode, BmpIsLossless) {
  const std::vector<uint8_t> px = test::Gradient(16, 9);
  const std::vector<uint8_t> bytes = test::Bmp(16, 9, px);
  Image img;
  ASSERT_TRUE(DecodeImage(bytes.data(), bytes.size(), &img).ok());
  EXPECT_EQ(img.rgb, px);
}

TEST(ImageDecode, JpegIsClose) {
  const std::vector<uint8_t> px = test::Gradient(64, 48);
  const std::vector<uint8_t> bytes = test::Jpeg(64, 48, px, 95);
  Image img;
  ASSERT_TRUE(DecodeImage(bytes.data(), bytes.size(), &img).ok());
  ASSERT_EQ(img.width, 64);
  ASSERT_EQ(img.height, 48);
  double err = 0;
  for (size_t i = 0; i < px.size(); ++i) err += std::abs(int(px[i]) - int(img.rgb[i]));
  EXPECT_LT(err / double(px.size()), 6.0);
}

TEST(ImageDecode, GifFirstFrame) {
  const std::vector<uint8_t> bytes = test::TwoFrameGif();
  Image img;
  ASSERT_TRUE(DecodeImage(bytes.data(), bytes.size(), &img).ok());
  ASSERT_EQ(img.width, 2);
  ASSERT_EQ(img.height, 2);
  // The first frame is all red (palette entry 0); the second, blue, is ignored.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(img.rgb[size_t(i) * 3 + 0], 255);
    EXPECT_EQ(img.rgb[size_t(i) * 3 + 1], 0);
    EXPECT_EQ(img.rgb[size_t(i) * 3 + 2], 0);
  }
}

TEST(ImageDecode, Errors) {
  Image img;
  Status s = DecodeImage(nullptr, 0, &img);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("no bytes"), std::string::npos);

  const uint8_t junk[] = "hello, not an image";
  s = DecodeImage(junk, sizeof(junk), &img);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown format"), std::string::npos);

  const uint8_t webp[] = "RIFF\x10\0\0\0WEBPVP8 ";
  s = DecodeImage(webp, sizeof(webp), &img);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("WebP"), std::string::npos);

  // Truncated PNG and JPEG: the header survives, the pixels do not.
  const std::vector<uint8_t> px = test::Gradient(40, 40);
  for (std::vector<uint8_t> bytes : {test::Png(40, 40, px), test::Jpeg(40, 40, px, 90)}) {
    bytes.resize(bytes.size() / 2);
    s = DecodeImage(bytes.data(), bytes.size(), &img);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("image ("), std::string::npos) << s.message();
    EXPECT_TRUE(img.rgb.empty());
  }

  // Over the pixel budget: refused from the header, before decoding.
  const std::vector<uint8_t> png = test::Png(40, 40, px);
  s = DecodeImage(png.data(), png.size(), &img, 1000);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("pixel budget"), std::string::npos) << s.message();

  // A PNG header claiming 0 x 0.
  std::vector<uint8_t> zero = png;
  std::memset(zero.data() + 16, 0, 8);
  s = DecodeImage(zero.data(), zero.size(), &img);
  EXPECT_FALSE(s.ok());
}

// Findings of fuzz_image_decode, kept in its corpus: a JPEG Huffman table of more than 256
// codes (Debian's stb 2.27 writes past its arrays; refused before stb sees it) and a PNG whose
// first IDAT is empty (stb copies zero bytes from a null buffer).
TEST(ImageDecode, FuzzFindings) {
  const std::string dir = std::string(ZF_TEST_DATA_DIR) + "/../fuzz/corpus/image_decode/";
  for (const char* name : {"dht-overflow-input", "dht-overflow2-input"}) {
    std::ifstream in(dir + name, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty()) << name;
    Image img;
    const Status s = DecodeImage(bytes.data(), bytes.size(), &img);
    EXPECT_EQ(s.code(), Code::kFormat) << name;
    EXPECT_NE(s.message().find("Huffman table (DHT)"), std::string::npos) << s.message();
  }
  std::ifstream in(dir + "png-empty-idat-input", std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty());
  Image img;
  const Status s = DecodeImage(bytes.data(), bytes.size(), &img);
  EXPECT_TRUE(s.ok() || !s.message().empty());
}

}  // namespace
}  // namespace zf::vision

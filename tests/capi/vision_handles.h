// What the image C API tests share: the projector's owner, the fixture's projector files,
// zf_image values for encoded bytes and RGB8 pixels, data-URL base64, and the placement tests'
// logits comparison and session entries.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace zf::capitest {

struct MmprojDeleter {
  void operator()(zf_mmproj* p) const { zf_mmproj_free(p); }
};
using MmprojPtr = std::unique_ptr<zf_mmproj, MmprojDeleter>;

// The fixture vision.models' synthesized Gemma 3 projector of a type ("f32", "f16", "q8_0").
inline std::string MmprojFixture(const std::string& type) {
  return std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma3-" + type + ".gguf";
}

inline zf_image Encoded(const std::vector<uint8_t>& bytes) {
  zf_image im;
  std::memset(&im, 0, sizeof im);
  im.struct_size = sizeof im;
  im.format = ZF_IMAGE_ENCODED;
  im.data = bytes.data();
  im.size = bytes.size();
  return im;
}

inline zf_image Rgb(const std::vector<uint8_t>& rgb, uint32_t w, uint32_t h) {
  zf_image im = Encoded(rgb);
  im.format = ZF_IMAGE_RGB8;
  im.width = w;
  im.height = h;
  return im;
}

// Standard base64 (with padding), for data URLs.
inline std::string Base64(const std::vector<uint8_t>& b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0) |
                       (i + 2 < b.size() ? uint32_t(b[i + 2]) : 0);
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < b.size() ? k[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? k[v & 63] : '=';
  }
  return out;
}

// The cosine of two logit vectors after centring each (softmax ignores a shift).
inline double CentredCosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i] / double(a.size()), mb += b[i] / double(b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

inline int32_t Argmax(const std::vector<float>& l) { return int32_t(std::max_element(l.begin(), l.end()) - l.begin()); }

// zf_session_tokens(): tokens and image rows' (negative) entries.
inline std::vector<int32_t> SessionTokens(const zf_session* s) {
  size_t n = 0;
  const zf_status st = zf_session_tokens(s, nullptr, 0, &n);
  EXPECT_TRUE(st == ZF_OK || st == ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  std::vector<int32_t> t(n);
  EXPECT_EQ(zf_session_tokens(s, t.data(), t.size(), &n), ZF_OK) << zf_last_error();
  return t;
}

}  // namespace zf::capitest

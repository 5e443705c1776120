// What the image C API tests share: the projector's owner, the fixture's projector files and
// zf_image values for encoded bytes and RGB8 pixels.
#pragma once

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

}  // namespace zf::capitest

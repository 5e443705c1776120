// Test images made at test time: RGB patterns encoded with stb_image_write (PNG, JPEG, BMP) and
// a hand-written two-frame GIF.
#pragma once

#include <cstdint>
#include <vector>

namespace zf::vision::test {

// A smooth colour pattern (w x h RGB) that a JPEG keeps close.
std::vector<uint8_t> Gradient(int w, int h);
// A busy deterministic picture (rings, stripes and hashed noise) for the encoder goldens: the
// recorder (scripts/reference/mmproj_recorder.cpp) and the tests draw the same pixels.
std::vector<uint8_t> Pattern(int w, int h, uint32_t seed);
std::vector<uint8_t> Png(int w, int h, const std::vector<uint8_t>& rgb);
std::vector<uint8_t> Jpeg(int w, int h, const std::vector<uint8_t>& rgb, int quality);
std::vector<uint8_t> Bmp(int w, int h, const std::vector<uint8_t>& rgb);
// 2 x 2, frame 1 red, frame 2 blue.
std::vector<uint8_t> TwoFrameGif();

}  // namespace zf::vision::test

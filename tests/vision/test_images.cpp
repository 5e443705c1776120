#include "test_images.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace zf::vision::test {
namespace {

void Append(void* ctx, void* data, int size) {
  auto* v = static_cast<std::vector<uint8_t>*>(ctx);
  v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

}  // namespace

std::vector<uint8_t> Gradient(int w, int h) {
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = px.data() + (size_t(y) * size_t(w) + size_t(x)) * 3;
      p[0] = uint8_t(255 * x / (w > 1 ? w - 1 : 1));
      p[1] = uint8_t(255 * y / (h > 1 ? h - 1 : 1));
      p[2] = uint8_t((x * 7 + y * 3) % 256);
    }
  return px;
}

std::vector<uint8_t> Pattern(int w, int h, uint32_t seed) {
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint32_t r = uint32_t(x) * 73856093u ^ uint32_t(y) * 19349663u ^ seed * 83492791u;
      r ^= r >> 13;
      r *= 0x5bd1e995u;
      r ^= r >> 15;
      const int dx = x - w / 3, dy = y - h / 2;
      const int ring = ((dx * dx + dy * dy) / (97 + int(seed % 50))) & 1;
      uint8_t* p = px.data() + (size_t(y) * size_t(w) + size_t(x)) * 3;
      p[0] = uint8_t(ring ? 200 + (r & 31) : 40 + (r & 15));
      p[1] = uint8_t((x * 255 / (w > 1 ? w - 1 : 1) + ((y / 9) & 1) * 60) & 255);
      p[2] = uint8_t(((x + y) / 23 & 1) ? (r >> 8) & 255 : 128);
    }
  return px;
}

std::vector<uint8_t> Png(int w, int h, const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> out;
  stbi_write_png_to_func(Append, &out, w, h, 3, rgb.data(), w * 3);
  return out;
}

std::vector<uint8_t> Jpeg(int w, int h, const std::vector<uint8_t>& rgb, int quality) {
  std::vector<uint8_t> out;
  stbi_write_jpg_to_func(Append, &out, w, h, 3, rgb.data(), quality);
  return out;
}

std::vector<uint8_t> Bmp(int w, int h, const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> out;
  stbi_write_bmp_to_func(Append, &out, w, h, 3, rgb.data());
  return out;
}

std::vector<uint8_t> TwoFrameGif() {
  // GIF89a, 2x2, global colour table of 2 entries (red, blue); each frame an image descriptor
  // with LZW minimum code size 2 and the codes: clear(4), 0/1 x4, end(5).
  std::vector<uint8_t> g = {'G', 'I', 'F', '8', '9', 'a', 2, 0, 2, 0, 0x80, 0, 0,
                            255, 0, 0, 0, 0, 255};
  auto frame = [&](uint8_t index) {
    const uint8_t desc[] = {0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0};
    g.insert(g.end(), desc, desc + sizeof(desc));
    g.push_back(2);  // LZW minimum code size
    // 3-bit codes, LSB first: 4, i, i, i, i, 5.
    uint32_t bits = 0;
    int n = 0;
    for (uint32_t code : {4u, uint32_t(index), uint32_t(index), uint32_t(index), uint32_t(index), 5u}) {
      bits |= code << n;
      n += 3;
    }
    std::vector<uint8_t> data;
    for (; n > 0; n -= 8, bits >>= 8) data.push_back(uint8_t(bits & 0xFF));
    g.push_back(uint8_t(data.size()));
    g.insert(g.end(), data.begin(), data.end());
    g.push_back(0);  // block terminator
  };
  frame(0);
  frame(1);
  g.push_back(0x3B);
  return g;
}

}  // namespace zf::vision::test

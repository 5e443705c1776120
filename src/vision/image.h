// Image bytes -> 8-bit RGB pixels (JPEG, PNG, GIF's first frame, BMP; stb_image compiled into
// the library, its symbols private). WebP is refused by name: stb_image has no WebP decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace zf::vision {

struct Image {
  int32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height rows of width pixels, R G B interleaved
};

// The largest image DecodeImage accepts by default (pixels): 8192 x 8192.
constexpr int64_t kDefaultMaxPixels = int64_t(8192) * 8192;

// The container's name from its first bytes ("JPEG", "PNG", "GIF", "BMP", "WebP"), or nullptr.
const char* SniffImageFormat(const uint8_t* data, size_t size);

// Decodes `data` into `out`. kInvalidArgument for empty input, an unknown or unsupported
// format (WebP), a zero-size image or one over max_pixels; kFormat for corrupt or truncated
// bytes (the decoder's reason in the message).
Status DecodeImage(const uint8_t* data, size_t size, Image* out, int64_t max_pixels = kDefaultMaxPixels);

}  // namespace zf::vision

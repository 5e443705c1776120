#include "vision/image.h"

#include <climits>
#include <cstring>
#include <string>

#include "vision/stb_image_impl.h"

namespace zf::vision {

const char* SniffImageFormat(const uint8_t* d, size_t n) {
  auto starts = [&](const char* magic, size_t len) { return n >= len && std::memcmp(d, magic, len) == 0; };
  if (starts("\xFF\xD8\xFF", 3)) return "JPEG";
  if (starts("\x89PNG\r\n\x1A\n", 8)) return "PNG";
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return "GIF";
  if (starts("BM", 2)) return "BMP";
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
  return nullptr;
}

Status DecodeImage(const uint8_t* data, size_t size, Image* out, int64_t max_pixels) {
  *out = Image();
  if (data == nullptr || size == 0) return InvalidArgument("image: no bytes");
  const char* format = SniffImageFormat(data, size);
  if (format == nullptr) return InvalidArgument("image: unknown format (JPEG, PNG, GIF or BMP expected)");
  if (std::strcmp(format, "WebP") == 0)
    return InvalidArgument("image: WebP is not supported (JPEG, PNG, GIF or BMP expected)");
  if (size > size_t(INT_MAX)) return InvalidArgument("image: " + std::to_string(size) + " bytes is too large");
  // Size first, so a huge image is refused before any pixel memory is allocated.
  int w = 0, h = 0;
  if (!StbInfo(data, int(size), &w, &h))
    return FormatError(std::string("image (") + format + "): " + StbFailureReason());
  if (w <= 0 || h <= 0) return InvalidArgument(std::string("image (") + format + "): zero size");
  if (int64_t(w) * int64_t(h) > max_pixels)
    return InvalidArgument(std::string("image (") + format + "): " + std::to_string(w) + "x" + std::to_string(h) +
                           " is over the pixel budget of " + std::to_string(max_pixels));
  int dw = 0, dh = 0;
  uint8_t* px = StbLoadRgb(data, int(size), &dw, &dh);
  if (px == nullptr) return FormatError(std::string("image (") + format + "): " + StbFailureReason());
  out->width = dw;
  out->height = dh;
  out->rgb.assign(px, px + size_t(dw) * size_t(dh) * 3);
  StbFree(px);
  return Status::Ok();
}

}  // namespace zf::vision

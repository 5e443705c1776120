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

namespace {

// Debian's stb_image (2.27) trusts a JPEG DHT segment's 16 code counts: a table whose counts add
// up to more than 256 symbols writes past its arrays (found by fuzz_image_decode; stb 2.28
// checks it). Walks the markers, the scans' entropy-coded bytes included (progressive files
// put tables between scans), and refuses such a table before stb sees it.
Status CheckJpegTables(const uint8_t* d, size_t n) {
  size_t i = 2;  // after SOI
  while (i + 1 < n) {
    if (d[i] != 0xFF) {  // entropy-coded data: on to the next marker
      ++i;
      continue;
    }
    const uint8_t m = d[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    i += 2;
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) continue;  // stuffed byte, TEM, RSTn, SOI
    if (m == 0xD9) break;                                               // EOI
    if (i + 2 > n) break;
    const size_t len = size_t(d[i]) << 8 | d[i + 1];
    if (len < 2) break;
    if (m == 0xC4) {
      // As stb reads them: tables while the segment has bytes left, the last one possibly
      // running past its end, the segment past the end of the input (bytes there read as 0).
      for (size_t p = i + 2; p < i + len && p < n;) {
        size_t count = 0;
        for (size_t k = 1; k <= 16 && p + k < n; ++k) count += d[p + k];
        if (count > 256) return FormatError("image (JPEG): a Huffman table (DHT) with " + std::to_string(count) + " codes (256 at most)");
        p += 17 + count;
      }
    }
    if (i + len > n) break;  // truncated: stb reports it
    i += len;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeImage(const uint8_t* data, size_t size, Image* out, int64_t max_pixels) {
  *out = Image();
  if (data == nullptr || size == 0) return InvalidArgument("image: no bytes");
  const char* format = SniffImageFormat(data, size);
  if (format == nullptr) return InvalidArgument("image: unknown format (JPEG, PNG, GIF or BMP expected)");
  if (std::strcmp(format, "WebP") == 0)
    return InvalidArgument("image: WebP is not supported (JPEG, PNG, GIF or BMP expected)");
  if (size > size_t(INT_MAX)) return InvalidArgument("image: " + std::to_string(size) + " bytes is too large");
  if (std::strcmp(format, "JPEG") == 0) ZF_RETURN_IF_ERROR(CheckJpegTables(data, size));
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

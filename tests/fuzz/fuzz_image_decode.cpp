// vision/image: stb_image's JPEG / PNG / GIF / BMP decoders on arbitrary bytes. Findings are
// crashes, sanitizer reports, or a result that breaks DecodeImage's promises (a message on
// failure, no pixels then; on success width x height x 3 bytes within the pixel budget).
#include <cstdint>

#include "fuzz_common.h"
#include "vision/image.h"

using zf::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kBudget = int64_t(1) << 20;  // a 1 Mpx image decodes in milliseconds
  zf::vision::Image img;
  const zf::Status s = zf::vision::DecodeImage(data, size, &img, kBudget);
  if (!s.ok()) {
    Check(!s.message().empty(), "error has a message");
    Check(img.rgb.empty() && img.width == 0, "no pixels after an error");
    return 0;
  }
  Check(img.width > 0 && img.height > 0, "decoded size positive");
  Check(int64_t(img.width) * img.height <= kBudget, "within the pixel budget");
  Check(img.rgb.size() == size_t(img.width) * size_t(img.height) * 3, "RGB bytes match the size");
  return 0;
}

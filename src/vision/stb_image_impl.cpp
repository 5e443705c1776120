// stb_image (Debian libstb-dev, scripts/install_deps.sh) compiled in: static functions only, so
// libzerfoo.so exports nothing of it and needs no libstb at run time.
#include "vision/stb_image_impl.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 16)
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wmissing-field-initializers"
#pragma clang diagnostic ignored "-Wsign-compare"
#pragma clang diagnostic ignored "-Wunused-function"
#pragma clang diagnostic ignored "-Wimplicit-fallthrough"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <cstring>
// stb 2.27 copies zero bytes from a null buffer (a PNG whose first IDAT is empty): harmless, but
// undefined for memcpy and an UBSan stop under the fuzzer; its copies go through this instead.
static inline void* ZfStbMemcpy(void* dst, const void* src, size_t n) { return n ? std::memcpy(dst, src, n) : dst; }
#define memcpy(dst, src, n) ZfStbMemcpy(dst, src, n)
#include <stb_image.h>
#undef memcpy
// (the warnings stay off to the end of the file: GCC reports stb code inlined into the wrappers)

namespace zf::vision {

bool StbInfo(const uint8_t* data, int size, int* w, int* h) {
  int comp = 0;
  return stbi_info_from_memory(data, size, w, h, &comp) != 0;
}

uint8_t* StbLoadRgb(const uint8_t* data, int size, int* w, int* h) {
  int comp = 0;
  return stbi_load_from_memory(data, size, w, h, &comp, 3);
}

void StbFree(uint8_t* pixels) { stbi_image_free(pixels); }

const char* StbFailureReason() {
  const char* r = stbi_failure_reason();
  return r != nullptr ? r : "cannot decode";
}

}  // namespace zf::vision

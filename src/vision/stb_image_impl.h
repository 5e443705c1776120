// The few stb_image calls vision/ uses, behind plain functions so that stb_image.h's
// implementation lives in one translation unit (stb_image_impl.cpp) with its warnings.
#pragma once

#include <cstdint>

namespace zf::vision {

// Width and height of the image in data (no pixels decoded); false on bytes it cannot read.
bool StbInfo(const uint8_t* data, int size, int* w, int* h);
// 8-bit RGB pixels (malloc'd; StbFree), the first frame of a GIF; nullptr on failure.
uint8_t* StbLoadRgb(const uint8_t* data, int size, int* w, int* h);
void StbFree(uint8_t* pixels);
// Why the last call on this thread failed.
const char* StbFailureReason();

}  // namespace zf::vision

// WAV (RIFF/WAVE) decoding to 16 kHz mono float PCM: 8/16/24/32-bit integer PCM or 32/64-bit
// float, any channel count (averaged to mono), any sample rate (resampled linearly to 16 kHz).
// Corrupt or unsupported files are a Status naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace zf::speech {

constexpr int32_t kSampleRate = 16000;

Status DecodeWav(const uint8_t* data, size_t size, std::vector<float>* pcm16k);

}  // namespace zf::speech

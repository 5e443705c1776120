// WAV bytes of 16 kHz mono float samples (wav_write.h).
#include "wav_write.h"

#include <cstdint>
#include <cstring>

namespace cli {

namespace {

void Put(std::string* out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string WavFloat16k(const std::vector<float>& pcm) {
  const uint32_t data_bytes = uint32_t(pcm.size() * 4);
  std::string out;
  out.reserve(44 + data_bytes);
  out += "RIFF";
  Put(&out, 36 + data_bytes, 4);
  out += "WAVEfmt ";
  Put(&out, 16, 4);          // fmt chunk size
  Put(&out, 3, 2);           // WAVE_FORMAT_IEEE_FLOAT
  Put(&out, 1, 2);           // mono
  Put(&out, 16000, 4);       // sample rate
  Put(&out, 16000 * 4, 4);   // byte rate
  Put(&out, 4, 2);           // block align
  Put(&out, 32, 2);          // bits per sample
  out += "data";
  Put(&out, data_bytes, 4);
  const size_t at = out.size();
  out.resize(at + data_bytes);
  if (data_bytes != 0) std::memcpy(&out[at], pcm.data(), data_bytes);  // little-endian hosts only (x86, aarch64)
  return out;
}

}  // namespace cli

#include "speech/wav.h"

#include <cmath>
#include <cstring>
#include <string>

namespace zf::speech {
namespace {

uint32_t U32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint16_t U16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }

}  // namespace

Status DecodeWav(const uint8_t* data, size_t size, std::vector<float>* out) {
  out->clear();
  if (size < 12 || std::memcmp(data, "RIFF", 4) != 0 || std::memcmp(data + 8, "WAVE", 4) != 0)
    return InvalidArgument("audio is not a WAV file (no RIFF/WAVE header)");
  uint16_t format = 0, channels = 0, bits = 0;
  uint32_t rate = 0;
  bool have_fmt = false;
  const uint8_t* pcm = nullptr;
  size_t pcm_bytes = 0;
  size_t o = 12;
  while (o + 8 <= size) {
    const uint32_t len = U32(data + o + 4);
    const uint8_t* body = data + o + 8;
    const size_t avail = size - (o + 8);
    if (std::memcmp(data + o, "fmt ", 4) == 0) {
      if (len < 16 || avail < 16) return InvalidArgument("WAV 'fmt ' chunk is shorter than 16 bytes");
      format = U16(body);
      channels = U16(body + 2);
      rate = U32(body + 4);
      bits = U16(body + 14);
      if (format == 0xFFFE && len >= 26 && avail >= 26) format = U16(body + 24);  // WAVE_FORMAT_EXTENSIBLE
      have_fmt = true;
    } else if (std::memcmp(data + o, "data", 4) == 0) {
      pcm = body;
      pcm_bytes = len <= avail ? len : avail;  // a streamed WAV may say 0xFFFFFFFF: take what is there
      break;
    }
    if (len > avail) return InvalidArgument("WAV chunk '" + std::string(reinterpret_cast<const char*>(data + o), 4) + "' runs past the end of the file");
    o += 8 + size_t(len) + (len & 1);
  }
  if (!have_fmt) return InvalidArgument("WAV has no 'fmt ' chunk before its data");
  if (!pcm) return InvalidArgument("WAV has no 'data' chunk");
  if (channels < 1 || channels > 64) return InvalidArgument("WAV channels = " + std::to_string(channels) + " is outside [1, 64]");
  if (rate < 1000 || rate > 384000) return InvalidArgument("WAV sample rate " + std::to_string(rate) + " Hz is outside [1000, 384000]");
  const bool is_int = format == 1 && (bits == 8 || bits == 16 || bits == 24 || bits == 32);
  const bool is_float = format == 3 && (bits == 32 || bits == 64);
  if (!is_int && !is_float)
    return InvalidArgument("WAV format " + std::to_string(format) + " with " + std::to_string(bits) +
                           " bits per sample is not supported (integer PCM 8/16/24/32 or float 32/64)");
  const size_t bps = bits / 8, frame = bps * channels;
  const size_t n = pcm_bytes / frame;
  std::vector<float> mono(n);
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (size_t c = 0; c < channels; ++c) {
      const uint8_t* p = pcm + i * frame + c * bps;
      double v = 0;
      if (is_float) {
        if (bits == 32) { float f; std::memcpy(&f, p, 4); v = f; } else { double d; std::memcpy(&d, p, 8); v = d; }
        if (!std::isfinite(v)) v = 0;
      } else if (bits == 8) {
        v = (int(p[0]) - 128) / 128.0;
      } else if (bits == 16) {
        v = int16_t(U16(p)) / 32768.0;
      } else if (bits == 24) {
        int32_t x = int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24) >> 8;
        v = x / 8388608.0;
      } else {
        v = int32_t(U32(p)) / 2147483648.0;
      }
      s += v;
    }
    mono[i] = float(s / channels);
  }
  if (rate == uint32_t(kSampleRate)) {
    *out = std::move(mono);
    return Status::Ok();
  }
  // Linear interpolation to 16 kHz (as miniaudio's default linear resampler does, without its
  // low-pass filter).
  const double step = double(rate) / kSampleRate;
  const size_t m = size_t(std::floor((n ? n - 1 : 0) / step)) + (n ? 1 : 0);
  out->resize(m);
  for (size_t i = 0; i < m; ++i) {
    const double x = i * step;
    const size_t a = size_t(x);
    const double f = x - double(a);
    (*out)[i] = float(a + 1 < n ? mono[a] * (1 - f) + mono[a + 1] * f : mono[a]);
  }
  return Status::Ok();
}

}  // namespace zf::speech

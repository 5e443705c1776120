// WAV decoding: the formats it takes (16-bit, float, stereo averaged, resampled) and clear errors
// for the ones it does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "speech/wav.h"

namespace zf::speech {
namespace {

std::vector<uint8_t> Wav(uint16_t format, uint16_t channels, uint32_t rate, uint16_t bits, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> o;
  auto s = [&](const char* t) { o.insert(o.end(), t, t + 4); };
  auto u32 = [&](uint32_t v) { const uint8_t* p = reinterpret_cast<const uint8_t*>(&v); o.insert(o.end(), p, p + 4); };
  auto u16 = [&](uint16_t v) { const uint8_t* p = reinterpret_cast<const uint8_t*>(&v); o.insert(o.end(), p, p + 2); };
  s("RIFF"); u32(uint32_t(36 + data.size())); s("WAVE");
  s("fmt "); u32(16); u16(format); u16(channels); u32(rate); u32(rate * channels * bits / 8); u16(uint16_t(channels * bits / 8)); u16(bits);
  s("data"); u32(uint32_t(data.size()));
  o.insert(o.end(), data.begin(), data.end());
  return o;
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> o(v.size() * sizeof(T));
  std::memcpy(o.data(), v.data(), o.size());
  return o;
}

TEST(Wav, Pcm16Mono16k) {
  const auto w = Wav(1, 1, 16000, 16, Bytes<int16_t>({0, 16384, -32768}));
  std::vector<float> pcm;
  ASSERT_TRUE(DecodeWav(w.data(), w.size(), &pcm).ok());
  EXPECT_EQ(pcm, (std::vector<float>{0.0f, 0.5f, -1.0f}));
}

TEST(Wav, FloatStereoIsAveraged) {
  const auto w = Wav(3, 2, 16000, 32, Bytes<float>({0.5f, -0.5f, 1.0f, 0.0f}));
  std::vector<float> pcm;
  ASSERT_TRUE(DecodeWav(w.data(), w.size(), &pcm).ok());
  EXPECT_EQ(pcm, (std::vector<float>{0.0f, 0.5f}));
}

TEST(Wav, ResampledTo16k) {
  std::vector<int16_t> s(48000);
  for (size_t i = 0; i < s.size(); ++i) s[i] = int16_t(10000 * std::sin(2 * M_PI * 440 * double(i) / 48000));
  const auto w = Wav(1, 1, 48000, 16, Bytes(s));
  std::vector<float> pcm;
  ASSERT_TRUE(DecodeWav(w.data(), w.size(), &pcm).ok());
  EXPECT_NEAR(double(pcm.size()), 16000, 1);
  for (size_t i = 0; i < pcm.size(); i += 997)
    EXPECT_NEAR(pcm[i], 10000 / 32768.0 * std::sin(2 * M_PI * 440 * double(i) / 16000), 1e-3);
}

TEST(Wav, ErrorsNameTheProblem) {
  std::vector<float> pcm;
  const std::string junk = "hello";
  Status s = DecodeWav(reinterpret_cast<const uint8_t*>(junk.data()), junk.size(), &pcm);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("not a WAV file"), std::string::npos);
  auto w = Wav(2, 1, 16000, 4, {1, 2, 3, 4});  // ADPCM
  s = DecodeWav(w.data(), w.size(), &pcm);
  EXPECT_NE(s.message().find("WAV format 2 with 4 bits per sample is not supported"), std::string::npos) << s.message();
  w = Wav(1, 0, 16000, 16, {});
  EXPECT_NE(DecodeWav(w.data(), w.size(), &pcm).message().find("WAV channels = 0"), std::string::npos);
  w = Wav(1, 1, 10, 16, {});
  EXPECT_NE(DecodeWav(w.data(), w.size(), &pcm).message().find("sample rate 10 Hz"), std::string::npos);
  w = Wav(1, 1, 16000, 16, {0, 0});
  w.resize(24);  // cut inside 'fmt '
  EXPECT_NE(DecodeWav(w.data(), w.size(), &pcm).message().find("'fmt ' chunk is shorter"), std::string::npos);
  for (size_t n = 0; n < 44; ++n) {  // every cut of the header: an error, never a crash
    auto c = Wav(1, 1, 16000, 16, {0, 0});
    c.resize(n);
    EXPECT_FALSE(DecodeWav(c.data(), c.size(), &pcm).ok()) << n;
  }
}

}  // namespace
}  // namespace zf::speech

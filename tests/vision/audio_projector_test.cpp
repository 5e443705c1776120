// The Whisper-encoder audio projectors (ultravox, qwen2a, voxtral; src/mmproj_audio) against
// libmtmd (tests/data/golden/audio, scripts/reference/record_audio_goldens.sh) on the synthesized
// files of the fixture audio.models (tests/vision/make_audio_models.sh): the log-mel libmtmd fed
// its encoder (each bin's sum over the chunk, four whole frames) and the projected rows (every
// row's norm, every 25th row whole) for the first 4 s of the sdist's test-2.mp3 (libmtmd's
// decode, 16-bit WAV) and, where ~/.cache/zerfoo/speech-data/two-minutes.wav is present, a
// 2-minute clip (five 30 s chunks, their rows concatenated).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "gguf/gguf.h"
#include "mmproj_audio/audio_projector.h"
#include "speech/wav.h"

namespace zf::mmproj_audio {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ModelPath(const std::string& name) { return std::string(ZF_VISION_MODELS_DIR) + "/audio/" + name; }

std::unique_ptr<AudioProjector> LoadProjector(const std::string& name) {
  std::unique_ptr<gguf::GgufFile> f;
  Status s = gguf::GgufFile::Open(ModelPath(name), gguf::OpenOptions{}, &f);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<AudioProjector> p;
  s = AudioProjector::FromGguf(std::move(f), &p);
  EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

std::vector<float> ReadClip(const std::string& path) {
  const std::string bytes = ReadText(path);
  std::vector<float> pcm;
  Status s = speech::DecodeWav(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &pcm);
  EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  return pcm;
}

struct Variant {
  const char* kind;
  const char* ftype;
  double min_cosine;  // per recorded row
  double max_norm;    // every row's norm, relative
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.kind << "-" << v.ftype; }

// The mel of every chunk ([n_mel][frames], 3000 frames unless the golden says) against the
// golden's: bin sums within sum_tol (Whisper's: 0.05 of magnitudes near 1000) and the recorded
// frames' values within val_tol.
void ExpectMelMatches(const std::vector<float>& mel, int32_t n_mel, const nlohmann::json& g, const std::string& what,
                      double sum_tol = 0.05, double val_tol = 2e-3) {
  const auto& chunks = g["mel"]["chunks"];
  size_t total = 0;
  for (const auto& c : chunks) total += size_t(n_mel) * c.value("n_frames", size_t(3000));
  ASSERT_EQ(mel.size(), total) << what;
  double worst_sum = 0, worst_val = 0;
  const float* m = mel.data();
  for (size_t c = 0; c < chunks.size(); ++c) {
    const size_t nx = chunks[c].value("n_frames", size_t(3000));
    for (int32_t b = 0; b < n_mel; ++b) {
      double s = 0;
      for (size_t x = 0; x < nx; ++x) s += m[size_t(b) * nx + x];
      worst_sum = std::max(worst_sum, std::fabs(s - chunks[c]["bin_sums"][size_t(b)].get<double>()));
    }
    for (const auto& [key, ref] : chunks[c]["frames"].items()) {
      const size_t x = size_t(std::stoi(key));
      for (int32_t b = 0; b < n_mel; ++b)
        worst_val = std::max(worst_val, std::fabs(double(m[size_t(b) * nx + x]) - ref[size_t(b)].get<double>()));
    }
    m += size_t(n_mel) * nx;
  }
  EXPECT_LT(worst_sum, sum_tol) << what;
  EXPECT_LT(worst_val, val_tol) << what;
  std::printf("[ mel      ] %s: max |bin sum diff| %.3g, max |value diff| %.3g\n", what.c_str(), worst_sum, worst_val);
}

class AudioGolden : public ::testing::TestWithParam<Variant> {};

TEST_P(AudioGolden, MelAndEmbeddingsMatchLibmtmd) {
  const Variant v = GetParam();
  const std::string name = std::string(v.kind) + "-" + v.ftype;
  const nlohmann::json g = nlohmann::json::parse(ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/audio/" + name + ".json"));
  const std::string file = "mmproj-" + name + ".gguf";
  std::string sha = ReadText(ModelPath(file) + ".sha256");
  sha.erase(sha.find_last_not_of(" \n") + 1);
  ASSERT_EQ(sha, g["mmproj_sha256"].get<std::string>()) << "the synthesized file differs from the golden's";
  std::unique_ptr<AudioProjector> p = LoadProjector(file);
  ASSERT_NE(p, nullptr);
  const std::vector<float> pcm = ReadClip(std::string(ZF_TEST_DATA_DIR) + "/audio/test-2-4s.wav");
  ASSERT_EQ(pcm.size(), g["n_samples"].get<size_t>());
  EXPECT_EQ(AudioProjector::Chunks(int64_t(pcm.size())), g["n_chunks"].get<int64_t>());
  EXPECT_EQ(int64_t(p->hparams().tokens_per_chunk()) * g["n_chunks"].get<int64_t>(), g["n_tokens"].get<int64_t>());
  AudioEncoder enc(*p, 2);
  ExpectMelMatches(enc.Mel(pcm.data(), int64_t(pcm.size())), p->hparams().n_mel, g, name);
  std::vector<float> rows;
  enc.Encode(pcm.data(), int64_t(pcm.size()), &rows);
  const vision::test::GoldenFit fit = vision::test::ExpectMatchesGolden(rows, g, v.min_cosine, name, v.max_norm);
  std::printf("[ golden   ] %s: min cosine %.7f, max |diff| %.3g, worst norm %.3g\n", name.c_str(), fit.min_cosine,
              fit.max_abs, fit.worst_norm);
}

INSTANTIATE_TEST_SUITE_P(Types, AudioGolden,
                         // Q8_0: 2 blocks over 1500 positions of Q8_0-rounded activations move
                         // norms by up to 0.3 % (measured 2.1e-3 to 2.9e-3; cosine >= 0.9998).
                         ::testing::Values(Variant{"ultravox", "f16", 0.9999, 1e-3}, Variant{"ultravox", "q8_0", 0.999, 6e-3},
                                           Variant{"qwen2a", "f16", 0.9999, 1e-3}, Variant{"qwen2a", "q8_0", 0.999, 6e-3},
                                           Variant{"voxtral", "f16", 0.9999, 1e-3}, Variant{"voxtral", "q8_0", 0.999, 6e-3}));

// A clip of several 30 s chunks: each encoded alone, the rows concatenated (qwen2a: 750 a chunk).
TEST(AudioGoldenLong, ChunksConcatenateAsLibmtmd) {
  const std::string clip = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/zerfoo/speech-data/two-minutes.wav";
  const std::string golden = std::string(ZF_TEST_DATA_DIR) + "/golden/audio/qwen2a-f16-long.json";
  if (!std::ifstream(clip).good() || !std::ifstream(golden).good()) GTEST_SKIP() << "no " << clip;
  const nlohmann::json g = nlohmann::json::parse(ReadText(golden));
  std::unique_ptr<AudioProjector> p = LoadProjector("mmproj-qwen2a-f16.gguf");
  ASSERT_NE(p, nullptr);
  const std::vector<float> pcm = ReadClip(clip);
  ASSERT_EQ(pcm.size(), g["n_samples"].get<size_t>());
  EXPECT_EQ(AudioProjector::Chunks(int64_t(pcm.size())), g["n_chunks"].get<int64_t>());
  AudioEncoder enc(*p, 2);
  ExpectMelMatches(enc.Mel(pcm.data(), int64_t(pcm.size())), p->hparams().n_mel, g, "qwen2a-f16 long");
  std::vector<float> rows;
  enc.Encode(pcm.data(), int64_t(pcm.size()), &rows);
  const vision::test::GoldenFit fit = vision::test::ExpectMatchesGolden(rows, g, 0.999, "qwen2a-f16 long");
  std::printf("[ golden   ] long: %zu rows, min cosine %.7f\n", rows.size() / 576, fit.min_cosine);
}

// libmtmd's chunk count: the clip plus 30 s of silence in whole 3000-frame chunks.
TEST(AudioChunks, CountsAsLibmtmd) {
  EXPECT_EQ(AudioProjector::Chunks(1), 1);
  EXPECT_EQ(AudioProjector::Chunks(16000 * 4), 1);
  EXPECT_EQ(AudioProjector::Chunks(479839), 1);  // (479839 + 480000) / 160 + 1 = 5999 frames
  EXPECT_EQ(AudioProjector::Chunks(479840), 2);  // 6000: a second, silent chunk
  EXPECT_EQ(AudioProjector::Chunks(16000 * 120), 5);
}

// Errors name the key or tensor.
TEST(AudioProjectorLoad, RefusesWhatItCannotRun) {
  std::unique_ptr<gguf::GgufFile> f;
  ASSERT_TRUE(gguf::GgufFile::Open(std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma3-f16.gguf", gguf::OpenOptions{}, &f).ok());
  EXPECT_FALSE(AudioProjector::IsAudio(*f));
  std::unique_ptr<AudioProjector> p;
  Status s = AudioProjector::FromGguf(std::move(f), &p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("clip.has_audio_encoder"), std::string::npos) << s.message();
  p = LoadProjector("mmproj-qwen2a-f16.gguf");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->CheckLanguageModel(576).ok());
  s = p->CheckLanguageModel(640);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("576"), std::string::npos) << s.message();
}

// The synthetic clip of the gemma4a goldens (record_audio_goldens.sh writes the same samples as
// WAV for libmtmd): 31 s + 321 samples (two 30 s pieces, the second short) of a rising triangle
// tone (73 to 194 Hz) and LCG noise, all in integers so both sides hold the same samples.
std::vector<float> SyntheticClip() {
  const int64_t n = 16000 * 31 + 321;
  std::vector<float> pcm(static_cast<size_t>(n));
  int64_t phase = 0, x = 12345;
  for (int64_t i = 0; i < n; ++i) {
    phase = (phase + 300 + i / 1000) % 65536;
    const int64_t tri = std::abs(phase - 32768) - 16384;
    x = (1103515245 * x + 12345) % 2147483648;
    const int64_t noise = (x >> 16) % 4096 - 2048;
    pcm[size_t(i)] = float(tri + noise) / 32768.0f;
  }
  return pcm;
}

struct Gemma4aVariant {
  const char* ftype;
  const char* clip;  // "test-2-4s" or "synth"
  double min_cosine, max_norm;
};

void PrintTo(const Gemma4aVariant& v, std::ostream* os) { *os << v.ftype << "-" << v.clip; }

class Gemma4aGolden : public ::testing::TestWithParam<Gemma4aVariant> {};

// Gemma 4's audio tower: libmtmd's own front end (the mel of each 30 s piece) and the conformer.
TEST_P(Gemma4aGolden, MelAndEmbeddingsMatchLibmtmd) {
  const Gemma4aVariant v = GetParam();
  const bool synth = std::string(v.clip) == "synth";
  const std::string name = std::string("gemma4a-") + v.ftype + (synth ? "-synth" : "");
  const nlohmann::json g = nlohmann::json::parse(ReadText(std::string(ZF_TEST_DATA_DIR) + "/golden/audio/" + name + ".json"));
  const std::string file = std::string("mmproj-gemma4a-") + v.ftype + ".gguf";
  std::string sha = ReadText(ModelPath(file) + ".sha256");
  sha.erase(sha.find_last_not_of(" \n") + 1);
  ASSERT_EQ(sha, g["mmproj_sha256"].get<std::string>()) << "the synthesized file differs from the golden's";
  std::unique_ptr<AudioProjector> p = LoadProjector(file);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->hparams().kind, Kind::kGemma4a);
  EXPECT_EQ(p->hparams().proj_width, 256);
  EXPECT_EQ(p->hparams().tokens_per_chunk(), 750);  // 2999 frames of a 30 s piece, quartered
  const std::vector<float> pcm = synth ? SyntheticClip() : ReadClip(std::string(ZF_TEST_DATA_DIR) + "/audio/test-2-4s.wav");
  ASSERT_EQ(pcm.size(), g["n_samples"].get<size_t>());
  EXPECT_EQ(p->Rows(int64_t(pcm.size())), g["n_tokens"].get<int64_t>());
  AudioEncoder enc(*p, 2);
  // ln of magnitudes (floor 1e-3): float FFT there, double here (measured 9e-4 / 3.4e-5).
  ExpectMelMatches(enc.Mel(pcm.data(), int64_t(pcm.size())), p->hparams().n_mel, g, name, 5e-3, 2e-4);
  std::vector<float> rows;
  enc.Encode(pcm.data(), int64_t(pcm.size()), &rows);
  const vision::test::GoldenFit fit = vision::test::ExpectMatchesGolden(rows, g, v.min_cosine, name, v.max_norm);
  std::printf("[ golden   ] %s: %zu rows, min cosine %.7f, max |diff| %.3g, worst norm %.3g\n", name.c_str(),
              rows.size() / 256, fit.min_cosine, fit.max_abs, fit.worst_norm);
}

INSTANTIATE_TEST_SUITE_P(Types, Gemma4aGolden,
                         ::testing::Values(Gemma4aVariant{"f32", "test-2-4s", 0.9999, 1e-3},
                                           Gemma4aVariant{"f16", "test-2-4s", 0.9999, 1e-3},
                                           Gemma4aVariant{"q8_0", "test-2-4s", 0.999, 6e-3},
                                           Gemma4aVariant{"f16", "synth", 0.9999, 1e-3}));

// Gemma 4's two-tower file (synth_mmproj.py: the vision tower beside synth_audio_mmproj.py's
// gemma4a one, the same seed): its audio tower is the audio-only file's, bit for bit.
TEST(Gemma4aTwoTower, AudioTowerEncodesAsTheAudioOnlyFile) {
  std::unique_ptr<gguf::GgufFile> f;
  ASSERT_TRUE(gguf::GgufFile::Open(std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma4v-av-f16.gguf", gguf::OpenOptions{}, &f).ok());
  ASSERT_TRUE(AudioProjector::IsAudio(*f));
  std::unique_ptr<AudioProjector> two;
  Status s = AudioProjector::FromGguf(std::move(f), &two);
  ASSERT_TRUE(s.ok()) << s.message();
  std::unique_ptr<AudioProjector> one = LoadProjector("mmproj-gemma4a-f16.gguf");
  ASSERT_NE(one, nullptr);
  const std::vector<float> pcm = ReadClip(std::string(ZF_TEST_DATA_DIR) + "/audio/test-2-4s.wav");
  std::vector<float> a, b;
  AudioEncoder(*two, 2).Encode(pcm.data(), int64_t(pcm.size()), &a);
  AudioEncoder(*one, 2).Encode(pcm.data(), int64_t(pcm.size()), &b);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

// libmtmd's frame and row counts per 30 s piece: (n + 160 - 321) / 160 + 1 frames, two halvings.
TEST(Gemma4aRows, CountAsLibmtmd) {
  std::unique_ptr<AudioProjector> p = LoadProjector("mmproj-gemma4a-f16.gguf");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Rows(160), 1);              // 1 frame
  EXPECT_EQ(p->Rows(16000 * 4), 100);      // 399 frames -> 200 -> 100
  EXPECT_EQ(p->Rows(480000), 750);         // 2999 frames
  EXPECT_EQ(p->Rows(480000 + 16000), 775); // and a 1 s piece: 99 frames -> 50 -> 25
}

}  // namespace
}  // namespace zf::mmproj_audio

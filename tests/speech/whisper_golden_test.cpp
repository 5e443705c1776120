// Whisper tiny.en on samples/jfk.wav against whisper.cpp 1.8.5's recorded numbers
// (tests/data/golden/whisper/tiny.en-jfk.json, scripts/reference/whisper_record_goldens.sh):
// log-mel within 1e-4, encoder output and first-step logits with cosine >= 0.9999, and the greedy
// transcript with its segment timestamps and token ids identical.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "speech/mel.h"
#include "speech/transcribe.h"
#include "speech/wav.h"
#include "speech/whisper_model.h"

namespace zf::speech {
namespace {

using nlohmann::json;

std::string ModelPath(const char* env, const char* file) {
  if (const char* p = std::getenv(env)) return p;
  std::string dir;
  if (const char* d = std::getenv("ZERFOO_MODELS")) dir = d;
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/zerfoo/models";
  const std::string path = dir + "/" + file;
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : std::string();
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return ab / std::sqrt(aa * bb);
}

class WhisperGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = ModelPath("ZF_MODEL_WHISPER_TINY_EN", "ggml-tiny.en.bin");
    if (path.empty()) return;
    ASSERT_TRUE(WhisperModel::Load(path, &model_).ok());
    golden_ = json::parse(ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/tiny.en-jfk.json"));
    const std::string wav = ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/jfk.wav");
    ASSERT_TRUE(DecodeWav(reinterpret_cast<const uint8_t*>(wav.data()), wav.size(), &pcm_).ok());
  }
  static void TearDownTestSuite() { model_.reset(); }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "Whisper tiny.en not found: run scripts/fetch_models.sh whisper-tiny-en";
  }
  static std::unique_ptr<WhisperModel> model_;
  static json golden_;
  static std::vector<float> pcm_;
};
std::unique_ptr<WhisperModel> WhisperGolden::model_;
json WhisperGolden::golden_;
std::vector<float> WhisperGolden::pcm_;

TEST_F(WhisperGolden, WavSamples) { EXPECT_EQ(int64_t(pcm_.size()), golden_["n_samples"].get<int64_t>()); }

TEST_F(WhisperGolden, LogMelWithin1e4) {
  const Mel mel = LogMel(pcm_.data(), int64_t(pcm_.size()), model_->mel_filters(), model_->hparams().n_mels, 2);
  const json& g = golden_["mel"];
  ASSERT_EQ(mel.n_len, g["n_len"].get<int32_t>());
  ASSERT_EQ(mel.n_len_org, g["n_len_org"].get<int32_t>());
  const int stride = g["stride"].get<int>();
  double max_diff = 0;
  size_t n = 0;
  for (size_t k = 0; k < g["frames"].size(); ++k)
    for (int32_t j = 0; j < mel.n_mel; ++j, ++n)
      max_diff = std::max(max_diff, std::fabs(double(mel.data[size_t(j) * size_t(mel.n_len) + k * size_t(stride)]) -
                                              g["frames"][k][size_t(j)].get<double>()));
  double s = 0;
  for (float v : mel.data) s += v;
  std::printf("mel: %zu values compared, max |diff| %.3g; mean %.7f (reference %.7f)\n", n, max_diff,
              s / double(mel.data.size()), g["mean"].get<double>());
  EXPECT_LE(max_diff, 1e-4);
  EXPECT_NEAR(s / double(mel.data.size()), g["mean"].get<double>(), 1e-5);
}

TEST_F(WhisperGolden, EncoderCosine) {
  const Mel mel = LogMel(pcm_.data(), int64_t(pcm_.size()), model_->mel_filters(), model_->hparams().n_mels, 2);
  WhisperRunner r(*model_, 2);
  r.Encode(mel.data.data(), mel.n_len, mel.n_len, 0);
  const json& g = golden_["encoder"];
  const int64_t n = g["n_state"].get<int64_t>();
  ASSERT_EQ(r.encoder_out().size(), size_t(n * g["n_ctx"].get<int64_t>()));
  std::vector<double> a, b;
  double worst_row = 1;
  for (size_t k = 0; k < g["rows"].size(); ++k) {
    const int64_t row = g["rows"][k].get<int64_t>();
    std::vector<double> ra, rb;
    for (int64_t j = 0; j < n; ++j) {
      ra.push_back(r.encoder_out()[size_t(row * n + j)]);
      rb.push_back(g["values"][k][size_t(j)].get<double>());
    }
    worst_row = std::min(worst_row, Cosine(ra, rb));
    a.insert(a.end(), ra.begin(), ra.end());
    b.insert(b.end(), rb.begin(), rb.end());
  }
  const double cos = Cosine(a, b);
  std::printf("encoder: cosine %.7f over %zu values (worst row %.7f)\n", cos, a.size(), worst_row);
  EXPECT_GE(cos, 0.9999);
  EXPECT_GE(worst_row, 0.9999);
}

TEST_F(WhisperGolden, FirstLogits) {
  const Mel mel = LogMel(pcm_.data(), int64_t(pcm_.size()), model_->mel_filters(), model_->hparams().n_mels, 2);
  WhisperRunner r(*model_, 2);
  r.Encode(mel.data.data(), mel.n_len, mel.n_len, 0);
  const json& g = golden_["logits"];
  std::vector<float> logits(size_t(model_->hparams().n_vocab));
  const auto prompt = g["prompt"].get<std::vector<int32_t>>();
  for (size_t i = 0; i < prompt.size(); ++i)
    ASSERT_TRUE(r.Decode(prompt[i], i + 1 == prompt.size() ? logits.data() : nullptr).ok());
  const int stride = g["stride"].get<int>();
  std::vector<double> a, b;
  double max_diff = 0;
  for (size_t k = 0; k < g["strided"].size(); ++k) {
    a.push_back(logits[k * size_t(stride)]);
    b.push_back(g["strided"][k].get<double>());
    max_diff = std::max(max_diff, std::fabs(a.back() - b.back()));
  }
  for (const json& t : g["top"]) {
    a.push_back(logits[t[0].get<size_t>()]);
    b.push_back(t[1].get<double>());
    max_diff = std::max(max_diff, std::fabs(a.back() - b.back()));
  }
  const double cos = Cosine(a, b);
  std::printf("first logits: cosine %.7f over %zu ids, max |diff| %.4f\n", cos, a.size(), max_diff);
  EXPECT_GE(cos, 0.9999);
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = int32_t(i);
  EXPECT_EQ(best, g["top"][0][0].get<int32_t>());
}

TEST_F(WhisperGolden, GreedyTranscriptAndTimestampsIdentical) {
  WhisperRunner r(*model_, 2);
  TranscribeResult res;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Transcribe(r, *model_, pcm_.data(), int64_t(pcm_.size()), TranscribeParams(), 2, &res).ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const json& g = golden_["greedy"]["segments"];
  std::printf("greedy: %.3f s on 2 threads (whisper.cpp's whisper_full when recorded: %.3f s)\n", secs,
              golden_["greedy"]["wall_s"].get<double>());
  ASSERT_EQ(res.segments.size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    std::printf("  [%lld -> %lld] %s\n", (long long)res.segments[i].t0, (long long)res.segments[i].t1, res.segments[i].text.c_str());
    EXPECT_EQ(res.segments[i].t0, g[i]["t0"].get<int64_t>()) << "segment " << i;
    EXPECT_EQ(res.segments[i].t1, g[i]["t1"].get<int64_t>()) << "segment " << i;
    EXPECT_EQ(res.segments[i].text, g[i]["text"].get<std::string>()) << "segment " << i;
    std::vector<int32_t> ids;
    for (const SegmentToken& t : res.segments[i].tokens) ids.push_back(t.id);
    EXPECT_EQ(ids, g[i]["tokens"].get<std::vector<int32_t>>()) << "segment " << i;
  }
}

}  // namespace
}  // namespace zf::speech

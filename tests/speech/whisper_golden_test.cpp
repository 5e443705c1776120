// Whisper tiny.en (and base when fetched) on samples/jfk.wav against whisper.cpp 1.8.5's
// recorded numbers (tests/data/golden/whisper/<model>-jfk.json,
// scripts/reference/whisper_record_goldens.sh): log-mel within 1e-4, encoder output and
// first-step logits with cosine >= 0.9999, and the greedy transcript with its segment timestamps
// and token ids identical, on the sample and on the sample three times over (seeking).
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
#include "whisper_test_util.h"

namespace zf::speech {
namespace {

using nlohmann::json;
using testing::CompareSegments;
using testing::ModelPath;
using testing::ReadAll;

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return ab / std::sqrt(aa * bb);
}

struct ModelCase {
  const char* name;  // golden file prefix
  const char* env;   // overrides the cached path
  const char* file;  // under ~/.cache/zerfoo/models (scripts/fetch_models.sh)
  // False where the reference's greedy path crosses a tie closer than the two engines' rounding
  // (the text is then compared, not its cut into segments).
  bool exact_jfk_segments;
};
const ModelCase kCases[] = {
    {"tiny.en", "ZF_MODEL_WHISPER_TINY_EN", "ggml-tiny.en.bin", true},  // CI: the ctest fixture fetches it
    // base on jfk.wav, after "... can do for you,": whisper.cpp gives the timestamps together
    // log-probability -0.77423 against -0.77507 for " ask" and ends the segment; zerfoo gives
    // -0.77528 against -0.77411 and goes on (logits within 0.004 of the reference's there).
    {"base", "ZF_MODEL_WHISPER_BASE", "ggml-base.bin", false},
};

class WhisperGolden : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    const std::string path = ModelPath(GetParam().env, GetParam().file);
    if (path.empty()) GTEST_SKIP() << GetParam().file << " not found: run scripts/fetch_models.sh whisper-...";
    ASSERT_TRUE(WhisperModel::Load(path, &model_).ok());
    golden_ = json::parse(ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/" + GetParam().name + "-jfk.json"));
    const std::string wav = ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/jfk.wav");
    ASSERT_TRUE(DecodeWav(reinterpret_cast<const uint8_t*>(wav.data()), wav.size(), &pcm_).ok());
  }
  std::unique_ptr<WhisperModel> model_;
  json golden_;
  std::vector<float> pcm_;
};

TEST_P(WhisperGolden, WavSamples) { EXPECT_EQ(int64_t(pcm_.size()), golden_["n_samples"].get<int64_t>()); }

TEST_P(WhisperGolden, LogMelWithin1e4) {
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

TEST_P(WhisperGolden, EncoderCosine) {
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

TEST_P(WhisperGolden, FirstLogits) {
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

TEST_P(WhisperGolden, GreedyTranscriptAndTimestampsIdentical) {
  WhisperRunner r(*model_, 2);
  TranscribeResult res;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Transcribe(r, *model_, pcm_.data(), int64_t(pcm_.size()), TranscribeParams(), 2, &res).ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("greedy: %.3f s on 2 threads (whisper.cpp's whisper_full when recorded: %.3f s)\n", secs,
              golden_["greedy"]["wall_s"].get<double>());
  if (GetParam().exact_jfk_segments) {
    CompareSegments(res, golden_["greedy"]["segments"]);
    return;
  }
  std::string ours, ref;
  for (const Segment& s : res.segments) ours += s.text;
  for (const json& s : golden_["greedy"]["segments"]) ref += s["text"].get<std::string>();
  std::printf("  zerfoo:      %s\n  whisper.cpp: %s\n", ours.c_str(), ref.c_str());
  EXPECT_EQ(ours, ref);
}

// 33 s (the sample three times): two windows, the second starting at the first's last
// timestamp with the first's tokens as the prompt.
TEST_P(WhisperGolden, GreedySeekingOverWindowsIdentical) {
  std::vector<float> three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), pcm_.begin(), pcm_.end());
  WhisperRunner r(*model_, 2);
  TranscribeResult res;
  ASSERT_TRUE(Transcribe(r, *model_, three.data(), int64_t(three.size()), TranscribeParams(), 2, &res).ok());
  std::printf("windows: %d\n", res.n_windows);
  EXPECT_GE(res.n_windows, 2);
  CompareSegments(res, golden_["greedy_jfk_x3"]["segments"]);
}

// Options the model cannot honour are refused naming them; under 100 ms there is nothing to
// decode (as whisper.cpp), which is not an error.
TEST_P(WhisperGolden, BadOptionsAreNamed) {
  WhisperRunner r(*model_, 2);
  TranscribeResult res;
  TranscribeParams p;
  p.language = "xx";
  Status s = Transcribe(r, *model_, pcm_.data(), 16000, p, 2, &res);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("language 'xx'"), std::string::npos) << s.message();
  if (model_->hparams().n_vocab >= 51865) return;  // the rest: English-only models
  p = TranscribeParams();
  p.translate = true;
  s = Transcribe(r, *model_, pcm_.data(), 16000, p, 2, &res);
  EXPECT_NE(s.message().find("translate: this model is English-only"), std::string::npos) << s.message();
  ASSERT_TRUE(Transcribe(r, *model_, pcm_.data(), 800, TranscribeParams(), 2, &res).ok());
  EXPECT_TRUE(res.segments.empty());
  EXPECT_FALSE(Transcribe(r, *model_, nullptr, 10, TranscribeParams(), 2, &res).ok());
}

INSTANTIATE_TEST_SUITE_P(Models, WhisperGolden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ModelCase>& i) {
                           return std::string(i.param.name) == "tiny.en" ? std::string("tiny_en") : std::string(i.param.name);
                         });

}  // namespace
}  // namespace zf::speech

// Language detection on real multilingual speech: Whisper base with language "auto" on four
// clips of the pytest-audioeval wheel (French, Spanish, Italian, Polish pangrams; fetched into
// the cache by scripts/reference/whisper_audioeval.sh, never committed) against whisper.cpp
// 1.8.5 (tests/data/golden/whisper/base-lang.json): the same detected language (Polish is
// detected as Portuguese by both), its probability within 0.01, and the same segments. Runs when
// base and the clips are in the cache, as the other base tests.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "speech/transcribe.h"
#include "speech/wav.h"
#include "speech/whisper_model.h"
#include "whisper_test_util.h"

namespace zf::speech {
namespace {

std::string ClipsDir() {
  std::string dir;
  if (const char* d = std::getenv("ZERFOO_AUDIOEVAL")) dir = d;
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/zerfoo/audioeval";
  return dir + "/whl/pytest_audioeval/samples/audio";
}

TEST(WhisperLanguage, BaseDetectsAsWhisperCpp) {
  const std::string path = testing::ModelPath("ZF_MODEL_WHISPER_BASE", "ggml-base.bin");
  if (path.empty()) GTEST_SKIP() << "ggml-base.bin not found: scripts/fetch_models.sh whisper-base";
  struct stat st;
  if (stat((ClipsDir() + "/fr/pangrama.wav").c_str(), &st) != 0)
    GTEST_SKIP() << "audio clips not fetched: scripts/reference/whisper_audioeval.sh";
  std::unique_ptr<WhisperModel> model;
  ASSERT_TRUE(WhisperModel::Load(path, &model).ok());
  const nlohmann::json golden =
      nlohmann::json::parse(testing::ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/base-lang.json"));
  for (auto it = golden.begin(); it != golden.end(); ++it) {
    SCOPED_TRACE(it.key());
    const std::string wav = testing::ReadAll(ClipsDir() + "/" + it.key() + ".wav");
    std::vector<float> pcm;
    ASSERT_TRUE(DecodeWav(reinterpret_cast<const uint8_t*>(wav.data()), wav.size(), &pcm).ok());
    TranscribeParams p;
    p.language = "auto";
    WhisperRunner r(*model, 2);
    TranscribeResult res;
    ASSERT_TRUE(Transcribe(r, *model, pcm.data(), int64_t(pcm.size()), p, 2, &res).ok());
    const std::string reference = testing::ReadAll(ClipsDir() + "/" + it.key() + ".txt");
    std::printf("%s: %s (p %.4f; whisper.cpp %s, p %.4f); reference text: %s\n", it.key().c_str(), res.language.c_str(),
                res.language_prob, (*it)["detected"].get<std::string>().c_str(), (*it)["probability"].get<double>(),
                reference.c_str());
    EXPECT_EQ(res.language, (*it)["detected"].get<std::string>());
    EXPECT_NEAR(res.language_prob, (*it)["probability"].get<double>(), 0.01);
    testing::CompareSegments(res, (*it)["greedy_auto"]["segments"]);
  }
}

}  // namespace
}  // namespace zf::speech

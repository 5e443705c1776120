// The .bin reader and the model binder on small in-memory files: a valid file parses, and every
// bad field (magic, hparams, filters, vocabulary, tensor header, truncation anywhere) is a clear
// FormatError naming it, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "speech/whisper_file.h"
#include "speech/whisper_model.h"
#include "whisper_builder.h"

namespace zf::speech {
namespace {

using testing::BinBuilder;

std::string Parse(const std::vector<uint8_t>& b) {
  std::unique_ptr<WhisperFile> f;
  Status s = WhisperFile::FromMemory(b.data(), b.size(), &f);
  if (s.ok()) EXPECT_NE(f, nullptr);
  return s.ok() ? "" : s.message();
}

TEST(WhisperFile, ValidFileParses) {
  BinBuilder b;
  b.AddTensor("encoder.conv1.bias", 0, {1, 8}, 4.0f);
  b.AddTensor("decoder.token_embedding.weight", 1, {8, 51864}, 0.5f);
  const std::vector<uint8_t> bytes = b.Build();
  std::unique_ptr<WhisperFile> f;
  ASSERT_TRUE(WhisperFile::FromMemory(bytes.data(), bytes.size(), &f).ok());
  EXPECT_EQ(f->hparams().n_vocab, 51864);
  EXPECT_EQ(f->hparams().n_mels, 80);
  EXPECT_EQ(f->mel_filters().size(), 80u * 201u);
  ASSERT_EQ(f->vocab().size(), 3u);
  EXPECT_EQ(f->vocab()[1], "b c");
  ASSERT_EQ(f->tensors().size(), 2u);
  WhisperTensor t;
  ASSERT_TRUE(f->Get("decoder.token_embedding.weight", {8, 51864}, &t).ok());
  EXPECT_EQ(t.type, GgmlType::F16);
  EXPECT_EQ(t.nbytes, 8u * 51864u * 2u);
  Status s = f->Get("decoder.token_embedding.weight", {8, 5}, &t);
  EXPECT_NE(s.message().find("has dims [8, 51864, 1], expected [8, 5, 1]"), std::string::npos) << s.message();
  s = f->Get("nope", {1}, &t);
  EXPECT_NE(s.message().find("tensor 'nope' is missing"), std::string::npos) << s.message();
}

TEST(WhisperFile, EveryTruncationIsAnError) {
  BinBuilder b;
  b.AddTensor("encoder.conv1.bias", 0, {1, 8}, 1.0f);
  const std::vector<uint8_t> full = b.Build();
  // Cutting inside the tensor section at a header boundary leaves a valid (shorter) file; every
  // other cut must fail with "truncated".
  for (size_t n = 0; n < full.size(); n += (n < 64 || n + 64 > full.size()) ? 1 : 97) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + long(n));
    const std::string m = Parse(cut);
    if (n == b.TensorsOffset()) {
      EXPECT_EQ(m, "") << "cut at the end of the vocabulary is a file without tensors";
      continue;
    }
    EXPECT_NE(m.find("truncated"), std::string::npos) << "cut at " << n << ": " << m;
  }
}

TEST(WhisperFile, BadMagic) {
  BinBuilder b;
  std::vector<uint8_t> bytes = b.Build();
  bytes[0] = 'x';
  EXPECT_NE(Parse(bytes).find("bad magic"), std::string::npos);
}

TEST(WhisperFile, BadHparamsNameTheField) {
  struct Case { int index; int32_t value; const char* want; };
  const Case cases[] = {
      {0, 100, "n_vocab = 100 is below"},
      {3, 0, "hparam n_audio_head = 0 is out of range"},
      {2, 7, "n_audio_state 7 is not a multiple of n_audio_head"},
      {7, 3, "n_text_state 8 is not a multiple of n_text_head 3"},
      {9, -1, "hparam n_mels = -1 is out of range"},
      {9, 128, "mel filters n_mel = 80 differs from hparam n_mels = 128"},
      {10, -5, "hparam ftype = -5"},
  };
  for (const Case& c : cases) {
    BinBuilder b;
    b.hparams[size_t(c.index)] = c.value;
    const std::string m = Parse(b.Build());
    EXPECT_NE(m.find(c.want), std::string::npos) << "hparam " << c.index << ": " << m;
  }
}

TEST(WhisperFile, BadTensorHeadersNameTheTensor) {
  {
    BinBuilder b;
    b.AddTensor("x.weight", 5, {8, 2}, 0.0f);  // type 5 was Q4_2, long gone
    EXPECT_NE(Parse(b.Build()).find("tensor 'x.weight': type 5 is not F32, F16 or Q4_0..Q8_0"), std::string::npos);
  }
  {
    BinBuilder b;
    b.AddTensor("x.weight", 8, {8, 2}, 0.0f);  // Q8_0 rows must be multiples of 32
    EXPECT_NE(Parse(b.Build()).find("row length 8 is not a multiple of Q8_0's block size 32"), std::string::npos);
  }
  {
    BinBuilder b;
    b.AddTensor("x", 0, {4}, 0.0f);
    b.AddTensor("x", 0, {4}, 0.0f);
    EXPECT_NE(Parse(b.Build()).find("tensor 'x' appears twice"), std::string::npos);
  }
  {
    BinBuilder b;
    b.AddRaw({4, 1, 0});  // n_dims 4
    EXPECT_NE(Parse(b.Build()).find("n_dims 4 is outside [1, 3]"), std::string::npos);
  }
  {
    BinBuilder b;
    b.AddRaw({1, 1, 0, 0});  // a zero dim
    EXPECT_NE(Parse(b.Build()).find("dim 0 = 0 is outside"), std::string::npos);
  }
  {
    BinBuilder b;
    b.AddRaw({1, 100000, 0});  // name length
    EXPECT_NE(Parse(b.Build()).find("name length 100000 is outside [1, 256]"), std::string::npos);
  }
  {
    BinBuilder b;
    b.vocab_len_override = 5000;
    EXPECT_NE(Parse(b.Build()).find("token 0 length 5000 is outside [0, 1024]"), std::string::npos);
  }
}

TEST(WhisperModel, MissingTensorIsNamed) {
  BinBuilder b;
  const std::vector<uint8_t> bytes = b.Build();
  std::unique_ptr<WhisperFile> f;
  ASSERT_TRUE(WhisperFile::FromMemory(bytes.data(), bytes.size(), &f).ok());
  std::unique_ptr<WhisperModel> m;
  Status s = WhisperModel::FromFile(*f, &m);
  EXPECT_EQ(s.code(), Code::kFormat);
  EXPECT_NE(s.message().find("tensor 'encoder.conv1.weight' is missing"), std::string::npos) << s.message();
  EXPECT_EQ(m, nullptr);
}

TEST(WhisperFile, OpenMissingFileIsIoError) {
  std::unique_ptr<WhisperFile> f;
  Status s = WhisperFile::Open("/nonexistent/ggml-tiny.bin", &f);
  EXPECT_EQ(s.code(), Code::kIo);
  EXPECT_NE(s.message().find("/nonexistent/ggml-tiny.bin"), std::string::npos);
}

}  // namespace
}  // namespace zf::speech

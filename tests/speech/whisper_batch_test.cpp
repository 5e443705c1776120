// The batched decoder step (WhisperRunner::DecodeBatch: a prompt's tokens as one pass, beams and
// samples of a window side by side) gives every row bit for bit the logits Decode gives it alone,
// so batching never moves a transcript; the exact F16 kernel behind it equals quant's F16 dot
// product for any number of tokens; concurrent transcriptions joined by a DecodeBatcher give
// their single results.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "quant/f16_gemm.h"
#include "quant/kernels.h"
#include "quant/quant.h"
#include "speech/decode_batcher.h"
#include "speech/mel.h"
#include "speech/transcribe.h"
#include "speech/wav.h"
#include "speech/whisper_model.h"
#include "speech/whisper_vocab.h"
#include "whisper_test_util.h"

namespace zf::speech {
namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

#if defined(__x86_64__) || defined(_M_X64)
TEST(WhisperBatch, DotRowsF16IsVecDotF16ForAnyTokenCount) {
  if (!quant::f16::Available()) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t k = 96, rows = 5;
  std::vector<uint16_t> w(size_t(rows * k));
  for (auto& x : w) x = quant::Fp32ToFp16(nd(rng));
  for (int64_t n_tok = 1; n_tok <= 7; ++n_tok) {
    std::vector<float> a(size_t(n_tok * k));
    std::vector<uint16_t> a16(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      a16[i] = quant::Fp32ToFp16(nd(rng) * 3.0f);
      a[i] = quant::Fp16ToFp32(a16[i]);
    }
    std::vector<float> y(size_t(n_tok * rows)), want(y.size());
    quant::f16::avx2::DotRowsF16(k, w.data(), k, rows, a.data(), k, n_tok, y.data(), rows);
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t r = 0; r < rows; ++r)
        want[size_t(t * rows + r)] = quant::avx2::VecDotF16(k, w.data() + r * k, a16.data() + t * k);
    EXPECT_TRUE(SameBits(y, want)) << n_tok << " tokens";
  }
}
#endif

// tiny.en and jfk.wav's PCM; m stays null when the model is not fetched.
void LoadTinyEnAndJfk(std::unique_ptr<WhisperModel>* m, std::vector<float>* pcm) {
  const std::string path = testing::ModelPath("ZF_MODEL_WHISPER_TINY_EN", "ggml-tiny.en.bin");
  if (path.empty()) return;
  ASSERT_TRUE(WhisperModel::Load(path, m).ok());
  const std::string wav = testing::ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/jfk.wav");
  ASSERT_TRUE(DecodeWav(reinterpret_cast<const uint8_t*>(wav.data()), wav.size(), pcm).ok());
}

TEST(WhisperBatch, BatchedRowsAreDecodeBitForBit) {
  std::unique_ptr<WhisperModel> m;
  std::vector<float> pcm;
  LoadTinyEnAndJfk(&m, &pcm);
  if (!m) GTEST_SKIP() << "tiny.en not fetched (scripts/fetch_models.sh whisper-tiny-en)";
  const WhisperHparams& hp = m->hparams();
  const Mel mel = LogMel(pcm.data(), int64_t(pcm.size()), m->mel_filters(), hp.n_mels, 2);
  WhisperRunner runner(*m, 2);
  runner.Encode(mel.data.data(), mel.n_len, mel.n_len, 0);
  const WhisperVocab v = WhisperVocab::Make(hp.n_vocab, m->vocab());
  const size_t nv = size_t(hp.n_vocab);

  // Alone: token by token, the logits of every position.
  const std::vector<int32_t> prompt = {v.sot, 843, 1560, 2017, 286, 616};  // <|sot|> and some text
  std::vector<std::vector<float>> alone(prompt.size(), std::vector<float>(nv));
  DecoderCache a;
  runner.SwapCache(a);
  for (size_t i = 0; i < prompt.size(); ++i) ASSERT_TRUE(runner.Decode(prompt[i], alone[i].data()).ok());
  runner.SwapCache(a);

  // The prompt as one pass, logits of every row.
  DecoderCache b;
  std::vector<std::vector<float>> batched(prompt.size(), std::vector<float>(nv));
  std::vector<WhisperRunner::Row> rows;
  for (size_t i = 0; i < prompt.size(); ++i) rows.push_back({prompt[i], &b, batched[i].data()});
  ASSERT_TRUE(runner.DecodeBatch(rows.data(), int32_t(rows.size())).ok());
  EXPECT_EQ(b.n_past, int32_t(prompt.size()));
  for (size_t i = 0; i < prompt.size(); ++i) EXPECT_TRUE(SameBits(alone[i], batched[i])) << "prompt row " << i;

  // Three sequences at different positions in one pass (one of them two rows): each as alone.
  DecoderCache c1, c2, c3;
  runner.CopyCache(a, &c1);
  runner.CopyCache(a, &c2);
  c2.n_past = 3;  // a shorter history
  std::vector<float> l1(nv), l2a(nv), l2b(nv), l3(nv);
  rows = {{440, &c1, l1.data()}, {318, &c2, l2a.data()}, {3290, &c2, l2b.data()}, {v.sot, &c3, l3.data()}};
  ASSERT_TRUE(runner.DecodeBatch(rows.data(), int32_t(rows.size())).ok());
  EXPECT_EQ(c1.n_past, 7);
  EXPECT_EQ(c2.n_past, 5);
  EXPECT_EQ(c3.n_past, 1);
  std::vector<float> want(nv), want2(nv);
  DecoderCache s1;
  runner.CopyCache(a, &s1);
  runner.SwapCache(s1);
  ASSERT_TRUE(runner.Decode(440, want.data()).ok());
  runner.SwapCache(s1);
  EXPECT_TRUE(SameBits(l1, want)) << "sequence 1";
  DecoderCache s2;
  runner.CopyCache(a, &s2);
  s2.n_past = 3;
  runner.SwapCache(s2);
  ASSERT_TRUE(runner.Decode(318, want.data()).ok());
  ASSERT_TRUE(runner.Decode(3290, want2.data()).ok());
  runner.SwapCache(s2);
  EXPECT_TRUE(SameBits(l2a, want)) << "sequence 2, first row";
  EXPECT_TRUE(SameBits(l2b, want2)) << "sequence 2, second row";
  EXPECT_TRUE(SameBits(l3, alone[0])) << "sequence 3 (fresh)";

  // Rows of one sequence apart, a bad token and an empty batch are refused, naming the problem.
  rows = {{440, &c1, nullptr}, {440, &c2, nullptr}, {440, &c1, nullptr}};
  Status st = runner.DecodeBatch(rows.data(), 3);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not consecutive"), std::string::npos) << st.message();
  rows = {{hp.n_vocab, &c1, nullptr}};
  st = runner.DecodeBatch(rows.data(), 1);
  EXPECT_NE(st.message().find("outside [0, n_vocab)"), std::string::npos) << st.message();
  EXPECT_FALSE(runner.DecodeBatch(rows.data(), 0).ok());
}

// Segments identical: times, text, token ids and the bits of their probabilities.
void ExpectSameSegments(const TranscribeResult& a, const TranscribeResult& b, const char* what) {
  ASSERT_EQ(a.segments.size(), b.segments.size()) << what;
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const Segment &x = a.segments[i], &y = b.segments[i];
    EXPECT_EQ(x.t0, y.t0) << what << " segment " << i;
    EXPECT_EQ(x.t1, y.t1) << what << " segment " << i;
    EXPECT_EQ(x.text, y.text) << what << " segment " << i;
    ASSERT_EQ(x.tokens.size(), y.tokens.size()) << what << " segment " << i;
    for (size_t j = 0; j < x.tokens.size(); ++j) {
      EXPECT_EQ(x.tokens[j].id, y.tokens[j].id) << what << " segment " << i << " token " << j;
      EXPECT_EQ(std::memcmp(&x.tokens[j].plog, &y.tokens[j].plog, sizeof(float)), 0) << what << " segment " << i << " token " << j;
    }
  }
}

// Three transcriptions at once on one model (greedy on the sample three times over: windows with
// prompts; beam 5; greedy on the sample), their decoder steps joined by one DecodeBatcher: each
// gives exactly what it gives alone.
TEST(WhisperBatch, ConcurrentTranscriptionsAreTheirSingleResults) {
  std::unique_ptr<WhisperModel> m;
  std::vector<float> pcm;
  LoadTinyEnAndJfk(&m, &pcm);
  if (!m) GTEST_SKIP() << "tiny.en not fetched (scripts/fetch_models.sh whisper-tiny-en)";
  std::vector<float> three;
  for (int i = 0; i < 3; ++i) three.insert(three.end(), pcm.begin(), pcm.end());
  TranscribeParams greedy, beam;
  beam.beam_size = 5;
  struct Job {
    const std::vector<float>* audio;
    TranscribeParams p;
    TranscribeResult alone, joined;
    Status st;
  };
  std::vector<Job> jobs = {{&three, greedy, {}, {}, {}}, {&pcm, beam, {}, {}, {}}, {&pcm, greedy, {}, {}, {}}};
  for (Job& j : jobs) {
    WhisperRunner r(*m, 1);
    ASSERT_TRUE(Transcribe(r, *m, j.audio->data(), int64_t(j.audio->size()), j.p, 1, &j.alone).ok());
  }
  DecodeBatcher batcher;
  std::vector<std::thread> threads;
  for (Job& j : jobs)
    threads.emplace_back([&m, &j, &batcher] {
      WhisperRunner r(*m, 1);
      j.st = Transcribe(r, *m, j.audio->data(), int64_t(j.audio->size()), j.p, 1, &j.joined, {}, &batcher);
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(jobs[i].st.ok()) << jobs[i].st.message();
    ExpectSameSegments(jobs[i].alone, jobs[i].joined, i == 0 ? "greedy x3" : i == 1 ? "beam 5" : "greedy");
  }
  // Whether steps were joined depends on timing (the three encoders run side by side first).
  std::printf("  %lld decoder steps handed in, %lld passes\n", (long long)batcher.jobs(), (long long)batcher.passes());
  EXPECT_LE(batcher.passes(), batcher.jobs());
}

}  // namespace
}  // namespace zf::speech

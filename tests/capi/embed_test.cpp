// zf_embed / zf_embed_tokens: argument checks and error codes, determinism, normalization,
// Matryoshka truncation, batch == one at a time, generation refused on an encoder, and the
// vectors of llama.cpp's llama-embedding on the same files (tests/data/golden/embeddings).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

std::string LastError() { return zf_last_error(); }

std::string EmbedModel(const std::string& name) { return std::string(ZF_EMBED_MODELS_DIR) + "/" + name + ".gguf"; }

const std::vector<std::string> kTexts = {"Hello, world!", "The quick brown fox jumps over the lazy dog.",
                                         "Embeddings map text to vectors.", "a",
                                         "Ünïcödé and CJK 漢字 survive WordPiece."};

zf_embed_params Params(int32_t pooling = ZF_POOLING_DEFAULT, uint32_t flags = 0, int32_t dims = 0) {
  zf_embed_params p;
  zf_embed_params_init(&p, sizeof p);
  p.pooling = pooling;
  p.flags = flags;
  p.dimensions = dims;
  return p;
}

// Embeds texts; a failure is a test failure and an empty result.
std::vector<float> Embed(zf_model* m, const std::vector<std::string>& texts, const zf_embed_params& p, size_t* dim) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& t : texts) {
    ptrs.push_back(t.data());
    lens.push_back(t.size());
  }
  EXPECT_EQ(zf_embed_dimension(m, &p, dim), ZF_OK) << LastError();
  std::vector<float> out(texts.size() * *dim);
  size_t needed = 0;
  zf_status s = zf_embed(m, &p, ptrs.data(), lens.data(), texts.size(), out.data(), out.size(), &needed);
  EXPECT_EQ(s, ZF_OK) << LastError();
  EXPECT_EQ(needed, out.size());
  return s == ZF_OK ? out : std::vector<float>();
}

double Cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

double Norm(const float* a, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(a[i]) * a[i];
  return std::sqrt(s);
}

class BertEmbed : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = Load(EmbedModel("bert-f32"));
    ASSERT_NE(model_, nullptr);
  }
  ModelPtr model_;
};

TEST_F(BertEmbed, ArgumentErrors) {
  zf_model* m = model_.get();
  const char* text = "hi";
  size_t len = 2, needed = 7, dim = 0;
  float out[1024];
  zf_embed_params p = Params();
  EXPECT_EQ(zf_embed(nullptr, &p, &text, &len, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(needed, 0u);
  EXPECT_EQ(zf_embed(m, &p, nullptr, &len, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("texts"), std::string::npos);
  EXPECT_EQ(zf_embed(m, &p, &text, nullptr, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_embed_dimension(m, &p, nullptr), ZF_ERR_INVALID_ARGUMENT);
  zf_embed_params bad = Params(ZF_POOLING_DEFAULT, 0x80);
  EXPECT_EQ(zf_embed(m, &bad, &text, &len, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("flags"), std::string::npos) << LastError();
  bad = Params();
  bad.reserved = 1;
  EXPECT_EQ(zf_embed(m, &bad, &text, &len, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("reserved"), std::string::npos) << LastError();
  bad = Params(17);
  EXPECT_EQ(zf_embed_dimension(m, &bad, &dim), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("pooling"), std::string::npos) << LastError();
  bad = Params(ZF_POOLING_DEFAULT, 0, 129);  // the model's hidden size is 128
  EXPECT_EQ(zf_embed_dimension(m, &bad, &dim), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("dimensions"), std::string::npos) << LastError();
  zf_embed_params small;
  small.struct_size = 2;
  EXPECT_EQ(zf_embed_dimension(m, &small, &dim), ZF_ERR_INVALID_ARGUMENT);
  // Invalid UTF-8 names the text.
  const char* texts[2] = {"ok", "a\xC3("};
  size_t lens[2] = {2, 3};
  EXPECT_EQ(zf_embed(m, &p, texts, lens, 2, out, 1024, &needed), ZF_ERR_INVALID_UTF8);
  EXPECT_NE(LastError().find("texts[1]"), std::string::npos) << LastError();
  // Token inputs: empty, out of the vocabulary, longer than the model's 512 positions.
  const int32_t ids[2] = {101, 99999};
  const int32_t* tp = ids;
  size_t n0 = 0, n2 = 2;
  EXPECT_EQ(zf_embed_tokens(m, &p, &tp, &n0, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("no tokens"), std::string::npos) << LastError();
  EXPECT_EQ(zf_embed_tokens(m, &p, &tp, &n2, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("99999"), std::string::npos) << LastError();
  std::vector<int32_t> longer(513, 1000);
  const int32_t* lp = longer.data();
  size_t nl = longer.size();
  EXPECT_EQ(zf_embed_tokens(m, &p, &lp, &nl, 1, out, 1024, &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("513"), std::string::npos) << LastError();
  // No inputs: nothing to do.
  EXPECT_EQ(zf_embed(m, &p, nullptr, nullptr, 0, nullptr, 0, &needed), ZF_OK);
  EXPECT_EQ(needed, 0u);
}

TEST_F(BertEmbed, UnsupportedPoolings) {
  size_t dim = 0;
  zf_embed_params p = Params(ZF_POOLING_NONE);
  EXPECT_EQ(zf_embed_dimension(model_.get(), &p, &dim), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(LastError().find("none"), std::string::npos) << LastError();
  p = Params(ZF_POOLING_RANK);
  const char* text = "hi";
  size_t len = 2, needed = 0;
  float out[8];
  EXPECT_EQ(zf_embed(model_.get(), &p, &text, &len, 1, out, 8, &needed), ZF_ERR_UNSUPPORTED);
  EXPECT_NE(LastError().find("classification head"), std::string::npos) << LastError();
}

TEST_F(BertEmbed, BufferTooSmallGivesNeeded) {
  const char* texts[2] = {"one", "two"};
  size_t lens[2] = {3, 3}, needed = 0, dim = 0;
  zf_embed_params p = Params();
  ASSERT_EQ(zf_embed_dimension(model_.get(), &p, &dim), ZF_OK);
  EXPECT_EQ(dim, 128u);
  std::vector<float> out(2 * dim - 1);
  EXPECT_EQ(zf_embed(model_.get(), &p, texts, lens, 2, out.data(), out.size(), &needed), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, 2 * dim);
  EXPECT_EQ(zf_embed(model_.get(), &p, texts, lens, 2, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, 2 * dim);
  out.resize(needed);
  EXPECT_EQ(zf_embed(model_.get(), &p, texts, lens, 2, out.data(), out.size(), nullptr), ZF_OK) << LastError();
}

TEST_F(BertEmbed, GenerationIsRefused) {
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  zf_session* s = nullptr;
  EXPECT_EQ(zf_session_create(model_.get(), &sp, &s), ZF_ERR_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(LastError().find("embedding model"), std::string::npos) << LastError();
}

TEST_F(BertEmbed, DeterministicAndNormalized) {
  size_t dim = 0;
  std::vector<float> a = Embed(model_.get(), kTexts, Params(), &dim);
  std::vector<float> b = Embed(model_.get(), kTexts, Params(), &dim);
  ASSERT_EQ(a.size(), kTexts.size() * dim);
  EXPECT_EQ(a, b) << "the same call twice must give the same bits";
  for (size_t i = 0; i < kTexts.size(); ++i) EXPECT_NEAR(Norm(&a[i * dim], dim), 1.0, 1e-5);
  std::vector<float> raw = Embed(model_.get(), kTexts, Params(ZF_POOLING_DEFAULT, ZF_EMBED_NO_NORMALIZE), &dim);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const double n = Norm(&raw[i * dim], dim);
    EXPECT_GT(std::fabs(n - 1.0), 1e-3) << "a LayerNorm output is not unit length by chance";
    for (size_t j = 0; j < dim; ++j) EXPECT_NEAR(raw[i * dim + j] / n, a[i * dim + j], 1e-6);
  }
}

TEST_F(BertEmbed, MatryoshkaTruncatesThenNormalizes) {
  size_t dim = 0, dim64 = 0;
  std::vector<float> raw = Embed(model_.get(), kTexts, Params(ZF_POOLING_DEFAULT, ZF_EMBED_NO_NORMALIZE), &dim);
  std::vector<float> cut = Embed(model_.get(), kTexts, Params(ZF_POOLING_DEFAULT, 0, 64), &dim64);
  ASSERT_EQ(dim64, 64u);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const double n = Norm(&raw[i * dim], 64);
    for (size_t j = 0; j < 64; ++j) EXPECT_NEAR(raw[i * dim + j] / n, cut[i * 64 + j], 1e-6);
  }
}

// Batched passes (every text's rows in one step) against one text per call: bit for bit (each
// row of the prefill products is reduced independently of the others, and short steps are
// padded so that they take the same kernels; runtime/embedder.cpp).
void ExpectBatchEqualsOneAtATime(zf_model* m) {
  for (int32_t pooling : {ZF_POOLING_CLS, ZF_POOLING_MEAN, ZF_POOLING_LAST}) {
    size_t dim = 0;
    std::vector<float> all = Embed(m, kTexts, Params(pooling), &dim);
    ASSERT_EQ(all.size(), kTexts.size() * dim);
    for (size_t i = 0; i < kTexts.size(); ++i) {
      std::vector<float> one = Embed(m, {kTexts[i]}, Params(pooling), &dim);
      EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + long(i * dim)))
          << "pooling " << pooling << " text " << i;
    }
  }
}

TEST_F(BertEmbed, BatchEqualsOneAtATime) { ExpectBatchEqualsOneAtATime(model_.get()); }

TEST(GenerativeEmbed, SmolLM2BatchEqualsOneAtATime) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_NE(m, nullptr);
  ExpectBatchEqualsOneAtATime(m.get());
}

// Decoder embedders and EmbeddingGemma (its Dense projections run on the padded pooled rows).
TEST(DecoderEmbed, BatchEqualsOneAtATime) {
  for (const char* name : {"qwen3-embed-f32", "gemma-embed-f32"}) {
    SCOPED_TRACE(name);
    ModelPtr m = Load(EmbedModel(name));
    ASSERT_NE(m, nullptr);
    ExpectBatchEqualsOneAtATime(m.get());
  }
}

// The model's threads (the inputs of a step attending in parallel, a step's norms, biases and
// GELU split across the threads) against one thread, and against each text alone: the same
// bits. Steps of up to 512 rows, so that the row-wise ops are large enough to be split, the
// texts shorter and shorter, so that later steps reuse the longer caches of earlier ones.
TEST_F(BertEmbed, ThreadsDoNotChangeVectors) {
  std::vector<std::string> texts;
  for (int i = 0; i < 12; ++i) {
    std::string t;
    for (int w = 0; w < 110 - 7 * i; ++w) t += kTexts[size_t(w + i) % kTexts.size()].substr(0, 8) + " ";
    texts.push_back(t);
  }
  size_t dim = 0;
  std::vector<float> many = Embed(model_.get(), texts, Params(), &dim);
  zf_embed_params one = Params();
  one.n_threads = 1;
  std::vector<float> single = Embed(model_.get(), texts, one, &dim);
  ASSERT_EQ(many.size(), texts.size() * dim);
  EXPECT_EQ(many, single);
  for (size_t i : {size_t(5), texts.size() - 1}) {
    std::vector<float> alone = Embed(model_.get(), {texts[i]}, Params(), &dim);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), many.begin() + long(i * dim))) << "text " << i;
  }
}

TEST_F(BertEmbed, ConcurrentCallsAgree) {
  size_t dim = 0;
  std::vector<float> want = Embed(model_.get(), kTexts, Params(), &dim);
  std::vector<std::vector<float>> got(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      size_t d = 0;
      got[t] = Embed(model_.get(), kTexts, Params(), &d);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

// llama-quantize writes cls.output.weight [E, 1] as [E] (ggml drops trailing 1-dims); the loader
// compares shapes as ggml does, so that file scores exactly as the one written [E, 1].
TEST(Rerank, TrailingUnitDimsDroppedScoreTheSame) {
  ModelPtr a = Load(EmbedModel("bert-rank-f32"));
  ModelPtr b = Load(EmbedModel("bert-rank-dropped-f32"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::string query = "what is a panda?";
  const std::vector<std::string> docs = {"The giant panda is a bear native to China.", "Paris is in France.", "hi"};
  std::vector<const char*> dp;
  std::vector<size_t> dl;
  for (const std::string& d : docs) {
    dp.push_back(d.data());
    dl.push_back(d.size());
  }
  std::vector<float> sa(docs.size()), sb(docs.size());
  ASSERT_EQ(zf_rerank(a.get(), nullptr, query.data(), query.size(), dp.data(), dl.data(), docs.size(), sa.data()), ZF_OK)
      << LastError();
  ASSERT_EQ(zf_rerank(b.get(), nullptr, query.data(), query.size(), dp.data(), dl.data(), docs.size(), sb.data()), ZF_OK)
      << LastError();
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa[0], sa[1]);  // real scores, not a constant
}

TEST(Rerank, ScoresPairsAsLlamaServerFormatsThem) {
  ModelPtr m = Load(EmbedModel("bert-rank-f32"));
  ASSERT_NE(m, nullptr);
  const std::string query = "what is a panda?";
  const std::vector<std::string> docs = {"The giant panda is a bear native to China.", "Paris is the capital of France.",
                                         "hi"};
  std::vector<const char*> dp;
  std::vector<size_t> dl;
  for (const std::string& d : docs) {
    dp.push_back(d.data());
    dl.push_back(d.size());
  }
  std::vector<float> scores(docs.size());
  ASSERT_EQ(zf_rerank(m.get(), nullptr, query.data(), query.size(), dp.data(), dl.data(), docs.size(), scores.data()),
            ZF_OK)
      << LastError();
  // The same pairs as tokens: [CLS] query [SEP] document (bert-bge: no EOS, add_sep), rank pooling.
  zf_embed_params rank = Params(ZF_POOLING_RANK);
  size_t dim = 0;
  ASSERT_EQ(zf_embed_dimension(m.get(), &rank, &dim), ZF_OK) << LastError();
  EXPECT_EQ(dim, 1u);
  for (size_t i = 0; i < docs.size(); ++i) {
    std::vector<int32_t> q(64), d(64);
    size_t nq = 0, nd = 0;
    ASSERT_EQ(zf_tokenize(m.get(), query.data(), query.size(), 0, q.data(), q.size(), &nq), ZF_OK);
    ASSERT_EQ(zf_tokenize(m.get(), docs[i].data(), docs[i].size(), 0, d.data(), d.size(), &nd), ZF_OK);
    std::vector<int32_t> pair = {101};
    pair.insert(pair.end(), q.begin(), q.begin() + long(nq));
    pair.push_back(102);
    pair.insert(pair.end(), d.begin(), d.begin() + long(nd));
    const int32_t* pp = pair.data();
    size_t np = pair.size(), needed = 0;
    float one = 0;
    ASSERT_EQ(zf_embed_tokens(m.get(), &rank, &pp, &np, 1, &one, 1, &needed), ZF_OK) << LastError();
    EXPECT_NEAR(one, scores[i], 1e-5) << docs[i];
  }
  // Errors: a model without a head, another pooling, NULL scores.
  ModelPtr plain = Load(EmbedModel("bert-f32"));
  EXPECT_EQ(zf_rerank(plain.get(), nullptr, query.data(), query.size(), dp.data(), dl.data(), 1, scores.data()),
            ZF_ERR_UNSUPPORTED);
  zf_embed_params mean = Params(ZF_POOLING_MEAN);
  EXPECT_EQ(zf_rerank(m.get(), &mean, query.data(), query.size(), dp.data(), dl.data(), 1, scores.data()),
            ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_rerank(m.get(), nullptr, query.data(), query.size(), dp.data(), dl.data(), 1, nullptr),
            ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_rerank(m.get(), nullptr, query.data(), query.size(), nullptr, nullptr, 0, nullptr), ZF_OK);
}

// Qwen3-Reranker: the llama-server pair is the file's rerank template with the query and the
// document in it; the score is P(yes) of the softmax over the yes / no logits of the pair's
// last token (attention is causal), and zf_embed with rank pooling gives both probabilities.
TEST(Rerank, Qwen3RerankerTemplateAndProbabilities) {
  ModelPtr m = Load(EmbedModel("qwen3-rank-f32"));
  ASSERT_NE(m, nullptr);
  const std::string query = "what is a panda?", doc = "The giant panda is a bear native to China.";
  const char* dp = doc.data();
  const size_t dl = doc.size();
  float score = 0;
  ASSERT_EQ(zf_rerank(m.get(), nullptr, query.data(), query.size(), &dp, &dl, 1, &score), ZF_OK) << LastError();
  const std::string prompt =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a "
      "web search query, retrieve relevant passages that answer the query\n<Query>: " + query + "\n<Document>: " + doc +
      "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  std::vector<int32_t> ids(512);
  size_t n = 0;
  ASSERT_EQ(zf_tokenize(m.get(), prompt.data(), prompt.size(), ZF_TOKENIZE_PARSE_SPECIAL, ids.data(), ids.size(), &n),
            ZF_OK);
  ids.resize(n);
  zf_embed_params rank = Params(ZF_POOLING_RANK);
  size_t dim = 0;
  ASSERT_EQ(zf_embed_dimension(m.get(), &rank, &dim), ZF_OK) << LastError();
  ASSERT_EQ(dim, 2u);
  float yes_no[2] = {0, 0};
  const int32_t* pp = ids.data();
  size_t needed = 0;
  ASSERT_EQ(zf_embed_tokens(m.get(), &rank, &pp, &n, 1, yes_no, 2, &needed), ZF_OK) << LastError();
  EXPECT_EQ(yes_no[0], score);
  EXPECT_NEAR(yes_no[0] + yes_no[1], 1.0f, 1e-6f);
  EXPECT_GT(yes_no[1], 0.0f);
}

TEST(GenerativeEmbed, SmolLM2LastTokenByDefault) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_NE(m, nullptr);
  size_t dim = 0;
  std::vector<float> def = Embed(m.get(), {"Hello, world!"}, Params(), &dim);
  std::vector<float> last = Embed(m.get(), {"Hello, world!"}, Params(ZF_POOLING_LAST), &dim);
  EXPECT_EQ(dim, 576u);
  EXPECT_EQ(def, last) << "a model without pooling_type pools its last token";
  // The session API still generates on the same model.
  SessionPtr s = NewSession(m.get(), 64);
  EXPECT_NE(s, nullptr);
}

// Raw (unnormalized) pooled vector of one token array.
std::vector<float> RawTokens(zf_model* m, const std::vector<int32_t>& ids, int32_t pooling) {
  zf_embed_params p = Params(pooling, ZF_EMBED_NO_NORMALIZE);
  size_t dim = 0, needed = 0;
  EXPECT_EQ(zf_embed_dimension(m, &p, &dim), ZF_OK);
  std::vector<float> out(dim);
  const int32_t* ptr = ids.data();
  size_t n = ids.size();
  EXPECT_EQ(zf_embed_tokens(m, &p, &ptr, &n, 1, out.data(), out.size(), &needed), ZF_OK) << LastError();
  return out;
}

// The state of the last row recovered from two means: n * mean(all n rows) - (n - 1) * mean(first
// n - 1 rows). With causal attention the first n - 1 rows do not change when a token is appended,
// so this equals the last-token pooling; with bidirectional attention every row changes.
double CausalityGap(zf_model* m, const std::vector<int32_t>& ids) {
  const std::vector<int32_t> prefix(ids.begin(), ids.end() - 1);
  std::vector<float> mean_all = RawTokens(m, ids, ZF_POOLING_MEAN);
  std::vector<float> mean_prefix = RawTokens(m, prefix, ZF_POOLING_MEAN);
  std::vector<float> last = RawTokens(m, ids, ZF_POOLING_LAST);
  const double n = double(ids.size());
  double worst = 0, scale = 0;
  for (size_t j = 0; j < last.size(); ++j) {
    const double rec = n * mean_all[j] - (n - 1) * mean_prefix[j];
    worst = std::max(worst, std::fabs(rec - last[j]));
    scale = std::max(scale, double(std::fabs(last[j])));
  }
  return worst / scale;
}

TEST_F(BertEmbed, AttentionIsBidirectional) {
  EXPECT_GT(CausalityGap(model_.get(), {101, 7592, 1010, 2088, 999, 102}), 1e-2)
      << "appending a token must change the earlier states of an encoder";
}

// EmbeddingGemma's attention is bidirectional; Qwen3-Embedding's is causal.
TEST(DecoderEmbed, CausalityFromTheFile) {
  ModelPtr gemma = Load(EmbedModel("gemma-embed-f32"));
  ModelPtr qwen = Load(EmbedModel("qwen3-embed-f32"));
  ASSERT_NE(gemma, nullptr);
  ASSERT_NE(qwen, nullptr);
  EXPECT_GT(CausalityGap(gemma.get(), {2, 9259, 236764, 1902, 236888, 1}), 1e-2);
  EXPECT_LT(CausalityGap(qwen.get(), {9707, 11, 1879, 0, 151643}), 1e-3);
}

TEST(GenerativeEmbed, SmolLM2IsCausalAndPoolsTheNormedStates) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_NE(m, nullptr);
  std::vector<int32_t> ids(64);
  size_t n = 0;
  const std::string text = "The quick brown fox jumps over the lazy dog.";
  ASSERT_EQ(zf_tokenize(m.get(), text.data(), text.size(), ZF_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n), ZF_OK);
  ids.resize(n);
  EXPECT_LT(CausalityGap(m.get(), ids), 1e-3) << "mean and last pooling must read the same per-row states";
}

// Reference vectors {"file", "pooling", "texts", "embeddings"} (tests/data/golden/embeddings):
// from llama.cpp's llama-embedding (scripts/reference/record_embedding_goldens.py) or, where
// "reference" says numpy, from a float64 numpy pass of llama.cpp's bert graph
// (scripts/reference/bert_numpy.py). Cosine per vector against the threshold (F32 0.9999, Q8_0
// 0.999, 4-bit 0.99); rank scores within 1e-3 relative of llama.cpp's, 5e-3 of numpy's (K and V
// are rounded to F16 as llama.cpp's flash attention does, numpy keeps them exact).
struct Golden {
  const char* json;
  const char* model;  // bert files under ZF_EMBED_MODELS_DIR, or "smollm2"
  int32_t pooling;
  double min_cosine;
  bool via_rerank = false;  // rank goldens of a file with a rerank template: zf_rerank on "query<TAB>doc"
};

class EmbedGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(EmbedGolden, MatchesLlamaCpp) {
  const Golden& g = GetParam();
  const bool rank = g.pooling == ZF_POOLING_RANK || std::string(g.json).find("-rank") != std::string::npos;
  const std::string path = std::string(ZF_TEST_DATA_DIR) + "/golden/embeddings/" + g.json + ".json";
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  nlohmann::json j = nlohmann::json::parse(f);
  std::string model_path;
  if (std::string(g.model) == "smollm2") {
    model_path = zf::testing::ModelPath("smollm2");
    if (model_path.empty()) GTEST_SKIP() << "model 'smollm2' not found: run scripts/fetch_models.sh";
  } else {
    model_path = EmbedModel(g.model);
  }
  ModelPtr m = Load(model_path);
  ASSERT_NE(m, nullptr);
  std::vector<std::string> texts = j["texts"].get<std::vector<std::string>>();
  std::vector<std::vector<float>> want = j["embeddings"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(texts.size(), want.size());
  if (j.contains("tokens")) {  // the reference's token ids (rank: "query<TAB>doc" as query[SEP]doc)
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string t = texts[i];
      const size_t tab = t.find('\t');
      if (tab != std::string::npos) t = t.substr(0, tab) + "[SEP]" + t.substr(tab + 1);
      std::vector<int32_t> ids(4096);
      size_t n = 0;
      ASSERT_EQ(zf_tokenize(m.get(), t.data(), t.size(), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL, ids.data(),
                            ids.size(), &n),
                ZF_OK);
      ids.resize(n);
      EXPECT_EQ(ids, j["tokens"][i].get<std::vector<int32_t>>()) << texts[i];
    }
  }
  size_t dim = 0;
  std::vector<float> got;
  if (g.via_rerank) {
    // llama-embedding fills the file's rerank template as llama-server does; zf_rerank gives
    // the first label's score.
    dim = 1;
    for (const std::string& t : texts) {
      const size_t tab = t.find('\t');
      const std::string q = t.substr(0, tab), d = t.substr(tab + 1);
      const char* dp = d.data();
      const size_t dl = d.size();
      float score = 0;
      EXPECT_EQ(zf_rerank(m.get(), nullptr, q.data(), q.size(), &dp, &dl, 1, &score), ZF_OK) << LastError();
      got.push_back(score);
    }
    for (auto& w : want) w.resize(1);
  } else if (rank) {
    // llama-embedding's rank input "query<TAB>doc" is [CLS] query [SEP] doc [SEP]: the same
    // tokens through zf_embed (the tab becomes the [SEP] text, parsed as special).
    std::vector<std::string> joined;
    for (const std::string& t : texts) {
      const size_t tab = t.find('\t');
      joined.push_back(t.substr(0, tab) + "[SEP]" + t.substr(tab + 1));
    }
    got = Embed(m.get(), joined, Params(g.pooling), &dim);
  } else {
    got = Embed(m.get(), texts, Params(g.pooling), &dim);
  }
  ASSERT_EQ(got.size(), texts.size() * dim);
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(want[i].size(), dim);
    if (rank) {
      // numpy keeps K and V exact; llama.cpp rounds them to F16 as zerfoo does. Relative to the
      // score itself (these are all 0.38 or more in magnitude).
      const double rel = std::string(g.json).rfind("numpy-", 0) == 0 ? 5e-3 : 1e-3;
      EXPECT_NEAR(got[i], want[i][0], rel * std::fabs(want[i][0])) << texts[i];
      std::printf("%s pair %zu: score %.6f reference %.6f\n", g.json, i, got[i], want[i][0]);
      continue;
    }
    const double c = Cosine(&got[i * dim], want[i].data(), dim);
    EXPECT_GE(c, g.min_cosine) << g.json << " text " << i << ": '" << texts[i] << "'";
    std::printf("%s text %zu: cosine %.7f\n", g.json, i, c);
  }
  if (rank) {  // the pairs ranked in llama.cpp's order, whatever the score gaps
    auto order = [&](auto score) {
      std::vector<size_t> o(texts.size());
      std::iota(o.begin(), o.end(), size_t{0});
      std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return score(a) > score(b); });
      return o;
    };
    EXPECT_EQ(order([&](size_t i) { return got[i]; }), order([&](size_t i) { return want[i][0]; }));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Reference, EmbedGolden,
    ::testing::Values(Golden{"numpy-bert-f32-cls", "bert-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"numpy-bert-f32-mean", "bert-f32", ZF_POOLING_MEAN, 0.9999},
                      Golden{"numpy-bert-rank-f32-rank", "bert-rank-f32", ZF_POOLING_DEFAULT, 0.0},
                      Golden{"bert-f32-cls", "bert-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"bert-f32-mean", "bert-f32", ZF_POOLING_MEAN, 0.9999},
                      Golden{"bert-q8_0-cls", "bert-q8_0", ZF_POOLING_DEFAULT, 0.999},
                      Golden{"bert-q4_0-cls", "bert-q4_0", ZF_POOLING_DEFAULT, 0.99},
                      Golden{"bert-rank-f32-rank", "bert-rank-f32", ZF_POOLING_DEFAULT, 0.0},
                      Golden{"nomic-bert-f32-mean", "nomic-bert-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"nomic-bert-q8_0-mean", "nomic-bert-q8_0", ZF_POOLING_DEFAULT, 0.999},
                      Golden{"nomic-bert-q4_0-mean", "nomic-bert-q4_0", ZF_POOLING_DEFAULT, 0.99},
                      Golden{"modern-bert-f32-mean", "modern-bert-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"modern-bert-q8_0-mean", "modern-bert-q8_0", ZF_POOLING_DEFAULT, 0.999},
                      Golden{"modern-bert-q4_0-mean", "modern-bert-q4_0", ZF_POOLING_DEFAULT, 0.99},
                      Golden{"qwen3-embed-f32-last", "qwen3-embed-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"qwen3-embed-f32-mean", "qwen3-embed-f32", ZF_POOLING_MEAN, 0.9999},
                      Golden{"qwen3-embed-q8_0-last", "qwen3-embed-q8_0", ZF_POOLING_DEFAULT, 0.999},
                      Golden{"qwen3-embed-q4_0-last", "qwen3-embed-q4_0", ZF_POOLING_DEFAULT, 0.99},
                      Golden{"qwen3-rank-f32-rank", "qwen3-rank-f32", ZF_POOLING_DEFAULT, 0.0, true},
                      Golden{"gemma-embed-f32-mean", "gemma-embed-f32", ZF_POOLING_DEFAULT, 0.9999},
                      Golden{"gemma-embed-q8_0-mean", "gemma-embed-q8_0", ZF_POOLING_DEFAULT, 0.999},
                      Golden{"gemma-embed-q4_0-mean", "gemma-embed-q4_0", ZF_POOLING_DEFAULT, 0.99},
                      Golden{"smollm2-last", "smollm2", ZF_POOLING_LAST, 0.999},
                      Golden{"smollm2-mean", "smollm2", ZF_POOLING_MEAN, 0.999}),
    [](const ::testing::TestParamInfo<Golden>& i) {
      std::string n = i.param.json;
      for (char& c : n) if (c == '-') c = '_';
      return n;
    });

}  // namespace

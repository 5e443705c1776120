// Constrained decoding below the C API: the choice list's regex, the mask the sampler applies,
// and llguidance's token mask for a tiny regex checked token by token against SmolLM2's
// vocabulary (a token is allowed exactly when its bytes keep the text a prefix of a match).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/constraint.h"
#include "runtime/sampler.h"

namespace {

using zf::rt::Constraint;
using zf::rt::ConstraintKind;

TEST(ConstraintChoice, RegexEscapesEveryMetacharacter) {
  std::string rx;
  ASSERT_TRUE(zf::rt::ChoiceRegex(R"(["a.b", "(x|y)*", "é"])", &rx).ok());
  EXPECT_EQ(rx, R"((?:a\.b)|(?:\(x\|y\)\*)|(?:é))");
  // The same alternatives in ECMAScript syntax match exactly the choices.
  const std::regex re(rx, std::regex::ECMAScript);
  EXPECT_TRUE(std::regex_match("a.b", re));
  EXPECT_TRUE(std::regex_match("(x|y)*", re));
  EXPECT_FALSE(std::regex_match("axb", re));
  EXPECT_EQ(zf::rt::ChoiceRegex("[]", &rx).code(), zf::Code::kInvalidArgument);
  EXPECT_EQ(zf::rt::ChoiceRegex("[\"a\", 2]", &rx).code(), zf::Code::kInvalidArgument);
  EXPECT_EQ(zf::rt::ChoiceRegex("{\"a\": 1}", &rx).code(), zf::Code::kInvalidArgument);
  EXPECT_EQ(zf::rt::ChoiceRegex("[\"a\"", &rx).code(), zf::Code::kInvalidArgument);
}

TEST(SamplerMask, GreedyAndSampledPickOnlyAllowedTokens) {
  const int32_t n = 70;
  std::vector<float> logits(n);
  for (int32_t i = 0; i < n; ++i) logits[size_t(i)] = float(i);  // 69 is the argmax
  std::vector<uint32_t> mask((n + 31) / 32, 0u);
  mask[0] |= 1u << 3;
  mask[1] |= 1u << 8;  // 40
  zf::rt::SamplerParams p;
  p.temperature = 0.0f;
  zf::rt::Sampler greedy(p, n);
  EXPECT_EQ(greedy.Sample(logits.data(), nullptr, 0), 69);
  EXPECT_EQ(greedy.Sample(logits.data(), nullptr, 0, mask.data()), 40);
  p.temperature = 1.5f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 7;
  zf::rt::Sampler sampled(p, n);
  for (int i = 0; i < 200; ++i) {
    const int32_t t = sampled.Sample(logits.data(), nullptr, 0, mask.data());
    EXPECT_TRUE(t == 3 || t == 40) << t;
  }
  // Allowed tokens without a finite logit: still an allowed one.
  std::vector<float> neg(n, -INFINITY);
  EXPECT_EQ(sampled.Sample(neg.data(), nullptr, 0, mask.data()), 3);
  EXPECT_EQ(greedy.Sample(neg.data(), nullptr, 0, mask.data()), 3);
}

#if ZF_HAVE_CONSTRAINTS

// The model's vocabulary only (a constraint needs no weights).
std::unique_ptr<zf::model::Model> LoadVocabulary(const std::string& path) {
  std::unique_ptr<zf::model::Model> m;
  zf::model::LoadOptions o;
  o.vocab_only = true;
  EXPECT_TRUE(zf::model::Model::Load(path, o, &m).ok());
  return m;
}

TEST(ConstraintMask, TinyRegexAgainstSmolLM2Vocabulary) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const std::unique_ptr<zf::model::Model> m = LoadVocabulary(path);
  ASSERT_TRUE(m);
  const zf::rt::ConstraintVocab vocab(*m);
  const auto& tok = m->tokenizer();
  std::unique_ptr<Constraint> c;
  zf::Status s = Constraint::Create(vocab, ConstraintKind::kRegex, "ab|cd", &c);
  ASSERT_TRUE(s.ok()) << s.message();

  // Allowed = the token's bytes extend "" (then `done`) to a prefix of "ab" or "cd".
  const auto expect = [&](const std::string& done) {
    std::vector<int32_t> want;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      const std::string piece = tok.TokenToPiece(id, false);
      if (piece.empty()) continue;
      const std::string text = done + piece;
      if (std::string("ab").rfind(text, 0) == 0 || std::string("cd").rfind(text, 0) == 0) want.push_back(id);
    }
    return want;
  };
  const auto allowed = [&] {
    std::vector<int32_t> got;
    for (int32_t id = 0; id < m->desc().n_vocab; ++id) {
      if (c->Allowed(id)) got.push_back(id);
    }
    return got;
  };
  ASSERT_TRUE(c->ComputeMask().ok());
  const std::vector<int32_t> first = expect("");
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(allowed(), first);
  EXPECT_FALSE(c->Allowed(tok.eos()));

  const int32_t a = [&] {
    for (int32_t id : first) {
      if (tok.TokenToPiece(id, false) == "a") return id;
    }
    return -1;
  }();
  ASSERT_GE(a, 0);
  ASSERT_TRUE(c->Commit(a).ok());
  ASSERT_TRUE(c->ComputeMask().ok());
  EXPECT_EQ(allowed(), expect("a"));
  const int32_t b = expect("a").at(0);  // "b"
  EXPECT_EQ(tok.TokenToPiece(b, false), "b");
  ASSERT_TRUE(c->Commit(b).ok());
  // "ab" is complete: only an end token may follow (or the matcher has stopped already).
  if (!c->IsStopped()) {
    ASSERT_TRUE(c->ComputeMask().ok());
    for (int32_t id : allowed()) EXPECT_TRUE(tok.IsEndOfGeneration(id)) << id;
  }
  // A token outside the mask is refused.
  std::unique_ptr<Constraint> c2;
  ASSERT_TRUE(Constraint::Create(vocab, ConstraintKind::kRegex, "ab|cd", &c2).ok());
  ASSERT_TRUE(c2->ComputeMask().ok());
  EXPECT_EQ(c2->Commit(b).code(), zf::Code::kInternal);
  EXPECT_GT(c2->n_masks(), 0);
}

TEST(ConstraintMask, InvalidConstraintsNameTheProblem) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const std::unique_ptr<zf::model::Model> m = LoadVocabulary(path);
  ASSERT_TRUE(m);
  const zf::rt::ConstraintVocab vocab(*m);
  std::unique_ptr<Constraint> c;
  zf::Status s = Constraint::Create(vocab, ConstraintKind::kRegex, "([a-z", &c);
  EXPECT_EQ(s.code(), zf::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("invalid regular expression"), std::string::npos) << s.message();
  EXPECT_EQ(c, nullptr);
  s = Constraint::Create(vocab, ConstraintKind::kJsonSchema, R"({"type": 12})", &c);
  EXPECT_EQ(s.code(), zf::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("invalid JSON schema"), std::string::npos) << s.message();
  s = Constraint::Create(vocab, ConstraintKind::kLark, "start: foo", &c);
  EXPECT_EQ(s.code(), zf::Code::kInvalidArgument) << s.message();
}

// The vocabulary is built by the first Get and shared: every thread asking at once gets the same
// tables, whose bytes spell each token as the tokenizer does.
TEST(ConstraintVocab, BuiltOnceForConcurrentCallers) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const std::unique_ptr<zf::model::Model> m = LoadVocabulary(path);
  ASSERT_TRUE(m);
  const zf::rt::ConstraintVocab vocab(*m);
  std::vector<std::shared_ptr<const zf::rt::ConstraintVocab::Tables>> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&vocab, &g] { EXPECT_TRUE(vocab.Get(&g).ok()); });
  for (std::thread& t : threads) t.join();
  ASSERT_NE(got[0], nullptr);
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
  EXPECT_EQ(got[0]->n_vocab, m->tokenizer().n_vocab());
  std::vector<int32_t> ids;
  ASSERT_TRUE(m->tokenizer().Encode("hello", false, false, &ids).ok());
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(got[0]->Bytes(ids[0]), "hello");
}

#else

TEST(ConstraintMask, BuiltWithoutConstraintsIsUnsupported) {
  EXPECT_FALSE(zf::rt::ConstraintsAvailable());
}

#endif

}  // namespace

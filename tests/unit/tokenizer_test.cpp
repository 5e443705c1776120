// Tokenizer tests: the reference vocabularies' test vectors (exact ids), detokenize
// round-trips, special tokens, invalid UTF-8 and concurrent use.
#include "chat/template.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "gguf/gguf.h"
#include "unit/gguf_builder.h"

namespace zf::tok {
using chat::kChatMlTemplate;
using chat::kGemmaTemplate;
using chat::RenderChatTemplate;
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: strings separated by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
std::vector<Case> LoadCases(const std::string& base) {
  std::string inp = ReadFile(base + ".inp");
  std::string out = ReadFile(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<Case> cases;
  std::istringstream lines(out);
  std::string line;
  for (const std::string& t : texts) {
    if (!std::getline(lines, line)) break;
    Case c{t, {}};
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << base;
  return cases;
}

// The larger reference vocabularies (tens of MB) are not in tests/data: they are read from
// the extracted llama.cpp vocab folder ($ZERFOO_VOCAB_DIR, default
// ~/.cache/zerfoo/reference/vocab-0.3.36, see scripts/reference/README.md) when present.
bool IsExternalVocab(const std::string& name) { return name == "qwen35" || name == "gemma-4"; }

std::string ExternalVocabDir() {
  if (const char* d = std::getenv("ZERFOO_VOCAB_DIR"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/zerfoo/reference/vocab-0.3.36";
}

class VocabTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string name = GetParam();
    const std::string dir = IsExternalVocab(name) ? ExternalVocabDir() : std::string(ZF_TEST_DATA_DIR) + "/tokenizer";
    base_ = dir + "/ggml-vocab-" + name + ".gguf";
    if (IsExternalVocab(name) && !std::ifstream(base_).good()) {
      GTEST_SKIP() << base_ << " is absent (set ZERFOO_VOCAB_DIR to llama.cpp's vocab files)";
    }
    ASSERT_TRUE(gguf::GgufFile::Open(base_, {}, &file_).ok());
    Status s = Tokenizer::Create(*file_, &tok_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::string base_;
  std::unique_ptr<gguf::GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(VocabTest, MatchesReferenceIds) {
  std::vector<Case> cases = LoadCases(base_);
  ASSERT_GT(cases.size(), 10u);
  for (const Case& c : cases) {
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok_->Encode(c.text, false, false, &ids).ok());
    EXPECT_EQ(ids, c.ids) << "text: '" << c.text << "'";
  }
}

TEST_P(VocabTest, DetokenizeRoundTrips) {
  for (const Case& c : LoadCases(base_)) {
    std::string text;
    ASSERT_TRUE(tok_->Decode(c.ids.data(), c.ids.size(), false, false, &text).ok());
    std::string expected = c.text;
    // GPT-2 and Gemma 4 clean " ," etc., WordPiece lowercases (checked below)
    if (std::string(GetParam()) == "gpt-2" || std::string(GetParam()) == "gemma-4") continue;
    if (std::string(GetParam()) == "bert-bge") continue;
    EXPECT_EQ(text, expected);
  }
}

TEST_P(VocabTest, RejectsInvalidUtf8) {
  std::vector<int32_t> ids;
  Status s = tok_->Encode(std::string_view("ab\xC3(", 4), false, false, &ids);
  EXPECT_EQ(s.code(), Code::kInvalidUtf8);
  EXPECT_NE(s.message().find("offset 2"), std::string::npos) << s.message();
}

TEST_P(VocabTest, ConcurrentEncodeIsDeterministic) {
  std::vector<Case> cases = LoadCases(base_);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) {
        for (const Case& c : cases) {
          std::vector<int32_t> ids;
          if (!tok_->Encode(c.text, false, false, &ids).ok() || ids != c.ids) ++failures[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST_P(VocabTest, DecodeRejectsOutOfRangeIds) {
  int32_t bad[] = {1, tok_->n_vocab()};
  std::string text;
  EXPECT_EQ(tok_->Decode(bad, 2, false, false, &text).code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(ReferenceVocabs, VocabTest, ::testing::Values("llama-spm", "gpt-2", "bert-bge", "qwen35", "gemma-4"));

TEST(WpmVocab, FrameDecodeAndUnknown) {
  std::unique_ptr<gguf::GgufFile> f;
  ASSERT_TRUE(gguf::GgufFile::Open(std::string(ZF_TEST_DATA_DIR) + "/tokenizer/ggml-vocab-bert-bge.gguf", {}, &f).ok());
  std::unique_ptr<Tokenizer> tok;
  ASSERT_TRUE(Tokenizer::Create(*f, &tok).ok());
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->Encode("Hello, World!", true, false, &ids).ok());
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101) << "[CLS] first";
  EXPECT_EQ(ids.back(), 102) << "[SEP] last";
  EXPECT_EQ(tok->sep(), 102);
  std::string text;
  ASSERT_TRUE(tok->Decode(ids.data() + 1, ids.size() - 2, false, false, &text).ok());
  EXPECT_EQ(text, " hello, world!") << "lowercased; the reference keeps the word-start space";
  ASSERT_TRUE(tok->Encode("\xE2\x98\x83", false, false, &ids).ok());  // a snowman: not in the vocab
  EXPECT_EQ(ids, std::vector<int32_t>({100}));
  ASSERT_TRUE(tok->Encode("[SEP]", false, true, &ids).ok());
  EXPECT_EQ(ids, std::vector<int32_t>({102}));
}

// o200k_harmony (gpt-oss): <|end|> closes the analysis message, not the generation, where
// <|return|> and <|call|> end turns; the reference then makes it an ordinary user-defined token.
TEST(SpmVocab, HarmonyEndIsNotTheEndOfGeneration) {
  using namespace zf::gguf::testutil;  // NOLINT
  for (bool harmony : {true, false}) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "b", "<|end|>", "<|return|>"};
    if (harmony) tokens.push_back("<|call|>");
    GgufBuilder b;
    b.Kv("tokenizer.ggml.model", val::Str("llama"))
        .Kv("tokenizer.ggml.tokens", val::StrArr(tokens))
        .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, std::vector<float>(tokens.size(), 0.0f)))
        .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, harmony ? std::vector<int32_t>{2, 3, 3, 1, 1, 3, 3, 3}
                                                                             : std::vector<int32_t>{2, 3, 3, 1, 1, 3, 3}));
    const std::vector<uint8_t> bytes = b.Build();
    std::unique_ptr<gguf::GgufFile> f;
    ASSERT_TRUE(gguf::GgufFile::FromMemory(bytes.data(), bytes.size(), &f).ok());
    std::unique_ptr<Tokenizer> tok;
    ASSERT_TRUE(Tokenizer::Create(*f, &tok).ok());
    EXPECT_TRUE(tok->IsEndOfGeneration(6));  // <|return|>
    EXPECT_EQ(tok->IsEndOfGeneration(5), !harmony) << "harmony " << harmony;
    EXPECT_EQ(tok->IsControl(5), !harmony);
    EXPECT_EQ(tok->TokenToPiece(5, false), harmony ? "<|end|>" : "");
    if (harmony) EXPECT_TRUE(tok->IsEndOfGeneration(7));  // <|call|>
  }
}

TEST(SpmVocab, SpecialTokensAndBos) {
  std::unique_ptr<gguf::GgufFile> f;
  ASSERT_TRUE(gguf::GgufFile::Open(std::string(ZF_TEST_DATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf", {}, &f).ok());
  std::unique_ptr<Tokenizer> tok;
  ASSERT_TRUE(Tokenizer::Create(*f, &tok).ok());
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->Encode("<s>Hi", true, true, &ids).ok());
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], tok->bos());
  EXPECT_EQ(ids[1], tok->bos()) << "<s> text must become the BOS token with parse_special";
  std::vector<int32_t> plain;
  ASSERT_TRUE(tok->Encode("<s>Hi", false, false, &plain).ok());
  EXPECT_NE(plain[0], tok->bos()) << "without parse_special <s> is plain text";
  EXPECT_EQ(tok->TokenToPiece(tok->bos(), false), "");
  EXPECT_EQ(tok->TokenToPiece(tok->bos(), true), "<s>");
  EXPECT_TRUE(tok->IsEndOfGeneration(tok->eos()));
  std::string text;
  ASSERT_TRUE(tok->Decode(ids.data(), ids.size(), true, false, &text).ok());
  EXPECT_EQ(text, " Hi") << "the reference keeps the prefix space when it removes a BOS";
  std::vector<int32_t> no_bos(ids.begin() + 2, ids.end());
  ASSERT_TRUE(tok->Decode(no_bos.data(), no_bos.size(), false, false, &text).ok());
  EXPECT_EQ(text, "Hi");
}

jinja::Value Conversation(const std::vector<std::pair<std::string, std::string>>& msgs, bool add_generation_prompt) {
  jinja::Value list = jinja::Value::MakeList();
  for (auto& m : msgs) {
    jinja::Value d = jinja::Value::MakeDict();
    d.d().Set(jinja::Value::Str("role"), jinja::Value::Str(m.first));
    d.d().Set(jinja::Value::Str("content"), jinja::Value::Str(m.second));
    list.l().push_back(d);
  }
  jinja::Value vars = jinja::Value::MakeDict();
  vars.d().Set(jinja::Value::Str("messages"), list);
  vars.d().Set(jinja::Value::Str("add_generation_prompt"), jinja::Value::Bool(add_generation_prompt));
  return vars;
}

TEST(ChatTemplate, BuiltinGemmaMergesSystemIntoFirstUserTurn) {
  std::string out;
  ASSERT_TRUE(RenderChatTemplate(kGemmaTemplate, Conversation({{"system", " Be brief. "}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}}, true), -1, &out).ok());
  EXPECT_EQ(out, "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
                 "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, BuiltinChatMl) {
  std::string out;
  ASSERT_TRUE(RenderChatTemplate(kChatMlTemplate, Conversation({{"system", "S"}, {"user", "U"}}, true), -1, &out).ok());
  EXPECT_EQ(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
}

// The corpus renders the data files with jinja2; the library must embed the same text.
TEST(ChatTemplate, BuiltinTemplatesAreTheCorpusFiles) {
  auto read = [](const std::string& name) {
    std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates/" + name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("builtin-chatml.jinja"), kChatMlTemplate);
  EXPECT_EQ(read("builtin-gemma.jinja"), kGemmaTemplate);
}

TEST(ChatTemplate, TemplateErrorsAreKTemplateWithPosition) {
  std::string out;
  Status s = RenderChatTemplate("line one\n{{ raise_exception('no system role') }}", Conversation({}, true), -1, &out);
  EXPECT_EQ(s.code(), Code::kTemplate);
  EXPECT_EQ(s.message(), "chat template line 2, column 4: no system role");
  s = RenderChatTemplate("{% for %}", Conversation({}, true), -1, &out);
  EXPECT_EQ(s.code(), Code::kTemplate);
  EXPECT_EQ(s.message(), "chat template line 1, column 8: expected a name, got end of statement block");
}

}  // namespace
}  // namespace zf::tok

// Fill-in-the-middle token ids of a vocabulary: the GGUF keys (the older prefix/suffix/middle keys
// too), llama.cpp's text fallbacks where no key names one (made control tokens), and the
// pad/repository/separator tokens ending generation.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "unit/gguf_builder.h"

namespace zf::tok {
namespace {

using namespace zf::gguf::testutil;  // NOLINT

// An SPM vocabulary of `tokens` (all normal except <unk>, <s>, </s>) with `keys` (u32 values).
std::unique_ptr<Tokenizer> Vocab(const std::vector<std::string>& tokens,
                                 const std::vector<std::pair<std::string, uint32_t>>& keys,
                                 std::unique_ptr<gguf::GgufFile>* file) {
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  GgufBuilder b;
  b.Kv("tokenizer.ggml.model", val::Str("llama"))
      .Kv("tokenizer.ggml.tokens", val::StrArr(tokens))
      .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, std::vector<float>(tokens.size(), 0.0f)))
      .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, types));
  for (const auto& [k, v] : keys) b.Kv(k, val::U32(v));
  static std::vector<std::vector<uint8_t>> keep;  // FromMemory borrows the bytes
  keep.push_back(b.Build());
  EXPECT_TRUE(gguf::GgufFile::FromMemory(keep.back().data(), keep.back().size(), file).ok());
  std::unique_ptr<Tokenizer> tok;
  EXPECT_TRUE(Tokenizer::Create(**file, &tok).ok());
  return tok;
}

TEST(FimVocab, NoneWithoutKeysOrTexts) {
  std::unique_ptr<gguf::GgufFile> f;
  auto tok = Vocab({"<unk>", "<s>", "</s>", "a", "b"}, {}, &f);
  ASSERT_TRUE(tok);
  const FimTokens& fim = tok->fim();
  for (int32_t id : {fim.pre, fim.suf, fim.mid, fim.pad, fim.rep, fim.sep}) EXPECT_EQ(id, -1);
}

TEST(FimVocab, TextFallbacksAreControlTokens) {
  std::unique_ptr<gguf::GgufFile> f;
  // CodeLlama's SPM spellings, Qwen's pad/repo/separator; both <PRE> spellings: the lower id.
  auto tok = Vocab({"<unk>", "<s>", "</s>", "a", "▁<SUF>", "▁<PRE>", "▁<MID>", "<PRE>", "<|fim_pad|>",
                    "<|repo_name|>", "<|file_sep|>"},
                   {}, &f);
  ASSERT_TRUE(tok);
  const FimTokens& fim = tok->fim();
  EXPECT_EQ(fim.pre, 5);
  EXPECT_EQ(fim.suf, 4);
  EXPECT_EQ(fim.mid, 6);
  EXPECT_EQ(fim.pad, 8);
  EXPECT_EQ(fim.rep, 9);
  EXPECT_EQ(fim.sep, 10);
  for (int32_t id : {4, 5, 6, 8, 9, 10}) EXPECT_TRUE(tok->IsControl(id)) << id;
  EXPECT_FALSE(tok->IsControl(7)) << "the unchosen spelling keeps its type";
  for (int32_t id : {8, 9, 10}) EXPECT_TRUE(tok->IsEndOfGeneration(id)) << id;
  for (int32_t id : {4, 5, 6}) EXPECT_FALSE(tok->IsEndOfGeneration(id)) << id;
  // Special-token text is parsed into them.
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->Encode("▁<PRE>a▁<SUF>", false, true, &ids).ok());
  EXPECT_EQ(ids.front(), 5);
  EXPECT_EQ(ids.back(), 4);
}

TEST(FimVocab, KeysWinOverTextsAndOlderKeysAreRead) {
  std::unique_ptr<gguf::GgufFile> f;
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "a", "<fim_prefix>", "x", "y", "z", "w"};
  auto tok = Vocab(tokens,
                   {{"tokenizer.ggml.fim_pre_token_id", 5},
                    {"tokenizer.ggml.suffix_token_id", 6},  // the older names
                    {"tokenizer.ggml.middle_token_id", 7},
                    {"tokenizer.ggml.fim_sep_token_id", 8},
                    {"tokenizer.ggml.fim_rep_token_id", 99}},  // out of range: ignored
                   &f);
  ASSERT_TRUE(tok);
  const FimTokens& fim = tok->fim();
  EXPECT_EQ(fim.pre, 5) << "a key wins over the text <fim_prefix>";
  EXPECT_EQ(fim.suf, 6);
  EXPECT_EQ(fim.mid, 7);
  EXPECT_EQ(fim.sep, 8);
  EXPECT_EQ(fim.rep, -1);
  EXPECT_EQ(fim.pad, -1);
  EXPECT_TRUE(tok->IsEndOfGeneration(8));
  EXPECT_FALSE(tok->IsControl(5)) << "a token named by a key keeps the file's type (as in the reference)";
  // Where both names are present the older key is read last, as in the reference's list.
  std::unique_ptr<gguf::GgufFile> f2;
  auto both = Vocab(tokens, {{"tokenizer.ggml.fim_mid_token_id", 5}, {"tokenizer.ggml.middle_token_id", 7}}, &f2);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->fim().mid, 7);
}

}  // namespace
}  // namespace zf::tok

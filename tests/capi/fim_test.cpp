// Fill-in-the-middle token ids in zf_model_summary: read from the GGUF keys or found by text as
// llama.cpp does, -1 where absent; an older caller's smaller struct is filled only up to its size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_models.h"
#include "test_handles.h"
#include "zerfoo.h"

using zf::capitest::Load;
using zf::capitest::ModelPtr;

namespace {

zf_model_summary Summary(zf_model* m) {
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK) << zf_last_error();
  return s;
}

// scripts/fim_model.py's copy of SmolLM2 with FIM tokens (its docstring lists the ids).
std::string FimModel(const std::string& smollm2) {
  const std::string out = ::testing::TempDir() + "/smollm2-135m-fim.gguf";
  const std::string cmd = "python3 '" ZF_SOURCE_DIR "/scripts/fim_model.py' '" + smollm2 + "' '" + out + "' >/dev/null";
  if (std::system(cmd.c_str()) != 0) return std::string();
  return out;
}

std::string Piece(zf_model* m, int32_t id) {
  char buf[64] = {0};
  size_t needed = 0;
  EXPECT_EQ(zf_token_to_piece(m, id, ZF_DETOKENIZE_RENDER_SPECIAL, buf, sizeof buf - 1, &needed), ZF_OK)
      << zf_last_error();
  return std::string(buf, std::min(needed, sizeof buf - 1));
}

}  // namespace

TEST(Fim, ModelWithoutFimTokens) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  const zf_model_summary s = Summary(m.get());
  EXPECT_EQ(s.struct_size, sizeof s);
  EXPECT_EQ(s.token_fim_pre, -1);
  EXPECT_EQ(s.token_fim_suf, -1);
  EXPECT_EQ(s.token_fim_mid, -1);
  EXPECT_EQ(s.token_fim_pad, -1);
  EXPECT_EQ(s.token_fim_sep, -1);
  // SmolLM2's "<reponame>" is on llama.cpp's repository-token list.
  EXPECT_EQ(s.token_fim_rep, 4);
}

TEST(Fim, GemmaHasNone) {
  ZF_REQUIRE_MODEL(path, "gemma3");
  ModelPtr m = Load(path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  const zf_model_summary s = Summary(m.get());
  for (int32_t id : {s.token_fim_pre, s.token_fim_suf, s.token_fim_mid, s.token_fim_pad, s.token_fim_rep,
                     s.token_fim_sep}) {
    EXPECT_EQ(id, -1);
  }
}

TEST(Fim, KeysAndTextFallbacks) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const std::string fim = FimModel(path);
  ASSERT_FALSE(fim.empty()) << "scripts/fim_model.py failed";
  ModelPtr m = Load(fim, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  const zf_model_summary s = Summary(m.get());
  EXPECT_EQ(s.token_fim_pre, 11);  // "<fim_prefix>": by text
  EXPECT_EQ(s.token_fim_suf, 12);
  EXPECT_EQ(s.token_fim_mid, 13);
  EXPECT_EQ(s.token_fim_pad, 14);  // tokenizer.ggml.fim_pad_token_id
  EXPECT_EQ(s.token_fim_rep, 4);   // "<reponame>": by text
  EXPECT_EQ(s.token_fim_sep, 5);   // tokenizer.ggml.fim_sep_token_id
  EXPECT_EQ(Piece(m.get(), 11), "<fim_prefix>");
  // The FIM texts are special tokens: parsed as one token each.
  const std::string text = "<fim_prefix>a<fim_suffix>b<fim_middle>";
  std::vector<int32_t> toks(32);
  size_t n = 0;
  ASSERT_EQ(zf_tokenize(m.get(), text.data(), text.size(), ZF_TOKENIZE_PARSE_SPECIAL, toks.data(), toks.size(), &n),
            ZF_OK);
  toks.resize(n);
  ASSERT_GE(toks.size(), 5u);
  EXPECT_EQ(toks.front(), 11);
  EXPECT_EQ(toks.back(), 13);
  EXPECT_NE(std::find(toks.begin(), toks.end(), 12), toks.end());
}

TEST(Fim, OlderCallerGetsTheOldStruct) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  // A caller compiled before the FIM fields: 88 bytes, nothing written past them.
  std::vector<unsigned char> buf(sizeof(zf_model_summary), 0xAB);
  zf_model_summary* s = reinterpret_cast<zf_model_summary*>(buf.data());
  s->struct_size = offsetof(zf_model_summary, token_fim_pre);
  ASSERT_EQ(zf_model_info(m.get(), s), ZF_OK);
  EXPECT_EQ(s->struct_size, 88u);
  EXPECT_GT(s->n_vocab, 1000);
  for (size_t i = 88; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAB) << "byte " << i << " written";
}

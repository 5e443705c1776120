// Model loading errors on synthetic GGUF files: unknown architectures, missing hyperparameters
// and missing tensors give clear statuses naming the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gguf_builder.h"
#include "model/model.h"

namespace zf::model {
namespace {

using namespace zf::gguf::testutil;  // NOLINT: test builder vocabulary

std::string WriteTemp(const std::vector<uint8_t>& bytes, const char* name) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

GgufBuilder TinyLlama(const std::string& arch) {
  GgufBuilder b;
  b.Kv("general.architecture", val::Str(arch))
      .Kv(arch + ".context_length", val::U32(64))
      .Kv(arch + ".embedding_length", val::U32(32))
      .Kv(arch + ".block_count", val::U32(1))
      .Kv(arch + ".feed_forward_length", val::U32(64))
      .Kv(arch + ".attention.head_count", val::U32(4))
      .Kv(arch + ".attention.layer_norm_rms_epsilon", val::F32(1e-5f))
      .Kv("tokenizer.ggml.model", val::Str("llama"))
      .Kv("tokenizer.ggml.tokens", val::StrArr({"<unk>", "<s>", "</s>", "a", "b"}))
      .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, {0, 0, 0, -1, -2}))
      .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, {2, 3, 3, 1, 1}));
  return b;
}

Status LoadBytes(const std::vector<uint8_t>& bytes, const char* name) {
  std::unique_ptr<Model> m;
  return Model::Load(WriteTemp(bytes, name), LoadOptions(), &m);
}

TEST(ModelLoad, UnknownArchitectureIsUnsupportedAndNamed) {
  Status s = LoadBytes(TinyLlama("mamba9").Build(), "unknown_arch.gguf");
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find("mamba9"), std::string::npos) << s.message();
}

TEST(ModelLoad, MissingTensorIsFormatErrorNamingIt) {
  Status s = LoadBytes(TinyLlama("llama").Build(), "no_tensors.gguf");
  EXPECT_EQ(s.code(), Code::kFormat) << s.message();
  EXPECT_NE(s.message().find("token_embd.weight"), std::string::npos) << s.message();
}

TEST(ModelLoad, MissingHyperparameterIsFormatErrorNamingKey) {
  GgufBuilder b;
  b.Kv("general.architecture", val::Str("llama")).Kv("llama.block_count", val::U32(1));
  Status s = LoadBytes(b.Build(), "no_hparams.gguf");
  EXPECT_EQ(s.code(), Code::kFormat) << s.message();
  EXPECT_NE(s.message().find("llama."), std::string::npos) << s.message();
}

TEST(ModelLoad, VocabOnlyLoadsWithoutWeights) {
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.vocab_only = true;
  Status s = Model::Load(WriteTemp(TinyLlama("llama").Build(), "vocab_only.gguf"), o, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m->tokenizer().n_vocab(), 5);
}

TEST(ModelLoad, VocabOnlyLoadsAnyArchitecture) {
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.vocab_only = true;
  Status s = Model::Load(WriteTemp(TinyLlama("mamba9").Build(), "vocab_only_unknown.gguf"), o, &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m->desc().arch, "mamba9");
  EXPECT_EQ(m->tokenizer().n_vocab(), 5);
}

TEST(ModelLoad, OldPerExpertMixtralLayoutIsUnsupportedAndNamed) {
  GgufBuilder b = TinyLlama("llama");
  b.Kv("llama.expert_count", val::U32(2)).Kv("llama.expert_used_count", val::U32(1));
  b.Tensor("token_embd.weight", kTF32, {32, 5}).Tensor("output_norm.weight", kTF32, {32});
  b.Tensor("blk.0.attn_norm.weight", kTF32, {32}).Tensor("blk.0.attn_q.weight", kTF32, {32, 32});
  b.Tensor("blk.0.attn_k.weight", kTF32, {32, 32}).Tensor("blk.0.attn_v.weight", kTF32, {32, 32});
  b.Tensor("blk.0.attn_output.weight", kTF32, {32, 32}).Tensor("blk.0.ffn_norm.weight", kTF32, {32});
  b.Tensor("blk.0.ffn_gate_inp.weight", kTF32, {32, 2});
  for (int e = 0; e < 2; ++e) {
    const std::string x = std::to_string(e);
    b.Tensor("blk.0.ffn_gate." + x + ".weight", kTF32, {32, 64}).Tensor("blk.0.ffn_up." + x + ".weight", kTF32, {32, 64});
    b.Tensor("blk.0.ffn_down." + x + ".weight", kTF32, {64, 32});
  }
  Status s = LoadBytes(b.Build(), "old_mixtral.gguf");
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find("ffn_gate.0.weight"), std::string::npos) << s.message();
}

TEST(ModelLoad, TensorWithoutARoleIsUnsupportedAndNamed) {
  GgufBuilder b = TinyLlama("llama");
  const auto zeros = [&](const std::string& name, std::vector<int64_t> ne) {  // finite values
    TensorSpec t;
    t.name = name;
    t.ne = ne;
    t.data.assign(size_t(ne[0] * (ne.size() > 1 ? ne[1] : 1)) * 4, 0);
    b.Tensor(t);
  };
  zeros("token_embd.weight", {32, 5});
  zeros("output_norm.weight", {32});
  zeros("blk.0.attn_norm.weight", {32});
  for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output"}) zeros(std::string("blk.0.") + n + ".weight", {32, 32});
  zeros("blk.0.ffn_norm.weight", {32});
  zeros("blk.0.ffn_gate.weight", {32, 64});
  zeros("blk.0.ffn_up.weight", {32, 64});
  zeros("blk.0.ffn_down.weight", {64, 32});
  Status ok = LoadBytes(b.Build(), "complete_llama.gguf");
  ASSERT_TRUE(ok.ok()) << ok.message();
  zeros("blk.0.ffn_up.bias", {64});  // a bias the llama description has no role for
  Status s = LoadBytes(b.Build(), "llama_ffn_bias.gguf");
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.message();
  EXPECT_NE(s.message().find("blk.0.ffn_up.bias"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zf::model

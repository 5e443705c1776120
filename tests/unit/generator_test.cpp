// The generator's text (runtime/generator.h): control tokens render as no text unless they are
// listed as shown (the chat template's markers, which the chat parser must read).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/generator.h"
#include "runtime/session.h"

namespace zf {
namespace {

bool Append(void* ctx, std::string_view piece, int32_t) {
  static_cast<std::string*>(ctx)->append(piece);
  return false;
}

std::string Greedy(const model::Model& m, const std::string& prompt, const std::vector<int32_t>* shown) {
  rt::SessionOptions so;
  so.n_ctx = 256;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(m, so, &s).ok());
  rt::GenerateOptions o;
  o.max_tokens = 4;
  o.sampler.temperature = 0.0f;
  o.shown_control_tokens = shown;
  std::string text;
  rt::GenerateResult r;
  EXPECT_TRUE(rt::Generate(*s, prompt, o, Append, &text, &r).ok());
  return text;
}

// After a finished user turn SmolLM2 opens the next turn with <|im_start|>, a control token.
TEST(Generator, ShownControlTokensRenderTheirText) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  const std::string prompt = "<|im_start|>user\nHi<|im_end|>\n";
  std::vector<int32_t> ids;
  ASSERT_TRUE(m->tokenizer().Encode("<|im_start|>", false, true, &ids).ok());
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(m->tokenizer().IsControl(ids[0]));
  EXPECT_EQ(Greedy(*m, prompt, nullptr).rfind("assistant", 0), 0u);
  EXPECT_EQ(Greedy(*m, prompt, &ids).rfind("<|im_start|>assistant", 0), 0u);
  const std::vector<int32_t> others = {ids[0] + 1};
  EXPECT_EQ(Greedy(*m, prompt, &others).rfind("assistant", 0), 0u);
}

}  // namespace
}  // namespace zf

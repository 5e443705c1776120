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

// A token shown but not evaluated (a generation stopped at max_tokens) is the session's
// deferred token: the next evaluation takes it first, bit for bit as if evaluated with the
// caller's tokens, a cancelled evaluation keeps it once, and Truncate/Reset keep or drop it as
// part of the conversation.
TEST(Generator, DeferredTokenIsEvaluatedFirstAndOnce) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  rt::SessionOptions so;
  so.n_ctx = 256;
  std::unique_ptr<rt::Session> s, fresh;
  ASSERT_TRUE(rt::Session::Create(*m, so, &s).ok());
  ASSERT_TRUE(rt::Session::Create(*m, so, &fresh).ok());
  rt::GenerateOptions o;
  o.max_tokens = 3;
  o.sampler.temperature = 0.0f;
  o.ignore_eos = true;  // every generation stops at max_tokens
  std::string text;
  rt::GenerateResult r;
  ASSERT_TRUE(rt::Generate(*s, "The capital of France is", o, Append, &text, &r).ok());
  ASSERT_EQ(r.stop_reason, rt::StopReason::kMaxTokens);
  ASSERT_EQ(s->deferred().size(), 1u);
  std::vector<int32_t> conv = s->Conversation();
  ASSERT_EQ(conv.size(), s->history().size() + 1);
  EXPECT_EQ(conv.back(), s->deferred()[0]);

  // A cancel before the first step: nothing evaluated, the deferred token kept (once).
  const int32_t next = 13;
  s->RequestCancel();
  EXPECT_EQ(s->EvalKeepLogits(&next, 1).code(), Code::kCancelled);
  EXPECT_EQ(s->Conversation(), conv);

  // Evaluated first: the same logits as the conversation and the token in one evaluation.
  ASSERT_TRUE(s->EvalKeepLogits(&next, 1).ok());
  EXPECT_TRUE(s->deferred().empty());
  conv.push_back(next);
  EXPECT_EQ(s->history(), conv);
  ASSERT_TRUE(fresh->EvalKeepLogits(conv.data(), conv.size()).ok());
  const size_t n_vocab = size_t(m->desc().n_vocab);
  EXPECT_EQ(std::vector<float>(s->last_logits(), s->last_logits() + n_vocab),
            std::vector<float>(fresh->last_logits(), fresh->last_logits() + n_vocab));

  // Truncate keeps it within the conversation and drops it beyond; Reset drops it.
  ASSERT_TRUE(rt::Generate(*s, " and", o, Append, &text, &r).ok());
  ASSERT_EQ(s->deferred().size(), 1u);
  const size_t n_past = size_t(s->n_past());
  ASSERT_TRUE(s->Truncate(n_past + 1).ok());
  EXPECT_EQ(s->deferred().size(), 1u);
  ASSERT_TRUE(s->Truncate(n_past).ok());
  EXPECT_TRUE(s->deferred().empty());
  ASSERT_TRUE(rt::Generate(*s, " and", o, Append, &text, &r).ok());
  ASSERT_EQ(s->deferred().size(), 1u);
  s->Reset();
  EXPECT_TRUE(s->deferred().empty());
  EXPECT_TRUE(s->Conversation().empty());
}

}  // namespace
}  // namespace zf

// rt::ChatTurn on a served SmolLM2: whatever constrains a turn's output (tool_choice required,
// auto's lazy call grammar, response_format, the caller's regex) is compiled once per turn —
// the request is checked and generated with the same compiled constraint.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "common/test_models.h"
#include "model/model.h"
#include "runtime/chat_turn.h"
#include "runtime/constraint.h"
#include "runtime/served_model.h"

namespace zf {
namespace {

constexpr const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Lima"]}},
  "required": ["city"]}}}])";

// Runs a turn to its end; the number of constraints it compiled.
int64_t CompilesOfATurn(const rt::ServedModel& sm, const std::string& request, rt::ConstraintKind kind = rt::ConstraintKind::kNone,
                        const std::string& constraint = "", const std::string& tmpl = "") {
  rt::SessionOptions so;
  so.n_ctx = 1024;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(sm.CreateSession(so, &s).ok());
  rt::TurnOptions o;
  o.request_json = request;
  o.generate.max_tokens = 24;
  o.generate.sampler.temperature = 0.0f;
  o.generate.constraint_kind = kind;
  o.generate.constraint = constraint;
  o.template_text = tmpl.empty() ? nullptr : tmpl.c_str();
  const int64_t before = sm.constraint_vocab().compiles();
  std::unique_ptr<rt::ChatTurn> turn;
  const Status st = rt::ChatTurn::Begin(sm, *s, o, &turn);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return -1;
  rt::TurnEvent e;
  do {
    EXPECT_TRUE(turn->Next(&e).ok());
  } while (e.kind != rt::TurnEvent::kDone);
  return sm.constraint_vocab().compiles() - before;
}

TEST(ChatTurnUnit, ConstraintCompiledOncePerTurn) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  if (!rt::ConstraintsAvailable()) GTEST_SKIP() << "built without constraints";
  std::unique_ptr<model::Model> m;
  ASSERT_TRUE(model::Model::Load(path, model::LoadOptions(), &m).ok());
  std::unique_ptr<rt::ServedModel> sm;
  ASSERT_TRUE(rt::ServedModel::Create(std::move(m), rt::ServeOptions(), &sm).ok());
  const std::string ask = R"({"messages": [{"role": "user", "content": "Weather in Paris?"}])";
  EXPECT_EQ(CompilesOfATurn(*sm, ask + "}"), 0);
  EXPECT_EQ(CompilesOfATurn(*sm, ask + R"(, "tools": )" + kTools + R"(, "tool_choice": "required"})"), 1);
  // auto: SmolLM2's template writes no calls (the generic JSON form has no opening text to wait
  // for: nothing to compile); Qwen 2.5's opens them with <tool_call> (the lazy grammar).
  EXPECT_EQ(CompilesOfATurn(*sm, ask + R"(, "tools": )" + kTools + "}"), 0);
  std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  const std::string qwen((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(qwen.empty());
  EXPECT_EQ(CompilesOfATurn(*sm, ask + R"(, "tools": )" + kTools + "}", rt::ConstraintKind::kNone, "", qwen), 1);
  EXPECT_EQ(CompilesOfATurn(*sm, ask + R"(, "response_format": {"type": "json_object"}})"), 1);
  EXPECT_EQ(CompilesOfATurn(*sm, ask + "}", rt::ConstraintKind::kRegex, "[a-z ]{1,12}"), 1);
}

}  // namespace
}  // namespace zf

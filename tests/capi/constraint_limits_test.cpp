// Hostile constraints and JSON (issue #41): deep or huge grammars and schemas fail with
// ZF_ERR_INVALID_ARGUMENT instead of overflowing a stack, a constraint that matches no text is
// refused when it is compiled, and a constrained number always ends (SmolLM2 writes
// "1.1111..." to the token limit without the digit bound).
#include <gtest/gtest.h>

#include <string>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

#if ZF_HAVE_CONSTRAINTS

// start: r0, r0: r1, ..., rN: "a" (each link one level of llguidance's compiler).
std::string ChainGrammar(int n) {
  std::string g = "start: r0\n";
  for (int i = 0; i < n; ++i) g += "r" + std::to_string(i) + ": r" + std::to_string(i + 1) + "\n";
  return g + "r" + std::to_string(n) + ": \"a\"\n";
}

std::string Nested(int n, const std::string& open, const std::string& inner, const std::string& close) {
  std::string s;
  for (int i = 0; i < n; ++i) s += open;
  s += inner;
  for (int i = 0; i < n; ++i) s += close;
  return s;
}

std::string LastError() { return zf_last_error(); }

TEST(ConstraintLimits, DeepAndHugeConstraintsAreInvalidArguments) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  // 3,000 chained rules overflowed an 8 MB stack; now they compile (on the compiler's stack).
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK, ChainGrammar(3000).c_str()), ZF_OK) << LastError();
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK, ChainGrammar(10000).c_str()), ZF_OK) << LastError();
  // Past the structure bound: refused before compiling.
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK, ChainGrammar(100000).c_str()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("too large to compile"), std::string::npos) << LastError();
  // A $ref chain of 30,000 links: refused by the same bound.
  std::string refs = R"({"$ref": "#/$defs/a0", "$defs": {)";
  for (int i = 0; i < 30000; ++i) refs += "\"a" + std::to_string(i) + R"(": {"$ref": "#/$defs/a)" + std::to_string(i + 1) + "\"}, ";
  refs += R"("a30000": {"type": "string"}}})";
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_JSON_SCHEMA, refs.c_str()), ZF_ERR_INVALID_ARGUMENT);
  // JSON nested 10^5 deep in a schema (anyOf, enum, default) and in a choice list.
  const int kDeep = 100000;
  for (const std::string& schema :
       {Nested(kDeep, R"({"anyOf": [)", R"({"type": "string"})", "]}"),
        R"({"enum": [)" + Nested(kDeep, "[", "", "]") + "]}",
        R"({"type": "string", "default": )" + Nested(kDeep, "[", "", "]") + "}"}) {
    EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_JSON_SCHEMA, schema.c_str()), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_NE(LastError().find("nested deeper than"), std::string::npos) << LastError();
  }
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_CHOICE, Nested(kDeep, "[", "\"a\"", "]").c_str()),
            ZF_ERR_INVALID_ARGUMENT);
  // Lark's own nesting and a %json schema in a grammar nested past serde_json's limit.
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK, ("start: " + Nested(1000, "(", "\"a\"", ")")).c_str()),
            ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK,
                                ("start: %json " + Nested(2000, R"({"anyOf": [)", "{}", "]}")).c_str()),
            ZF_ERR_INVALID_ARGUMENT);
}

TEST(ConstraintLimits, EmptyLanguageIsRefusedWhenCompiled) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  const std::pair<int32_t, const char*> cases[] = {
      {ZF_CONSTRAINT_JSON_SCHEMA, R"({"$ref": "#"})"},
      {ZF_CONSTRAINT_LARK, "start: start\n"},
      {ZF_CONSTRAINT_LARK, "start: a\na: b\nb: a\n"},
  };
  for (const auto& [kind, text] : cases) {
    EXPECT_EQ(zf_constraint_check(m.get(), kind, text), ZF_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(LastError().find("no text can match it"), std::string::npos) << text << ": " << LastError();
    // zf_generate refuses it the same way, before evaluating anything.
    SessionPtr s = NewSession(m.get(), 512);
    zf_generate_params g = Greedy(8);
    g.constraint_kind = kind;
    g.constraint = text;
    Pushed p;
    EXPECT_EQ(zf_generate(s.get(), "Hi", 2, &g, CollectPieces, &p, nullptr), ZF_ERR_INVALID_ARGUMENT) << text;
    int32_t n_past = -1;
    ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
    EXPECT_EQ(n_past, 0) << text;
  }
  // A part that matches nothing after a first token: an invalid argument during the generation
  // (never an internal error).
  SessionPtr s = NewSession(m.get(), 512);
  zf_generate_params g = Greedy(8);
  g.constraint_kind = ZF_CONSTRAINT_LARK;
  g.constraint = "start: \"x\" a\na: a\n";
  Pushed p;
  EXPECT_EQ(zf_generate(s.get(), "Hi", 2, &g, CollectPieces, &p, nullptr), ZF_ERR_INVALID_ARGUMENT);
}

// A number schema: SmolLM2 writes "1.111..." for 1/3 without the bound on digit runs; with it
// the number ends (at most 20 digits in a row) well before the token limit.
TEST(ConstraintLimits, ConstrainedNumbersEnd) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  for (const char* schema : {R"({"type": "number"})", R"({"type": "array", "items": {"type": "number"}, "maxItems": 2})"}) {
    SessionPtr s = NewSession(m.get(), 1024);
    zf_chat_message msg{"user", "What is 1/3? Answer with the number."};
    std::string prompt(4096, '\0');
    size_t needed = 0;
    ASSERT_EQ(zf_chat_apply_template(m.get(), &msg, 1, ZF_CHAT_ADD_ASSISTANT, prompt.data(), prompt.size(), &needed),
              ZF_OK);
    prompt.resize(needed - 1);
    zf_generate_params g = Greedy(200);
    g.constraint_kind = ZF_CONSTRAINT_JSON_SCHEMA;
    g.constraint = schema;
    Pushed p;
    zf_generate_result r{};
    r.struct_size = sizeof r;
    ASSERT_EQ(zf_generate(s.get(), prompt.data(), prompt.size(), &g, CollectPieces, &p, &r), ZF_OK) << LastError();
    std::string text;
    for (const std::string& piece : p.pieces) text += piece;
    EXPECT_EQ(r.stop_reason, ZF_STOP_EOS) << schema << ": " << text;
    EXPECT_LT(r.n_generated, 200) << text;
    int run = 0, longest = 0;
    for (char c : text) longest = std::max(longest, run = c >= '0' && c <= '9' ? run + 1 : 0);
    EXPECT_LE(longest, 20) << text;
  }
}

#endif  // ZF_HAVE_CONSTRAINTS

// JSON the chat layer parses with nlohmann (tools, model output) is bounded before it is walked.
TEST(ConstraintLimits, DeepJsonInChatCallsIsRefusedOrKeptAsText) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  const std::string deep(100000, '[');
  const std::string tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", )"
                            R"("properties": {"a": {"type": "string", "default": )" +
                            deep + std::string(100000, ']') + "}}}}}]";
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.tools_json = tools.c_str();
  std::string buf(1 << 16, '\0');
  size_t needed = 0;
  EXPECT_EQ(zf_chat_tool_grammar(m.get(), &p, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("nested deeper"), std::string::npos) << zf_last_error();
  // Model output of 10^5 brackets (in a tool-call block): read back as text, no crash.
  const std::string out = "<tool_call>\n{\"name\": \"f\", \"arguments\": " + deep + "\n</tool_call>";
  const std::string small_tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";
  p.tools_json = small_tools.c_str();
  const zf_status st = zf_chat_parse(m.get(), out.data(), out.size(), &p, buf.data(), buf.size(), &needed);
  EXPECT_TRUE(st == ZF_OK || st == ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
}

}  // namespace

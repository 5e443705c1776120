// Constrained decoding through the C API (zf_generate_params.constraint / constraint_kind):
// greedy output under a JSON schema parses and validates, a regex constraint's output matches the
// regex in full, a choice list gives one of its strings, a Lark grammar's output has its shape;
// push and pull give the same text; invalid constraints fail before anything is evaluated;
// without a constraint the output is what it was (an older caller's struct_size included).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

// The chat-formatted prompt of one user message (the assistant's turn opened).
std::string ChatPrompt(zf_model* m, const std::string& user) {
  zf_chat_message msg{"user", user.c_str()};
  size_t needed = 0;
  std::string buf(4096, '\0');
  EXPECT_EQ(zf_chat_apply_template(m, &msg, 1, ZF_CHAT_ADD_ASSISTANT, buf.data(), buf.size(), &needed), ZF_OK)
      << zf_last_error();
  buf.resize(needed > 0 ? needed - 1 : 0);
  return buf;
}

struct Out {
  zf_status status = ZF_OK;
  std::string text;
  std::vector<int32_t> tokens;
  zf_generate_result result{};
};

Out RunPush(zf_session* s, const std::string& prompt, const zf_generate_params& g) {
  Out o;
  Pushed p;
  o.result.struct_size = sizeof o.result;
  o.status = zf_generate(s, prompt.data(), prompt.size(), &g, CollectPieces, &p, &o.result);
  for (const std::string& piece : p.pieces) o.text += piece;
  o.tokens = p.tokens;
  return o;
}

Out RunPull(zf_session* s, const std::string& prompt, const zf_generate_params& g) {
  Out o;
  zf_generation* raw = nullptr;
  o.status = zf_generate_begin(s, prompt.data(), prompt.size(), &g, &raw);
  if (o.status != ZF_OK) {
    EXPECT_EQ(raw, nullptr);
    return o;
  }
  GenerationPtr gen(raw);
  char buf[256];
  for (;;) {
    size_t len = 0;
    int32_t token = -1, done = 0;
    o.status = zf_generation_next(gen.get(), buf, sizeof buf, &len, &token, &done);
    if (o.status != ZF_OK || done) break;
    o.text.append(buf, len);
    o.tokens.push_back(token);
  }
  o.result.struct_size = sizeof o.result;
  EXPECT_EQ(zf_generation_result(gen.get(), &o.result), ZF_OK);
  return o;
}

zf_generate_params Constrained(int32_t kind, const char* text, int32_t max_tokens = 160) {
  zf_generate_params g = Greedy(max_tokens);
  g.constraint_kind = kind;
  g.constraint = text;
  return g;
}

int32_t NPast(const zf_session* s) {
  int32_t n = -1;
  EXPECT_EQ(zf_session_n_past(s, &n), ZF_OK);
  return n;
}

class Constraint : public ::testing::TestWithParam<const char*> {};

#if ZF_HAVE_CONSTRAINTS

constexpr const char kPersonSchema[] = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 24},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "role": {"enum": ["admin", "user", "guest"]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}
  },
  "required": ["name", "age", "role"],
  "additionalProperties": false
})";

TEST_P(Constraint, JsonSchemaGreedyOutputValidates) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  const std::string prompt = ChatPrompt(m.get(), "Describe Alice, a 30 year old administrator, as JSON.");
  Out o = RunPush(s.get(), prompt, Constrained(ZF_CONSTRAINT_JSON_SCHEMA, kPersonSchema, 200));
  ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
  EXPECT_EQ(o.result.stop_reason, ZF_STOP_EOS) << o.text;
  const nlohmann::json j = nlohmann::json::parse(o.text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.text;
  ASSERT_TRUE(j.is_object()) << o.text;
  for (const char* key : {"name", "age", "role"}) EXPECT_TRUE(j.contains(key)) << key << " in " << o.text;
  for (auto it = j.begin(); it != j.end(); ++it) {
    EXPECT_TRUE(it.key() == "name" || it.key() == "age" || it.key() == "role" || it.key() == "tags") << it.key();
  }
  ASSERT_TRUE(j["name"].is_string());
  EXPECT_LE(j["name"].get<std::string>().size(), 24u * 4);  // maxLength counts characters
  ASSERT_TRUE(j["age"].is_number_integer()) << o.text;
  EXPECT_GE(j["age"].get<int64_t>(), 0);
  EXPECT_LE(j["age"].get<int64_t>(), 150);
  ASSERT_TRUE(j["role"].is_string());
  const std::string role = j["role"];
  EXPECT_TRUE(role == "admin" || role == "user" || role == "guest") << role;
  if (j.contains("tags")) {
    ASSERT_TRUE(j["tags"].is_array());
    EXPECT_LE(j["tags"].size(), 3u);
    for (const auto& t : j["tags"]) EXPECT_TRUE(t.is_string());
  }
  // The pull API gives the same text from the same state.
  ASSERT_EQ(zf_session_reset(s.get()), ZF_OK);
  Out pulled = RunPull(s.get(), prompt, Constrained(ZF_CONSTRAINT_JSON_SCHEMA, kPersonSchema, 200));
  ASSERT_EQ(pulled.status, ZF_OK) << zf_last_error();
  EXPECT_EQ(pulled.text, o.text);
  EXPECT_EQ(pulled.result.stop_reason, ZF_STOP_EOS);
}

TEST_P(Constraint, RegexOutputMatchesInFull) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  const char* kRegex = "(yes|no), because [a-z ,]{1,60}\\.";
  for (float temperature : {0.0f, 0.9f}) {
    SessionPtr s = NewSession(m.get(), 1024);
    zf_generate_params g = Constrained(ZF_CONSTRAINT_REGEX, kRegex, 120);
    g.temperature = temperature;
    g.seed = 42;
    Out o = RunPush(s.get(), ChatPrompt(m.get(), "Is the sky blue? Answer yes or no and explain."), g);
    ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
    EXPECT_EQ(o.result.stop_reason, ZF_STOP_EOS) << o.text;
    EXPECT_TRUE(std::regex_match(o.text, std::regex(kRegex))) << "temperature " << temperature << ": " << o.text;
  }
}

TEST_P(Constraint, ChoiceGivesOneOfTheStrings) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  const char* kChoices = R"j(["red", "green", "blue (dark)", "no idea"])j";
  Out o = RunPush(s.get(), ChatPrompt(m.get(), "What colour is grass?"), Constrained(ZF_CONSTRAINT_CHOICE, kChoices));
  ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
  EXPECT_EQ(o.result.stop_reason, ZF_STOP_EOS);
  EXPECT_TRUE(o.text == "red" || o.text == "green" || o.text == "blue (dark)" || o.text == "no idea") << o.text;
}

TEST_P(Constraint, LarkGrammarShapesTheOutput) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  const char* kLark = "start: \"The answer is \" NUMBER \".\"\nNUMBER: /[0-9]{1,4}/\n";
  Out o = RunPush(s.get(), ChatPrompt(m.get(), "What is 6 times 7?"), Constrained(ZF_CONSTRAINT_LARK, kLark));
  ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
  EXPECT_EQ(o.result.stop_reason, ZF_STOP_EOS);
  EXPECT_TRUE(std::regex_match(o.text, std::regex("The answer is [0-9]{1,4}\\."))) << o.text;
}

TEST_P(Constraint, InvalidConstraintFailsBeforeAnyToken) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  const std::string prompt = ChatPrompt(m.get(), "Hello");
  struct Case {
    int32_t kind;
    const char* text;
    const char* message;  // expected in zf_last_error()
  };
  const Case cases[] = {
      {ZF_CONSTRAINT_JSON_SCHEMA, R"({"type": 12})", "invalid JSON schema"},
      {ZF_CONSTRAINT_JSON_SCHEMA, "{not json", "invalid JSON schema"},
      {ZF_CONSTRAINT_REGEX, "([a-z", "invalid regular expression"},
      {ZF_CONSTRAINT_CHOICE, "[1, 2]", "not a string"},
      {ZF_CONSTRAINT_CHOICE, "[]", "non-empty"},
      {ZF_CONSTRAINT_LARK, "start: missing_rule", "Lark grammar"},
  };
  for (const Case& c : cases) {
    Out o = RunPush(s.get(), prompt, Constrained(c.kind, c.text));
    EXPECT_EQ(o.status, ZF_ERR_INVALID_ARGUMENT) << c.text;
    EXPECT_NE(std::string(zf_last_error()).find(c.message), std::string::npos) << c.text << ": " << zf_last_error();
    EXPECT_TRUE(o.tokens.empty());
    EXPECT_EQ(NPast(s.get()), 0) << "nothing evaluated for " << c.text;
    Out p = RunPull(s.get(), prompt, Constrained(c.kind, c.text));
    EXPECT_EQ(p.status, ZF_ERR_INVALID_ARGUMENT) << c.text;
    EXPECT_NE(std::string(zf_last_error()).find(c.message), std::string::npos) << zf_last_error();
    EXPECT_EQ(NPast(s.get()), 0);
  }
  // The session is untouched: an unconstrained generation still runs from the start.
  Out o = RunPush(s.get(), prompt, Greedy(4));
  EXPECT_EQ(o.status, ZF_OK) << zf_last_error();
}

TEST_P(Constraint, ContinuesTheConversationAfterwards) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  Out o = RunPush(s.get(), ChatPrompt(m.get(), "Pick a number."), Constrained(ZF_CONSTRAINT_REGEX, "[0-9]{2}"));
  ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
  EXPECT_TRUE(std::regex_match(o.text, std::regex("[0-9]{2}"))) << o.text;
  // The next turn is unconstrained and continues from the KV cache.
  Out next = RunPush(s.get(), " and", Greedy(8));
  EXPECT_EQ(next.status, ZF_OK) << zf_last_error();
  EXPECT_GT(next.result.n_generated, 0);
}

#else

TEST_P(Constraint, BuiltWithoutConstraintsIsUnsupported) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 512);
  Out o = RunPush(s.get(), "Hello", Constrained(ZF_CONSTRAINT_REGEX, "[0-9]+"));
  EXPECT_EQ(o.status, ZF_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(zf_last_error()).find("built without constraints"), std::string::npos) << zf_last_error();
  EXPECT_EQ(NPast(s.get()), 0);
}

#endif  // ZF_HAVE_CONSTRAINTS

TEST_P(Constraint, ParameterErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 512);
  zf_generate_params g = Greedy(4);
  g.constraint_kind = 5;
  g.constraint = "x";
  EXPECT_EQ(RunPush(s.get(), "Hi", g).status, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("constraint_kind"), std::string::npos);
  g.constraint_kind = ZF_CONSTRAINT_NONE;  // text without a kind: refused, never ignored
  EXPECT_EQ(RunPush(s.get(), "Hi", g).status, ZF_ERR_INVALID_ARGUMENT);
  g.constraint_kind = ZF_CONSTRAINT_REGEX;
  g.constraint = nullptr;
  EXPECT_EQ(RunPush(s.get(), "Hi", g).status, ZF_ERR_INVALID_ARGUMENT);
  g = Greedy(4);
  g.reserved2 = 1;
  EXPECT_EQ(RunPush(s.get(), "Hi", g).status, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("reserved2"), std::string::npos);
  EXPECT_EQ(NPast(s.get()), 0);
}

// Without a constraint nothing changes: an explicit NONE, the defaults and a caller compiled
// against the 72-byte struct (before the constraint fields) give the same tokens.
TEST_P(Constraint, OffLeavesOutputUnchanged) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  const std::string prompt = ChatPrompt(m.get(), "Write a haiku about the sea.");
  std::vector<std::vector<int32_t>> runs;
  for (int variant = 0; variant < 3; ++variant) {
    SessionPtr s = NewSession(m.get(), 512);
    zf_generate_params g = Greedy(32);
    if (variant == 1) g.struct_size = 72;
    if (variant == 2) {
      g.temperature = 0.8f;  // sampled, seeded: the masked path is not taken either
      g.seed = 1234;
      g.flags = ZF_GENERATE_IGNORE_EOS;  // a sampled first EOS (kernel-path dependent) would be empty
    }
    Out o = RunPush(s.get(), prompt, g);
    ASSERT_EQ(o.status, ZF_OK) << zf_last_error();
    runs.push_back(o.tokens);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_FALSE(runs[2].empty());
}

INSTANTIATE_TEST_SUITE_P(Models, Constraint, ::testing::Values("smollm2", "gemma3"));

}  // namespace

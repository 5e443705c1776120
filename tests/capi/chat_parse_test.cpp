// zf_chat_parse through libzerfoo.so: the exact signature, OpenAI message JSON for content,
// reasoning and tool calls in several templates' formats (the corpus round trip is in
// tests/unit/chat_parse_test.cpp), the generic JSON fallback for templates without tool calls,
// buffers and errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers
using Json = nlohmann::ordered_json;

// The signature the ABI promises (a hidden check calls it by exactly this type).
using ChatParseFn = zf_status (*)(const zf_model*, const char*, size_t, const zf_chat_params*, char*, size_t, size_t*);
[[maybe_unused]] constexpr ChatParseFn kSignature = &zf_chat_parse;

std::string Template(const std::string& stem) {
  std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates/" + stem + ".jinja", std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
  {"type": "function", "function": {"name": "search", "description": "Search", "parameters": {"type": "object",
  "properties": {"q": {"type": "string"}}}}}])";

// Parses `text` with `tmpl` (empty: the model's own); the status goes to *st.
Json Parse(zf_model* m, const std::string& text, const std::string& tmpl, zf_status* st, const char* tools = kTools,
           const char* extra = nullptr) {
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.template_text = tmpl.empty() ? nullptr : tmpl.c_str();
  p.tools_json = tools;
  p.extra_json = extra;
  size_t needed = 0;
  *st = zf_chat_parse(m, text.data(), text.size(), &p, nullptr, 0, &needed);
  if (*st != ZF_ERR_BUFFER_TOO_SMALL) return Json();
  std::vector<char> buf(needed);
  size_t again = 0;
  *st = zf_chat_parse(m, text.data(), text.size(), &p, buf.data(), buf.size(), &again);
  EXPECT_EQ(again, needed);
  if (*st != ZF_OK) return Json();
  EXPECT_EQ(buf[needed - 1], '\0');
  return Json::parse(std::string(buf.data(), needed - 1));
}

class ChatParse : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = ::zf::testing::ModelPath("smollm2");
    if (path.empty()) GTEST_SKIP() << "SmolLM2 not found (scripts/fetch_models.sh)";
    model_ = Load(path, ZF_MODEL_VOCAB_ONLY);
    ASSERT_TRUE(model_);
  }
  ModelPtr model_;
};

TEST_F(ChatParse, HermesToolCallsAndContent) {
  zf_status st;
  const std::string tmpl = Template("Qwen-Qwen2.5-7B-Instruct");
  // Compact JSON the template would not write itself: matched whatever the spacing.
  Json msg = Parse(model_.get(),
                   "I'll look.\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris \\\"FR\\\"\",\"days\":2}}"
                   "</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"caf\xc3\xa9\"}}\n</tool_call>",
                   tmpl, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["content"], "I'll look.");
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"city": "Paris \"FR\"", "days": 2})"));
  EXPECT_EQ(msg["tool_calls"][1]["function"]["name"], "search");
  EXPECT_NE(msg["tool_calls"][0]["id"], msg["tool_calls"][1]["id"]);
  EXPECT_EQ(msg["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_FALSE(msg.contains("reasoning_content"));
  // Only calls: content is null. Plain text: no tool_calls key.
  msg = Parse(model_.get(), "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>", tmpl, &st);
  EXPECT_TRUE(msg["content"].is_null());
  msg = Parse(model_.get(), "Just text, with a <tool_call> mention.", tmpl, &st);
  EXPECT_EQ(msg, Json::parse(R"({"role": "assistant", "content": "Just text, with a <tool_call> mention."})"));
}

TEST_F(ChatParse, ReasoningOpenedByTheOutputOrByThePrompt) {
  zf_status st;
  const std::string qwen3 = Template("Qwen-Qwen3-0.6B");
  Json msg = Parse(model_.get(), "<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", qwen3, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_EQ(msg["reasoning_content"], "First, 2+2.");
  EXPECT_EQ(msg["content"], "It is 4.");
  // Reasoning then a call.
  msg = Parse(model_.get(), "<think>Need weather.</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
              qwen3, &st);
  EXPECT_EQ(msg["reasoning_content"], "Need weather.");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  // DeepSeek-R1 distills: the generation prompt opens <think> (this template closes it again
  // unless enable_thinking), the output only closes it.
  const std::string r1 = Template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B");
  msg = Parse(model_.get(), "Let me add.\n</think>\n\nFour.", r1, &st, kTools, R"({"enable_thinking": true})");
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_EQ(msg["reasoning_content"], "Let me add.");
  EXPECT_EQ(msg["content"], "Four.");
  // ... and a turn that stopped before closing it is all reasoning, streamed or not.
  msg = Parse(model_.get(), "Hmm, 2 and 2", r1, &st, kTools, R"({"enable_thinking": true})");
  EXPECT_EQ(msg["reasoning_content"], "Hmm, 2 and 2");
  EXPECT_EQ(msg["content"], "");
  // Generation stopped while thinking: everything so far is reasoning.
  msg = Parse(model_.get(), "<think>Still going", qwen3, &st);
  EXPECT_EQ(msg["reasoning_content"], "Still going");
  EXPECT_EQ(msg["content"], "");
}

TEST_F(ChatParse, OtherFamiliesFormats) {
  zf_status st;
  // Mistral: [TOOL_CALLS] with a JSON list and call ids.
  Json msg = Parse(model_.get(),
                   "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"a\"}, \"id\": \"abcDEF123\"}, "
                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}, \"id\": \"xyz987654\"}]",
                   Template("mistralai-Mistral-Nemo-Instruct-2407"), &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  EXPECT_EQ(msg["tool_calls"][0]["id"], "abcDEF123");
  EXPECT_EQ(msg["tool_calls"][1]["function"]["name"], "get_weather");
  // Llama 3.x: a bare JSON object with "parameters".
  msg = Parse(model_.get(), "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lima\", \"days\": 1}}",
              Template("meta-llama-Llama-3.1-8B-Instruct"), &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Lima", "days": 1})"));
  // Qwen3-Coder: XML parameters, typed by the tool's schema (days is an integer, city a string
  // even when it looks like a number).
  msg = Parse(model_.get(),
              "<tool_call>\n<function=get_weather>\n<parameter=city>\n1984\n</parameter>\n<parameter=days>\n3\n"
              "</parameter>\n</function>\n</tool_call>",
              Template("Qwen3-Coder"), &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "1984", "days": 3})"));
}

TEST_F(ChatParse, GenericJsonForTemplatesWithoutToolCalls) {
  zf_status st;
  const std::string gemma = Template("google-gemma-2-2b-it");
  Json msg = Parse(model_.get(), "```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"zerfoo\"}}\n```", gemma, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "search");
  EXPECT_TRUE(msg["content"].is_null());
  // A name that was not offered, or no tools offered: plain content.
  msg = Parse(model_.get(), "{\"name\": \"rm_rf\", \"arguments\": {}}", gemma, &st);
  EXPECT_FALSE(msg.contains("tool_calls"));
  msg = Parse(model_.get(), "{\"name\": \"search\", \"arguments\": {}}", gemma, &st, nullptr);
  EXPECT_FALSE(msg.contains("tool_calls"));
  EXPECT_EQ(msg["content"], "{\"name\": \"search\", \"arguments\": {}}");
}

TEST_F(ChatParse, RoundTripWithApplyTemplateV2) {
  // Render an assistant turn with the ABI, take its text after the generation prompt, parse it.
  const std::string tmpl = Template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use");
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.template_text = tmpl.c_str();
  p.tools_json = kTools;
  auto render = [&](const std::vector<zf_chat_message_v2>& msgs, uint32_t flags) {
    p.flags = flags;
    size_t needed = 0;
    EXPECT_EQ(zf_chat_apply_template_v2(model_.get(), msgs.data(), msgs.size(), &p, nullptr, 0, &needed),
              ZF_ERR_BUFFER_TOO_SMALL);
    std::vector<char> buf(needed);
    EXPECT_EQ(zf_chat_apply_template_v2(model_.get(), msgs.data(), msgs.size(), &p, buf.data(), buf.size(), &needed), ZF_OK)
        << zf_last_error();
    return std::string(buf.data(), needed - 1);
  };
  zf_chat_message_v2 user{}, asst{};
  user.struct_size = asst.struct_size = sizeof(zf_chat_message_v2);
  user.role = "user";
  user.content = "Weather in Zürich and news?";
  asst.role = "assistant";
  asst.content = "";
  asst.tool_calls_json = R"([{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}},
    {"id": "c2", "type": "function", "function": {"name": "search", "arguments": {"q": "news \"today\""}}}])";
  const std::string prompt = render({user}, ZF_CHAT_ADD_ASSISTANT);
  const std::string full = render({user, asst}, 0);
  ASSERT_EQ(full.compare(0, prompt.size(), prompt), 0);
  std::string text = full.substr(prompt.size());
  text = text.substr(0, text.rfind("<|im_end|>"));
  zf_status st;
  Json msg = Parse(model_.get(), text, tmpl, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  Json want = Json::parse(asst.tool_calls_json);
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(msg["tool_calls"][i]["function"]["name"], want[i]["function"]["name"]);
    EXPECT_EQ(Json::parse(msg["tool_calls"][i]["function"]["arguments"].get<std::string>()), want[i]["function"]["arguments"]);
  }
}

TEST_F(ChatParse, PartialTextHoldsBackWhatMayBecomeACall) {
  const std::string tmpl = Template("Qwen-Qwen3-0.6B");
  auto parse = [&](const std::string& text, uint32_t flags) {
    zf_chat_params p;
    zf_chat_params_init(&p, sizeof p);
    p.template_text = tmpl.c_str();
    p.tools_json = kTools;
    p.flags = flags;
    std::vector<char> buf(4096);
    size_t needed = 0;
    EXPECT_EQ(zf_chat_parse(model_.get(), text.data(), text.size(), &p, buf.data(), buf.size(), &needed), ZF_OK)
        << zf_last_error();
    return Json::parse(buf.data());
  };
  // Reasoning still open, a marker half written, a call half written.
  EXPECT_EQ(parse("<think>step one</th", ZF_CHAT_PARSE_PARTIAL)["reasoning_content"], "step one");
  Json m = parse("<think>a</think>Sure <tool_", ZF_CHAT_PARSE_PARTIAL);
  EXPECT_EQ(m["content"], "Sure ");
  m = parse("<think>a</think>Sure <tool_call>\n{\"name\": \"sea", ZF_CHAT_PARSE_PARTIAL);
  EXPECT_EQ(m["content"], "Sure ");
  EXPECT_FALSE(m.contains("tool_calls"));  // the name may go on
  // A call in progress: listed once its name is written, its arguments growing into the final ones.
  const std::string whole = "<think>a</think>Sure <tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>";
  const Json final_call = parse(whole, 0)["tool_calls"][0];
  EXPECT_EQ(final_call["function"]["arguments"], "{\"q\": \"x\"}");  // as the model wrote it
  m = parse("<think>a</think>Sure <tool_call>\n{\"name\": \"search\", \"argu", ZF_CHAT_PARSE_PARTIAL);
  EXPECT_EQ(m["content"], "Sure");  // trimmed as the final parse trims it
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "search");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "");
  EXPECT_EQ(m["tool_calls"][0]["id"], final_call["id"]);
  m = parse("<think>a</think>Sure <tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"", ZF_CHAT_PARSE_PARTIAL);
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"q\": \"");
  // The complete call: listed, with the id the final parse gives it too; a next call whose name
  // is not written yet is not.
  m = parse(whole + "\n<tool_call>\n{\"na", ZF_CHAT_PARSE_PARTIAL);
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["id"], final_call["id"]);
  // The same unfinished text as a complete turn is content as written.
  EXPECT_EQ(parse("Sure <tool_", 0)["content"], "Sure <tool_");
}

TEST_F(ChatParse, BuffersAndErrors) {
  const char* text = "Hello";
  char small[8];
  size_t needed = 0;
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, nullptr, small, sizeof small, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, std::string(R"({"role":"assistant","content":"Hello"})").size() + 1);
  std::vector<char> buf(needed);
  ASSERT_EQ(zf_chat_parse(model_.get(), text, 5, nullptr, buf.data(), buf.size(), nullptr), ZF_OK);
  EXPECT_STREQ(buf.data(), R"({"role":"assistant","content":"Hello"})");
  // Empty text is an empty answer; NUL bytes inside the text are content.
  ASSERT_EQ(zf_chat_parse(model_.get(), nullptr, 0, nullptr, buf.data(), buf.size(), &needed), ZF_OK);
  EXPECT_STREQ(buf.data(), R"({"role":"assistant","content":""})");
  EXPECT_EQ(zf_chat_parse(nullptr, text, 5, nullptr, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("model is NULL"), std::string::npos);
  EXPECT_EQ(zf_chat_parse(model_.get(), nullptr, 3, nullptr, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_chat_parse(model_.get(), "\xff\xfe", 2, nullptr, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_UTF8);
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.tools_json = "[{";
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("params->tools_json"), std::string::npos) << zf_last_error();
  p.tools_json = "{}";
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  p.tools_json = nullptr;
  p.extra_json = "[1]";
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("params->extra_json"), std::string::npos) << zf_last_error();
  p.extra_json = nullptr;
  p.flags = 0x100;
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  p.flags = 0;
  p.template_name = "nope";
  EXPECT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_ERR_NOT_FOUND);
  // A template that fails to render parses as plain content (nothing to derive), not an error.
  p.template_name = nullptr;
  p.template_text = "{{ raise_exception('no') }}";
  ASSERT_EQ(zf_chat_parse(model_.get(), text, 5, &p, buf.data(), buf.size(), &needed), ZF_OK) << zf_last_error();
  EXPECT_STREQ(buf.data(), R"({"role":"assistant","content":"Hello"})");
}

}  // namespace

namespace {

// The tool-call grammar of a template: {"grammar","lazy_grammar","trigger","native"}.
Json ToolGrammar(zf_model* m, const std::string& tmpl, const char* tools, uint32_t flags, zf_status* st) {
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.template_text = tmpl.empty() ? nullptr : tmpl.c_str();
  p.tools_json = tools;
  p.flags = flags;
  size_t needed = 0;
  *st = zf_chat_tool_grammar(m, &p, nullptr, 0, &needed);
  if (*st != ZF_ERR_BUFFER_TOO_SMALL) return Json();
  std::vector<char> buf(needed);
  *st = zf_chat_tool_grammar(m, &p, buf.data(), buf.size(), &needed);
  return *st == ZF_OK ? Json::parse(buf.data()) : Json();
}

}  // namespace

TEST_F(ChatParse, ToolGrammarInTheTemplatesOwnFormat) {
  zf_status st;
  // Hermes: the call's literals, each tool's parameters inline, the block's first word as trigger.
  Json g = ToolGrammar(model_.get(), Template("Qwen-Qwen2.5-7B-Instruct"), kTools, 0, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_TRUE(g["native"].get<bool>());
  EXPECT_EQ(g["trigger"], "<tool_call>");
  const std::string grammar = g["grammar"], lazy = g["lazy_grammar"];
  EXPECT_NE(grammar.find("%json"), std::string::npos) << grammar;
  EXPECT_NE(grammar.find("\"get_weather\""), std::string::npos) << grammar;
  EXPECT_NE(grammar.find("{0,7}"), std::string::npos) << grammar;  // parallel calls
  EXPECT_EQ(lazy.rfind("start: \"<tool_call>", 0), 0u) << lazy;
  g = ToolGrammar(model_.get(), Template("Qwen-Qwen2.5-7B-Instruct"), kTools, ZF_CHAT_ONE_CALL, &st);
  EXPECT_EQ(std::string(g["grammar"]).find("{0,7}"), std::string::npos);
  // Both grammars compile for the vocabulary (where the library has constraints).
  if (zf_constraint_check(model_.get(), ZF_CONSTRAINT_REGEX, "a") == ZF_OK) {
    EXPECT_EQ(zf_constraint_check(model_.get(), ZF_CONSTRAINT_LARK, grammar.c_str()), ZF_OK) << zf_last_error();
    EXPECT_EQ(zf_constraint_check(model_.get(), ZF_CONSTRAINT_LARK, lazy.c_str()), ZF_OK) << zf_last_error();
  }
  // The model's own template (no tool calls): the generic JSON form, no trigger.
  g = ToolGrammar(model_.get(), "", kTools, 0, &st);
  ASSERT_EQ(st, ZF_OK);
  EXPECT_FALSE(g["native"].get<bool>());
  EXPECT_EQ(g["trigger"], "");
  // Errors name the field.
  ToolGrammar(model_.get(), "", nullptr, 0, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("tools_json"), std::string::npos);
  ToolGrammar(model_.get(), "", R"([{"type": "function", "function": {}}])", 0, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  ToolGrammar(model_.get(), "", kTools, 0x100, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_chat_tool_grammar(model_.get(), nullptr, nullptr, 0, nullptr), ZF_ERR_INVALID_ARGUMENT);
}

namespace {

// A Hermes-style template whose call markers are control tokens of SmolLM2's vocabulary
// (<jupyter_code>, <jupyter_output>), as Llama's <|python_tag|> or Mistral's [TOOL_CALLS] are of
// theirs: a model writes each as one token, which renders as no text unless asked for.
std::string ControlTokenTemplate() {
  std::string t = Template("Qwen-Qwen2.5-7B-Instruct");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"</tool_call>", "<jupyter_output>"},
                                 std::pair<std::string, std::string>{"<tool_call>", "<jupyter_code>"}}) {
    for (size_t at = t.find(from); at != std::string::npos; at = t.find(from, at + to.size())) t.replace(at, from.size(), to);
  }
  return t;
}

int32_t TokenId(zf_model* m, const char* text) {
  int32_t ids[4];
  size_t n = 0;
  EXPECT_EQ(zf_tokenize(m, text, std::strlen(text), ZF_TOKENIZE_PARSE_SPECIAL, ids, 4, &n), ZF_OK) << zf_last_error();
  return n == 1 ? ids[0] : -1;
}

std::string Generate(zf_model* m, const std::string& prompt, const std::string& grammar, const char* trigger,
                     int32_t max_tokens = 96) {
  SessionPtr s = NewSession(m, 1024);
  zf_generate_params g = Greedy(max_tokens);
  g.constraint_kind = ZF_CONSTRAINT_LARK;
  g.constraint = grammar.c_str();
  g.constraint_trigger = trigger;
  Pushed p;
  zf_generate_result r{};
  r.struct_size = sizeof r;
  EXPECT_EQ(zf_generate(s.get(), prompt.data(), prompt.size(), &g, CollectPieces, &p, &r), ZF_OK) << zf_last_error();
  std::string text;
  for (const std::string& piece : p.pieces) text += piece;
  return text;
}

// The prompt of one user message under `tmpl` with `tools` offered (the assistant's turn opened).
std::string UserPrompt(zf_model* m, const std::string& tmpl, const char* tools, const char* content) {
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.template_text = tmpl.c_str();
  p.tools_json = tools;
  p.flags = ZF_CHAT_ADD_ASSISTANT;
  zf_chat_message_v2 user{};
  user.struct_size = sizeof user;
  user.role = "user";
  user.content = content;
  size_t needed = 0;
  EXPECT_EQ(zf_chat_apply_template_v2(m, &user, 1, &p, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  std::vector<char> buf(needed);
  EXPECT_EQ(zf_chat_apply_template_v2(m, &user, 1, &p, buf.data(), buf.size(), &needed), ZF_OK) << zf_last_error();
  return needed > 0 ? std::string(buf.data(), needed - 1) : std::string();
}

}  // namespace

// Call markers that are control tokens: the grammar references them by id (a text literal would
// never match the token), a constrained model writes them as those tokens, the output shows
// them, the parser reads the call back; a lazy constraint arms on the one trigger token.
TEST(ChatParseControlTokens, MarkersAreTheirTokensInGrammarOutputAndTrigger) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  if (zf_constraint_check(m.get(), ZF_CONSTRAINT_REGEX, "a") != ZF_OK) GTEST_SKIP() << "built without constraints";
  const int32_t open = TokenId(m.get(), "<jupyter_code>"), close = TokenId(m.get(), "<jupyter_output>");
  ASSERT_GE(open, 0);
  ASSERT_GE(close, 0);
  const std::string tmpl = ControlTokenTemplate();
  zf_status st;
  const Json g = ToolGrammar(m.get(), tmpl, kTools, ZF_CHAT_ONE_CALL, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_TRUE(g["native"].get<bool>());
  EXPECT_EQ(g["trigger"], "<jupyter_code>");
  const std::string grammar = g["grammar"], lazy = g["lazy_grammar"];
  const std::string open_ref = "<[" + std::to_string(open) + "]>", close_ref = "<[" + std::to_string(close) + "]>";
  EXPECT_NE(grammar.find(open_ref), std::string::npos) << grammar;
  EXPECT_NE(grammar.find(close_ref), std::string::npos) << grammar;
  EXPECT_EQ(grammar.find("\"<jupyter_code>"), std::string::npos) << grammar;
  EXPECT_EQ(lazy.rfind("start: " + open_ref, 0), 0u) << lazy;

  // tool_choice "required": the whole turn is the call.
  const std::string prompt = UserPrompt(m.get(), tmpl, kTools, "What is the weather in Paris?");
  std::string text = Generate(m.get(), prompt, grammar, nullptr);
  EXPECT_EQ(text.rfind("<jupyter_code>", 0), 0u) << text;
  Json msg = Parse(m.get(), text, tmpl, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << text;
  const std::string name = msg["tool_calls"][0]["function"]["name"];
  EXPECT_TRUE(name == "get_weather" || name == "search") << name;
  EXPECT_TRUE(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()).is_object());

  // tool_choice "auto" in the generator: free text until the trigger appears, here a control token
  // the model writes next (<|im_start|> after a finished user turn); from that token on the
  // output is constrained and shows the token.
  const std::string lark = "start: <[" + std::to_string(TokenId(m.get(), "<|im_start|>")) +
                           "]> \"assistant\\n\" NUM\nNUM: /[0-9]{3}/\n";
  text = Generate(m.get(), "<|im_start|>user\nHi<|im_end|>\n", lark, "<|im_start|>");
  EXPECT_TRUE(std::regex_match(text, std::regex("<\\|im_start\\|>assistant\n[0-9]{3}"))) << text;
}

// gpt-oss's harmony: `required` writes the model's own commentary message to the function, which
// the harmony parser reads back (SmolLM2's vocabulary has no harmony tokens: the markers are text).
TEST(ChatParseControlTokens, HarmonyRequiredCallIsParsedBack) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  if (zf_constraint_check(m.get(), ZF_CONSTRAINT_REGEX, "a") != ZF_OK) GTEST_SKIP() << "built without constraints";
  const std::string tmpl = Template("openai-gpt-oss-120b");
  zf_status st;
  const Json g = ToolGrammar(m.get(), tmpl, kTools, ZF_CHAT_ONE_CALL, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_TRUE(g["native"].get<bool>());
  EXPECT_EQ(g["trigger"], "to=functions.");
  const std::string grammar = g["grammar"];
  EXPECT_EQ(zf_constraint_check(m.get(), ZF_CONSTRAINT_LARK, std::string(g["lazy_grammar"]).c_str()), ZF_OK) << zf_last_error();
  const std::string text = Generate(m.get(), "<|im_start|>user\nWeather in Oslo?<|im_end|>\n<|im_start|>assistant\n", grammar, nullptr);
  EXPECT_EQ(text.rfind("<|channel|>commentary to=functions.", 0), 0u) << text;
  const Json msg = Parse(m.get(), text, tmpl, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << text;
  EXPECT_TRUE(Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()).is_object()) << text;
}

namespace {

// Tools whose parameters use every kind of value the literal syntaxes write.
const char* kRichTools = R"([{"type": "function", "function": {"name": "book_hotel", "parameters": {"type": "object",
  "properties": {"city": {"type": "string", "maxLength": 24}, "nights": {"type": "integer"}, "pets": {"type": "boolean"},
    "room": {"enum": ["single", "double"]}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
    "budget": {"type": "object", "properties": {"max": {"type": "number"}}, "required": ["max"]}},
  "required": ["city", "nights", "room", "budget"]}}}])";

// `required` under `tmpl`: the grammar's greedy output, parsed back with the same template.
Json RequiredCall(zf_model* m, const std::string& tmpl, std::string* text) {
  zf_status st;
  const Json g = ToolGrammar(m, tmpl, kRichTools, ZF_CHAT_ONE_CALL, &st);
  EXPECT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_TRUE(g["native"].get<bool>()) << tmpl.substr(0, 80);
  const std::string grammar = g["grammar"];
  EXPECT_EQ(zf_constraint_check(m, ZF_CONSTRAINT_LARK, grammar.c_str()), ZF_OK) << zf_last_error() << "\n" << grammar;
  *text = Generate(m, UserPrompt(m, tmpl, kRichTools, "Book a double room in Lisbon for 3 nights, budget 200."), grammar,
                   nullptr, 256);
  const Json msg = Parse(m, *text, tmpl, &st, kRichTools);
  EXPECT_EQ(st, ZF_OK) << zf_last_error();
  return msg;
}

// The arguments have the schema's shape (jsonschema checks the served ones in tests/serve).
void ExpectBookingArgs(const Json& msg, const std::string& text) {
  ASSERT_EQ(msg.value("tool_calls", Json::array()).size(), 1u) << text;
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "book_hotel") << text;
  const Json a = Json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(a["city"].is_string() && a["city"].get<std::string>().size() <= 24) << text;
  EXPECT_TRUE(a["nights"].is_number_integer()) << text;
  EXPECT_TRUE(a["room"] == "single" || a["room"] == "double") << text;
  ASSERT_TRUE(a["budget"].is_object()) << text;
  EXPECT_TRUE(a["budget"]["max"].is_number()) << text;
  if (a.contains("pets")) EXPECT_TRUE(a["pets"].is_boolean()) << text;
  if (a.contains("tags")) {
    EXPECT_TRUE(a["tags"].is_array()) << text;
    EXPECT_LE(a["tags"].size(), 3u) << text;
  }
}

}  // namespace

// Gemma 4's object literal and LFM2.5's Python call: `required` constrains the arguments in the
// template's own syntax, typed by the tool's schema, and the parser reads them back.
TEST(ChatParseControlTokens, LiteralArgumentSyntaxesFollowTheSchema) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  if (zf_constraint_check(m.get(), ZF_CONSTRAINT_REGEX, "a") != ZF_OK) GTEST_SKIP() << "built without constraints";
  std::string text;
  const std::string gemma4 = Template("google-gemma-4-31B-it");
  Json msg = RequiredCall(m.get(), gemma4, &text);
  EXPECT_NE(text.find("call:book_hotel{"), std::string::npos) << text;
  ExpectBookingArgs(msg, text);
  // The same with its string quote and call opener control tokens (as <|"|> and <|tool_call> are
  // in Gemma 4's vocabulary): "auto" then arms on the opener token alone.
  std::string quoted = gemma4;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"<|\"|>", "<jupyter_text>"},
                                 std::pair<std::string, std::string>{"<|tool_call>", "<jupyter_code>"}}) {
    for (size_t at = quoted.find(from); at != std::string::npos; at = quoted.find(from, at)) quoted.replace(at, from.size(), to);
  }
  msg = RequiredCall(m.get(), quoted, &text);
  EXPECT_NE(text.find("<jupyter_code>call:book_hotel{city:<jupyter_text>"), std::string::npos) << text;
  ExpectBookingArgs(msg, text);
  zf_status st;
  const Json g = ToolGrammar(m.get(), quoted, kRichTools, 0, &st);
  EXPECT_EQ(g["trigger"], "<jupyter_code>");
  EXPECT_EQ(std::string(g["lazy_grammar"]).rfind("start: <[" + std::to_string(TokenId(m.get(), "<jupyter_code>")) + "]> \"call:", 0), 0u)
      << g["lazy_grammar"];
  msg = RequiredCall(m.get(), Template("LFM2.5-8B-A1B"), &text);
  EXPECT_NE(text.find("book_hotel(city='"), std::string::npos) << text;
  ExpectBookingArgs(msg, text);
}

namespace {

// zf_chat_apply_template_v2's text for `msgs` (flags: ZF_CHAT_ADD_ASSISTANT), or "" with *st.
std::string ApplyV2(zf_model* m, const std::vector<zf_chat_message_v2>& msgs, const std::string& tmpl, zf_status* st,
                    const char* tools = kTools) {
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.flags = ZF_CHAT_ADD_ASSISTANT;
  p.template_text = tmpl.empty() ? nullptr : tmpl.c_str();
  p.tools_json = tools;
  size_t needed = 0;
  *st = zf_chat_apply_template_v2(m, msgs.data(), msgs.size(), &p, nullptr, 0, &needed);
  if (*st != ZF_ERR_BUFFER_TOO_SMALL) return "";
  std::vector<char> buf(needed);
  *st = zf_chat_apply_template_v2(m, msgs.data(), msgs.size(), &p, buf.data(), buf.size(), &needed);
  return *st == ZF_OK ? std::string(buf.data(), needed - 1) : "";
}

zf_chat_message_v2 Message(const char* role, const char* content) {
  zf_chat_message_v2 m{};
  m.struct_size = sizeof m;
  m.role = role;
  m.content = content;
  return m;
}

// The tool-call follow-up every OpenAI client sends (the call turn with content null, then the
// tool's result): on a template without tool syntax the calls are written into the content as
// the generic JSON form (which the parse reads back), the result as the template shows any role.
TEST_F(ChatParse, ToolTurnsOnTemplatesWithoutToolSyntax) {
  std::vector<zf_chat_message_v2> msgs = {Message("user", "Weather in Paris?"), Message("assistant", nullptr),
                                          Message("tool", "{\"temp_c\": 21}"), Message("user", "What should I wear?")};
  msgs[1].tool_calls_json =
      R"([{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}])";
  msgs[2].tool_call_id = "call_1";
  zf_status st;
  // SmolLM2's own template concatenates the content ('str' + None fails in jinja2 as here).
  std::string out = ApplyV2(model_.get(), msgs, "", &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_EQ(out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}<|im_end|>\n"
            "<|im_start|>tool\n{\"temp_c\": 21}<|im_end|>\n"
            "<|im_start|>user\nWhat should I wear?<|im_end|>\n<|im_start|>assistant\n");
  // What the history shows is what the parse reads as a call.
  Json msg = Parse(model_.get(), "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}", "", &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");

  // Content next to several calls; no tools offered at all.
  msgs[1].content = "Checking.";
  msgs[1].tool_calls_json = R"([{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"type": "function", "function": {"name": "search", "arguments": {"q": "caf\u00e9"}}}])";
  out = ApplyV2(model_.get(), msgs, "", &st, nullptr);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_NE(out.find("<|im_start|>assistant\nChecking.\n[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}},"
                     "{\"name\":\"search\",\"arguments\":{\"q\":\"caf\xc3\xa9\"}}]<|im_end|>"),
            std::string::npos)
      << out;

  // Gemma 2 renders no tool role (its roles must alternate): the results and the user's next
  // message are one user turn.
  msgs[1].content = nullptr;
  msgs[2].name = "get_weather";
  out = ApplyV2(model_.get(), msgs, Template("google-gemma-2-2b-it"), &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_NE(out.find("<start_of_turn>model\n[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}},{\"name\":\"search\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("<start_of_turn>user\n{\"tool_response\":{\"name\":\"get_weather\",\"tool_call_id\":\"call_1\","
                     "\"content\":\"{\\\"temp_c\\\": 21}\"}}\n\nWhat should I wear?<end_of_turn>\n<start_of_turn>model\n"),
            std::string::npos)
      << out;

  // Templates with tool syntax render the turn as they always did (content null kept).
  out = ApplyV2(model_.get(), msgs, Template("Qwen-Qwen2.5-7B-Instruct"), &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_NE(out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"), std::string::npos)
      << out;
  EXPECT_NE(out.find("<tool_response>\n{\"temp_c\": 21}\n</tool_response>"), std::string::npos) << out;
  EXPECT_EQ(out.find("tool_response\":"), std::string::npos) << out;
}

}  // namespace

namespace {

// A tool whose parameters are not a JSON Schema is refused where tools become a prompt or a
// grammar, naming the tool and the place.
TEST_F(ChatParse, InvalidToolParametersAreRefused) {
  const std::vector<zf_chat_message_v2> msgs = {Message("user", "hi")};
  const std::string hermes = Template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use");
  struct Bad {
    const char* tools;
    const char* error;
  };
  for (const Bad& b : {
           Bad{R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "nonsense"}}}])",
               "params->tools_json[0] ('f'): parameters.type: 'nonsense' is not a JSON Schema type"},
           Bad{R"([{"type": "function", "function": {"name": "ok"}}, {"type": "function", "function": {"name": "g",
               "parameters": {"type": "object", "properties": {"a": {"type": ["string", "text"]}}}}}])",
               "params->tools_json[1] ('g'): parameters.properties.a.type: \"text\" is not a JSON Schema type"},
           Bad{R"([{"type": "function", "function": {"name": "h", "parameters": {"type": "object", "properties": {"a": 3}}}}])",
               "params->tools_json[0] ('h'): parameters.properties.a: a schema must be an object or a boolean"},
           Bad{R"([{"type": "function", "function": {"name": "i", "parameters": {"type": "object", "required": "a"}}}])",
               "params->tools_json[0] ('i'): parameters.required: must be a list of property names"},
           Bad{R"([{"type": "function", "function": {"name": "j", "parameters": {"anyOf": []}}}])",
               "params->tools_json[0] ('j'): parameters.anyOf: must be a non-empty list of schemas"},
           Bad{R"([{"type": "function", "function": {"name": "k", "parameters": {"type": "object", "properties":
               {"a": {"type": "array", "items": {"type": 7}}}}}}])",
               "params->tools_json[0] ('k'): parameters.properties.a.items.type: 7 is not a JSON Schema type"},
       }) {
    SCOPED_TRACE(b.tools);
    zf_status st;
    for (const std::string& tmpl : {std::string(), hermes}) {
      ApplyV2(model_.get(), msgs, tmpl, &st, b.tools);
      EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(zf_last_error()), b.error);
      zf_chat_params p;
      zf_chat_params_init(&p, sizeof p);
      p.template_text = tmpl.empty() ? nullptr : tmpl.c_str();
      p.tools_json = b.tools;
      size_t needed = 0;
      EXPECT_EQ(zf_chat_tool_grammar(model_.get(), &p, nullptr, 0, &needed), ZF_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(zf_last_error()), b.error);
    }
  }
  // Sound schemas of every shape pass: type lists, nested items, anyOf, boolean schemas, $defs.
  const char* good = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "array", "items": {"type": "integer"}},
    "c": {"anyOf": [{"type": "number"}, {"type": "string"}]}, "e": true, "g": {"enum": [1, "x"]}},
    "required": ["a"], "additionalProperties": false, "$defs": {"d": {"type": "boolean"}}}}},
    {"type": "function", "function": {"name": "no_params"}}])";
  zf_status st;
  const std::string qwen = Template("Qwen-Qwen2.5-7B-Instruct");  // writes the tools as JSON
  ApplyV2(model_.get(), msgs, qwen, &st, good);
  EXPECT_EQ(st, ZF_OK) << zf_last_error();
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.template_text = qwen.c_str();
  p.tools_json = good;
  size_t needed = 0;
  EXPECT_EQ(zf_chat_tool_grammar(model_.get(), &p, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
}

}  // namespace

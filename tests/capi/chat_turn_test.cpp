// zf_chat_turn through libzerfoo.so on SmolLM2: typed events that concatenate to the final
// message, the tool-choice policy (required, named, auto, none), reasoning, response_format,
// reuse of the session's conversation, the callback form, errors; and the per-model chat-format
// cache (two models sharing a template text but not their BOS/EOS text).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers
using Json = nlohmann::ordered_json;

// The signatures the ABI promises.
[[maybe_unused]] constexpr zf_status (*kBegin)(zf_session*, const zf_turn_params*, zf_turn**) = &zf_chat_turn_begin;
[[maybe_unused]] constexpr zf_status (*kNext)(zf_turn*, zf_turn_event*) = &zf_chat_turn_next;
[[maybe_unused]] constexpr zf_status (*kTurn)(zf_session*, const zf_turn_params*, zf_turn_cb, void*, zf_turn**) =
    &zf_chat_turn;

struct TurnDeleter {
  void operator()(zf_turn* t) const { zf_chat_turn_free(t); }
};
using TurnPtr = std::unique_ptr<zf_turn, TurnDeleter>;

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
   "days": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "search", "description": "Search the web",
   "parameters": {"type": "object", "properties": {"q": {"type": "string", "enum": ["news", "maps"]}},
   "required": ["q"]}}}])");

// What the events of one turn said, put together per kind.
struct Collected {
  std::string content, reasoning;
  struct Call {
    std::string id, name, args;
  };
  std::vector<Call> calls;
  std::vector<int32_t> kinds;
  zf_turn_event done{};
  size_t n_logprob_entries = 0;
  Json message;  // zf_chat_turn_message
};

void Add(const zf_turn_event& e, Collected* c) {
  c->kinds.push_back(e.kind);
  c->n_logprob_entries += e.n_logprobs;
  const std::string text = e.text != nullptr ? std::string(e.text, e.text_len) : std::string();
  switch (e.kind) {
    case ZF_TURN_CONTENT: c->content += text; break;
    case ZF_TURN_REASONING: c->reasoning += text; break;
    case ZF_TURN_TOOL_CALL:
      ASSERT_EQ(size_t(e.tool_index), c->calls.size()) << "calls begin in index order";
      c->calls.push_back({e.tool_id, e.tool_name, ""});
      break;
    case ZF_TURN_TOOL_ARGS:
      ASSERT_LT(size_t(e.tool_index), c->calls.size()) << "arguments after their call began";
      c->calls[size_t(e.tool_index)].args += text;
      break;
    case ZF_TURN_DONE: c->done = e; break;
    default: break;
  }
}

std::string MessageOf(const zf_turn* t) {
  size_t needed = 0;
  EXPECT_EQ(zf_chat_turn_message(t, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  std::string out(needed, '\0');
  EXPECT_EQ(zf_chat_turn_message(t, out.data(), out.size(), &needed), ZF_OK) << zf_last_error();
  out.resize(needed - 1);
  return out;
}

// Runs a turn with the pull API; the status of begin goes to *st (ZF_OK: the whole turn ran).
Collected RunTurn(zf_session* s, const Json& request, const zf_generate_params& g, zf_status* st = nullptr,
              const char* template_text = nullptr) {
  const std::string req = request.dump();
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  p.generate = &g;
  p.template_text = template_text;
  zf_turn* raw = nullptr;
  const zf_status begun = zf_chat_turn_begin(s, &p, &raw);
  if (st != nullptr) *st = begun;
  Collected c;
  if (begun != ZF_OK) {
    EXPECT_EQ(raw, nullptr);
    return c;
  }
  TurnPtr t(raw);
  for (int i = 0; i < 100000; ++i) {
    zf_turn_event e;
    e.struct_size = sizeof e;
    EXPECT_EQ(zf_chat_turn_next(t.get(), &e), ZF_OK) << zf_last_error();
    Add(e, &c);
    if (e.kind == ZF_TURN_DONE) break;
  }
  zf_turn_event again;
  again.struct_size = sizeof again;
  EXPECT_EQ(zf_chat_turn_next(t.get(), &again), ZF_OK);
  EXPECT_EQ(again.kind, ZF_TURN_DONE) << "DONE repeats";
  c.message = Json::parse(MessageOf(t.get()));
  return c;
}

// The events, concatenated, are the final message.
void ExpectEventsAreTheMessage(const Collected& c) {
  const Json& m = c.message;
  EXPECT_EQ(m["role"], "assistant");
  if (c.calls.empty()) {
    EXPECT_EQ(m["content"], c.content);
    EXPECT_FALSE(m.contains("tool_calls"));
  } else {
    EXPECT_EQ(m["content"].is_null() ? std::string() : m["content"].get<std::string>(), c.content);
    ASSERT_EQ(m["tool_calls"].size(), c.calls.size()) << m.dump();
    for (size_t i = 0; i < c.calls.size(); ++i) {
      EXPECT_EQ(m["tool_calls"][i]["id"], c.calls[i].id);
      EXPECT_EQ(m["tool_calls"][i]["function"]["name"], c.calls[i].name);
      EXPECT_EQ(m["tool_calls"][i]["function"]["arguments"], c.calls[i].args);
    }
  }
  EXPECT_EQ(m.value("reasoning_content", std::string()), c.reasoning);
  ASSERT_FALSE(c.kinds.empty());
  EXPECT_EQ(c.kinds.back(), ZF_TURN_DONE);
}

Json Ask(const std::string& text) { return Json::array({{{"role", "user"}, {"content", text}}}); }

class ChatTurn : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = zf::testing::ModelPath("smollm2");
    if (path.empty()) GTEST_SKIP() << "SmolLM2 not found (scripts/fetch_models.sh)";
    model_ = Load(path);
  }
  ModelPtr model_;
};

TEST_F(ChatTurn, PlainAnswerIsWhatGenerateWritesForTheRenderedPrompt) {
  SessionPtr s = NewSession(model_.get());
  const zf_generate_params g = Greedy(12);
  Collected c = RunTurn(s.get(), {{"messages", Ask("Describe the sea in three long sentences.")}}, g);
  ExpectEventsAreTheMessage(c);
  EXPECT_EQ(c.done.finish_reason, ZF_FINISH_LENGTH);
  EXPECT_EQ(c.done.stop_reason, ZF_STOP_MAX_TOKENS);
  EXPECT_EQ(c.done.n_generated, 12);
  EXPECT_GT(c.done.n_prompt, 5);
  EXPECT_EQ(c.done.n_cached, 0);

  // The reference: the same prompt rendered by zf_chat_apply_template_v2 and generated.
  zf_chat_message_v2 msg;
  std::memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = "user";
  msg.content = "Describe the sea in three long sentences.";
  zf_chat_params cp;
  zf_chat_params_init(&cp, sizeof cp);
  cp.flags = ZF_CHAT_ADD_ASSISTANT;
  std::string prompt(4096, '\0');
  size_t needed = 0;
  ASSERT_EQ(zf_chat_apply_template_v2(model_.get(), &msg, 1, &cp, prompt.data(), prompt.size(), &needed), ZF_OK);
  prompt.resize(needed - 1);
  SessionPtr ref = NewSession(model_.get());
  Pushed pushed;
  ASSERT_EQ(zf_generate(ref.get(), prompt.data(), prompt.size(), &g, CollectPieces, &pushed, nullptr), ZF_OK);
  std::string text;
  for (const std::string& p : pushed.pieces) text += p;
  EXPECT_EQ(c.content, text);
}

std::string TurnPrompt(const zf_model* m, const Json& request, zf_status* st) {
  const std::string req = request.dump();
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  size_t needed = 0;
  *st = zf_chat_turn_prompt(m, &p, nullptr, 0, &needed);
  if (*st != ZF_ERR_BUFFER_TOO_SMALL) return std::string();
  std::string out(needed, '\0');
  *st = zf_chat_turn_prompt(m, &p, out.data(), out.size(), &needed);
  out.resize(needed - 1);
  return out;
}

TEST_F(ChatTurn, PromptIsTheRenderedTemplateWithTheToolsTheTurnShows) {
  // The same text zf_chat_apply_template_v2 renders for the conversation and tools.
  zf_chat_message_v2 msg;
  std::memset(&msg, 0, sizeof msg);
  msg.struct_size = sizeof msg;
  msg.role = "user";
  msg.content = "Hi there";
  const std::string tools = kTools.dump();
  zf_chat_params cp;
  zf_chat_params_init(&cp, sizeof cp);
  cp.flags = ZF_CHAT_ADD_ASSISTANT;
  cp.tools_json = tools.c_str();
  std::string ref(8192, '\0');
  size_t needed = 0;
  ASSERT_EQ(zf_chat_apply_template_v2(model_.get(), &msg, 1, &cp, ref.data(), ref.size(), &needed), ZF_OK);
  ref.resize(needed - 1);
  zf_status st = ZF_OK;
  EXPECT_EQ(TurnPrompt(model_.get(), {{"messages", Ask("Hi there")}, {"tools", kTools}}, &st), ref);
  EXPECT_EQ(st, ZF_OK) << zf_last_error();
  // A named tool_choice shows that tool only; a bad request fails as zf_chat_turn_begin does.
  const std::string named = TurnPrompt(model_.get(), {{"messages", Ask("Hi there")}, {"tools", kTools},
      {"tool_choice", {{"type", "function"}, {"function", {{"name", "search"}}}}}}, &st);
  ASSERT_EQ(st, ZF_OK);
  EXPECT_EQ(named.find("get_weather"), std::string::npos);
  TurnPrompt(model_.get(), {{"messages", "x"}}, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
}

TEST_F(ChatTurn, RequiredToolChoiceCallsAnOfferedToolWithValidArguments) {
  SessionPtr s = NewSession(model_.get());
  Collected c = RunTurn(s.get(), {{"messages", Ask("What is the weather in Paris for 3 days?")}, {"tools", kTools},
                              {"tool_choice", "required"}}, Greedy(96));
  ExpectEventsAreTheMessage(c);
  ASSERT_FALSE(c.calls.empty()) << c.message.dump();
  EXPECT_EQ(c.done.finish_reason, ZF_FINISH_TOOL_CALLS);
  for (const auto& call : c.calls) {
    const Json args = Json::parse(call.args);
    if (call.name == "get_weather") {
      EXPECT_TRUE(args.contains("city") && args.contains("days")) << call.args;
    } else {
      EXPECT_EQ(call.name, "search");
      EXPECT_TRUE(args.contains("q")) << call.args;
    }
    EXPECT_FALSE(call.id.empty());
  }
}

TEST_F(ChatTurn, NamedToolChoiceCallsThatFunctionOnly) {
  SessionPtr s = NewSession(model_.get());
  Collected c = RunTurn(s.get(), {{"messages", Ask("What is the weather in Paris?")}, {"tools", kTools},
                              {"tool_choice", {{"type", "function"}, {"function", {{"name", "search"}}}}},
                              {"parallel_tool_calls", false}}, Greedy(64));
  ExpectEventsAreTheMessage(c);
  ASSERT_EQ(c.calls.size(), 1u) << c.message.dump();
  EXPECT_EQ(c.calls[0].name, "search");
  EXPECT_TRUE(Json::parse(c.calls[0].args).contains("q"));
}

TEST_F(ChatTurn, AutoAndNoneGiveValidTurns) {
  SessionPtr s = NewSession(model_.get());
  Collected a = RunTurn(s.get(), {{"messages", Ask("Say hello.")}, {"tools", kTools}}, Greedy(32));
  ExpectEventsAreTheMessage(a);
  Collected n = RunTurn(s.get(), {{"messages", Ask("Say hello.")}, {"tools", kTools}, {"tool_choice", "none"}}, Greedy(32));
  ExpectEventsAreTheMessage(n);
  EXPECT_TRUE(n.calls.empty());
}

TEST_F(ChatTurn, ReasoningAndContentArriveAsTheirOwnEvents) {
  // A ChatML template that writes reasoning between <think> tags, and a regex that makes the
  // model write some.
  const std::string tmpl =
      "{%- for m in messages -%}{{ '<|im_start|>' + m.role + '\\n' }}{%- if m.reasoning_content -%}"
      "{{ '<think>' + m.reasoning_content + '</think>' }}{%- endif -%}{{ m.content + '<|im_end|>\\n' }}"
      "{%- endfor -%}{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";
  SessionPtr s = NewSession(model_.get());
  zf_generate_params g = Greedy(64);
  g.constraint_kind = ZF_CONSTRAINT_REGEX;
  g.constraint = "<think>[a-z ]{5,30}</think>[A-Za-z ]{5,30}";
  Collected c = RunTurn(s.get(), {{"messages", Ask("Think, then answer: what is blue?")}}, g, nullptr, tmpl.c_str());
  ExpectEventsAreTheMessage(c);
  EXPECT_GE(c.reasoning.size(), 5u) << c.message.dump();
  EXPECT_GE(c.content.size(), 1u) << c.message.dump();
  EXPECT_NE(std::find(c.kinds.begin(), c.kinds.end(), ZF_TURN_REASONING), c.kinds.end());

  // reasoning_format "none": the text as generated is the content.
  SessionPtr s2 = NewSession(model_.get());
  Collected raw = RunTurn(s2.get(), {{"messages", Ask("Think, then answer: what is blue?")}, {"reasoning_format", "none"}},
                      g, nullptr, tmpl.c_str());
  ExpectEventsAreTheMessage(raw);
  EXPECT_EQ(raw.content.rfind("<think>", 0), 0u) << raw.content;
}

// A final assistant message is continued (the reference's assistant prefill): the prompt is the
// conversation before it, the generation prompt and the message's text; the answer is what the
// model writes from there, as `generate` writes it for that prompt.
TEST_F(ChatTurn, FinalAssistantMessageIsContinued) {
  const Json conv = Ask("What is the capital of France?");
  zf_status st = ZF_OK;
  const std::string turn = TurnPrompt(model_.get(), {{"messages", conv}}, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  Json with_prefill = conv;
  with_prefill.push_back({{"role", "assistant"}, {"content", "The capital of France is"}});
  const std::string prompt = TurnPrompt(model_.get(), {{"messages", with_prefill}}, &st);
  ASSERT_EQ(st, ZF_OK) << zf_last_error();
  EXPECT_EQ(prompt, turn + "The capital of France is");

  const zf_generate_params g = Greedy(8);
  SessionPtr s = NewSession(model_.get());
  Collected c = RunTurn(s.get(), {{"messages", with_prefill}}, g);
  ExpectEventsAreTheMessage(c);
  SessionPtr ref = NewSession(model_.get());
  Pushed pushed;
  ASSERT_EQ(zf_generate(ref.get(), prompt.data(), prompt.size(), &g, CollectPieces, &pushed, nullptr), ZF_OK);
  std::string text;
  for (const std::string& p : pushed.pieces) text += p;
  EXPECT_EQ(c.content, text);

  // continue_final_message false: a new turn after the assistant message instead.
  const std::string fresh =
      TurnPrompt(model_.get(), {{"messages", with_prefill}, {"continue_final_message", false}}, &st);
  ASSERT_EQ(st, ZF_OK);
  EXPECT_NE(fresh, prompt);
  EXPECT_EQ(fresh.rfind(turn.substr(0, turn.size() - 10), 0), 0u) << fresh;

  // Reasoning templates: the reasoning is closed before continued content, or continued itself.
  const std::string tmpl =
      "{%- for m in messages -%}{{ '<|im_start|>' + m.role + '\\n' }}{%- if m.reasoning_content -%}"
      "{{ '<think>' + m.reasoning_content + '</think>' }}{%- endif -%}{{ m.content + '<|im_end|>\\n' }}"
      "{%- endfor -%}{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";
  zf_turn_params p;
  auto render = [&](const Json& request) {
    const std::string req = request.dump();
    zf_turn_params_init(&p, sizeof p);
    p.request_json = req.c_str();
    p.template_text = tmpl.c_str();
    std::string out(8192, '\0');
    size_t needed = 0;
    EXPECT_EQ(zf_chat_turn_prompt(model_.get(), &p, out.data(), out.size(), &needed), ZF_OK) << zf_last_error();
    out.resize(needed > 0 ? needed - 1 : 0);
    return out;
  };
  Json think = conv;
  think.push_back({{"role", "assistant"}, {"reasoning_content", "France is in Europe."}, {"content", nullptr}});
  const std::string head = render({{"messages", conv}});
  EXPECT_EQ(render({{"messages", think}}), head + "<think>France is in Europe.");
  think.back()["content"] = "Paris";
  EXPECT_EQ(render({{"messages", think}}), head + "<think>France is in Europe.</think>Paris");
  // The model goes on inside the reasoning: its text arrives as reasoning until it closes it.
  think.back()["content"] = nullptr;
  zf_generate_params gr = Greedy(48);
  gr.constraint_kind = ZF_CONSTRAINT_REGEX;
  gr.constraint = " [a-z ]{3,20}</think>[A-Za-z ]{3,20}";
  SessionPtr s2 = NewSession(model_.get());
  Collected r = RunTurn(s2.get(), {{"messages", think}}, gr, nullptr, tmpl.c_str());
  ExpectEventsAreTheMessage(r);
  EXPECT_GE(r.reasoning.size(), 3u) << r.message.dump();
  EXPECT_GE(r.content.size(), 3u) << r.message.dump();

  // What cannot be continued.
  Json two = with_prefill;
  two.push_back({{"role", "assistant"}, {"content", "Paris"}});
  TurnPrompt(model_.get(), {{"messages", two}}, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("two assistant messages"), std::string::npos) << zf_last_error();
  TurnPrompt(model_.get(), {{"messages", conv}, {"continue_final_message", true}}, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  Json calls = conv;
  calls.push_back({{"role", "assistant"},
                   {"content", nullptr},
                   {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}});
  TurnPrompt(model_.get(), {{"messages", calls}}, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("cannot be continued"), std::string::npos) << zf_last_error();
}

TEST_F(ChatTurn, ResponseFormatJsonSchema) {
  SessionPtr s = NewSession(model_.get());
  const Json schema = {{"type", "object"},
                       {"properties", {{"name", {{"type", "string"}, {"enum", {"Ann", "Bob"}}}}, {"age", {{"type", "integer"}}}}},
                       {"required", {"name", "age"}}};
  Collected c = RunTurn(s.get(), {{"messages", Ask("Invent a person.")},
                              {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}}}}}},
                    Greedy(64));
  ExpectEventsAreTheMessage(c);
  const Json out = Json::parse(c.content);
  EXPECT_TRUE(out["name"].is_string() && out["age"].is_number_integer()) << c.content;
  EXPECT_EQ(c.done.finish_reason, ZF_FINISH_STOP);
}

TEST_F(ChatTurn, NextTurnReusesTheConversationTheSessionHolds) {
  SessionPtr s = NewSession(model_.get(), 1024);
  Json messages = Ask("Name a fruit.");
  Collected first = RunTurn(s.get(), {{"messages", messages}}, Greedy(12));
  messages.push_back(first.message);
  messages.push_back({{"role", "user"}, {"content", "And a vegetable?"}});
  Collected second = RunTurn(s.get(), {{"messages", messages}}, Greedy(12));
  ExpectEventsAreTheMessage(second);
  // The first prompt at least is kept (the answer too, up to how the template re-renders it).
  EXPECT_GE(second.done.n_cached, first.done.n_prompt);
  EXPECT_LT(second.done.n_cached, second.done.n_prompt);

  // A fresh session gives the same answer with nothing cached (the model has no prefix cache
  // entries for it beyond... the cache is shared: only assert equal text).
  SessionPtr fresh = NewSession(model_.get(), 1024);
  Collected again = RunTurn(fresh.get(), {{"messages", messages}}, Greedy(12));
  EXPECT_EQ(again.content, second.content);
}

int32_t StopAfterTwo(void* user_data, const zf_turn_event* e) {
  auto* c = static_cast<Collected*>(user_data);
  Add(*e, c);
  return c->kinds.size() >= 2 ? 1 : 0;
}

int32_t CollectAll(void* user_data, const zf_turn_event* e) {
  Add(*e, static_cast<Collected*>(user_data));
  return 0;
}

TEST_F(ChatTurn, CallbackFormEqualsPullAndCanStop) {
  const std::string req = Json{{"messages", Ask("Count to five.")}}.dump();
  const zf_generate_params g = Greedy(20);
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  p.generate = &g;
  SessionPtr s = NewSession(model_.get());
  Collected cb;
  zf_turn* raw = nullptr;
  ASSERT_EQ(zf_chat_turn(s.get(), &p, CollectAll, &cb, &raw), ZF_OK) << zf_last_error();
  TurnPtr t(raw);
  cb.message = Json::parse(MessageOf(t.get()));
  ExpectEventsAreTheMessage(cb);
  t.reset();
  SessionPtr s2 = NewSession(model_.get());
  Collected pulled = RunTurn(s2.get(), {{"messages", Ask("Count to five.")}}, g);
  EXPECT_EQ(pulled.content, cb.content);
  EXPECT_EQ(pulled.kinds, cb.kinds);

  Collected stopped;
  SessionPtr s3 = NewSession(model_.get());
  ASSERT_EQ(zf_chat_turn(s3.get(), &p, StopAfterTwo, &stopped, nullptr), ZF_OK);
  EXPECT_EQ(stopped.done.kind, ZF_TURN_DONE);
  EXPECT_EQ(stopped.done.stop_reason, ZF_STOP_CALLBACK);
  EXPECT_LT(stopped.done.n_generated, 20);
  // The session is free again.
  Collected after = RunTurn(s3.get(), {{"messages", Ask("Count to five.")}}, g);
  ExpectEventsAreTheMessage(after);
}

TEST_F(ChatTurn, LogprobsCoverEveryGeneratedToken) {
  SessionPtr s = NewSession(model_.get());
  zf_generate_params g = Greedy(16);
  g.n_logprobs = 2;
  Collected c = RunTurn(s.get(), {{"messages", Ask("Name a color.")}}, g);
  EXPECT_EQ(c.n_logprob_entries, size_t(c.done.n_generated) * 3) << "chosen + 2 alternatives per token";
}

TEST_F(ChatTurn, BadRequestsFailNamingTheField) {
  SessionPtr s = NewSession(model_.get(), 64);
  const zf_generate_params g = Greedy(4);
  struct Case {
    std::string request;
    zf_status status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"{not json", ZF_ERR_INVALID_ARGUMENT, "malformed JSON"},
      {R"({"messages": "hi"})", ZF_ERR_INVALID_ARGUMENT, "request.messages"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", ZF_ERR_INVALID_ARGUMENT, "robot"},
      {Json{{"messages", Ask("x")}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}.dump(),
       ZF_ERR_INVALID_ARGUMENT, "nope"},
      {Json{{"messages", Ask("x")}, {"tool_choice", "required"}}.dump(), ZF_ERR_INVALID_ARGUMENT, "needs 'tools'"},
      {Json{{"messages", Ask("x")}, {"tools", kTools}, {"tool_choice", "required"},
            {"response_format", {{"type", "json_object"}}}}.dump(), ZF_ERR_INVALID_ARGUMENT, "both constrain"},
      {Json{{"messages", Ask("x")}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", 12}}}}}}}}.dump(),
       ZF_ERR_INVALID_ARGUMENT, "request.response_format"},
      {Json{{"messages", Ask(std::string(2000, 'a'))}}.dump(), ZF_ERR_CONTEXT_FULL, "context"},
      // Tool-call arguments are a JSON string in the request: their nesting is bounded too.
      {Json{{"messages", {{{"role", "user"}, {"content", "x"}},
                          {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {{{"id", "c1"}, {"type", "function"},
                            {"function", {{"name", "f"}, {"arguments", "{\"a\": " + std::string(100000, '[') +
                                                                       std::string(100000, ']') + "}"}}}}}}}}}}.dump(),
       ZF_ERR_INVALID_ARGUMENT, "deeper than"},
  };
  for (const Case& c : cases) {
    zf_turn_params p;
    zf_turn_params_init(&p, sizeof p);
    p.request_json = c.request.c_str();
    p.generate = &g;
    zf_turn* t = reinterpret_cast<zf_turn*>(&p);  // must be reset to NULL
    EXPECT_EQ(zf_chat_turn_begin(s.get(), &p, &t), c.status) << c.request;
    EXPECT_EQ(t, nullptr);
    EXPECT_NE(std::string(zf_last_error()).find(c.says), std::string::npos) << zf_last_error();
  }
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  zf_turn* t = nullptr;
  EXPECT_EQ(zf_chat_turn_begin(s.get(), &p, &t), ZF_ERR_INVALID_ARGUMENT);  // no request
  EXPECT_EQ(zf_chat_turn_begin(nullptr, &p, &t), ZF_ERR_INVALID_ARGUMENT);
  p.flags = 0x100;
  const std::string req = Json{{"messages", Ask("x")}}.dump();
  p.request_json = req.c_str();
  EXPECT_EQ(zf_chat_turn_begin(s.get(), &p, &t), ZF_ERR_INVALID_ARGUMENT);
  // Busy: a turn in progress keeps the session.
  p.flags = 0;
  p.generate = &g;
  ASSERT_EQ(zf_chat_turn_begin(s.get(), &p, &t), ZF_OK) << zf_last_error();
  TurnPtr running(t);
  zf_turn* other = nullptr;
  EXPECT_EQ(zf_chat_turn_begin(s.get(), &p, &other), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_reset(s.get()), ZF_ERR_INVALID_ARGUMENT);
  running.reset();
  EXPECT_EQ(zf_session_reset(s.get()), ZF_OK);
  zf_chat_turn_free(nullptr);
}

// fuzz_chat_turn's first finding: a template that writes bytes that are not UTF-8 gave
// zf_chat_turn_prompt a prompt (ZF_OK) that zf_chat_turn_begin then refused in the tokenizer;
// both now fail alike with ZF_ERR_INVALID_UTF8 before anything is evaluated.
TEST_F(ChatTurn, TemplateWritingInvalidUtf8FailsInPromptAsInBegin) {
  const std::string req = Json{{"messages", Ask("x")}}.dump();
  const char* tmpl = "{% for m in messages %}{{ m.content }}{% endfor %}<thin\xEB>";
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = req.c_str();
  p.template_text = tmpl;
  size_t needed = 0;
  EXPECT_EQ(zf_chat_turn_prompt(model_.get(), &p, nullptr, 0, &needed), ZF_ERR_INVALID_UTF8);
  EXPECT_NE(std::string(zf_last_error()).find("template"), std::string::npos) << zf_last_error();
  SessionPtr s = NewSession(model_.get());
  zf_turn* t = nullptr;
  EXPECT_EQ(zf_chat_turn_begin(s.get(), &p, &t), ZF_ERR_INVALID_UTF8);
  EXPECT_EQ(t, nullptr);
  // The same template with valid text renders and runs.
  p.template_text = "{% for m in messages %}{{ m.content }}{% endfor %}<think>";
  const zf_generate_params g = Greedy(2);
  p.generate = &g;
  ASSERT_EQ(zf_chat_turn_begin(s.get(), &p, &t), ZF_OK) << zf_last_error();
  zf_chat_turn_free(t);
}

// The chat-format cache belongs to the model: the same template text renders each model's own
// BOS/EOS text, so the markers it derives differ per model.
TEST(ChatFormatCache, TwoModelsSharingATemplateTextKeepTheirOwnMarkers) {
  const std::string smol = zf::testing::ModelPath("smollm2"), gemma = zf::testing::ModelPath("gemma3");
  if (smol.empty() || gemma.empty()) GTEST_SKIP() << "SmolLM2 and Gemma 3 needed (scripts/fetch_models.sh)";
  ModelPtr a = Load(smol, ZF_MODEL_VOCAB_ONLY), b = Load(gemma, ZF_MODEL_VOCAB_ONLY);
  // Reasoning between the model's BOS and EOS text.
  const std::string tmpl =
      "{%- for m in messages -%}{{ m.role + ': ' }}{%- if m.reasoning_content -%}{{ bos_token + m.reasoning_content + "
      "eos_token }}{%- endif -%}{{ m.content + '\\n' }}{%- endfor -%}{%- if add_generation_prompt -%}assistant: "
      "{%- endif -%}";
  auto parse = [&](const zf_model* m, const std::string& text) {
    zf_chat_params p;
    zf_chat_params_init(&p, sizeof p);
    p.template_text = tmpl.c_str();
    std::string out(1024, '\0');
    size_t needed = 0;
    EXPECT_EQ(zf_chat_parse(m, text.data(), text.size(), &p, out.data(), out.size(), &needed), ZF_OK) << zf_last_error();
    out.resize(needed - 1);
    return Json::parse(out);
  };
  auto special = [](const zf_model* m, bool bos) {
    zf_model_summary info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    EXPECT_EQ(zf_model_info(m, &info), ZF_OK);
    std::string piece(64, '\0');
    size_t n = 0;
    EXPECT_EQ(zf_token_to_piece(m, bos ? info.token_bos : info.token_eos, ZF_DETOKENIZE_RENDER_SPECIAL, piece.data(),
                                piece.size(), &n), ZF_OK);
    piece.resize(n);
    return piece;
  };
  for (const zf_model* m : {a.get(), b.get(), a.get()}) {
    const std::string open = special(m, true), close = special(m, false);
    ASSERT_NE(open, close);
    const Json msg = parse(m, open + "deep thought" + close + "The answer.");
    EXPECT_EQ(msg.value("reasoning_content", std::string()), "deep thought") << open << " " << close << " " << msg.dump();
    EXPECT_EQ(msg["content"], "The answer.") << msg.dump();
  }
}

}  // namespace

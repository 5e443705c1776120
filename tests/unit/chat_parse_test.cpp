// Chat output parsing (src/chat) over the template corpus: for every template of
// tests/data/chat_templates/templates, an assistant message rendered by the template and its
// turn's text parsed back with the format derived from that template must give the message back
// (content, reasoning, tool names, JSON-equal arguments), for plain answers, reasoning, one call,
// parallel calls with nested / unicode / quoted arguments, and text before a call.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"
#include "chat_corpus.h"
#include "jinja/jinja.h"

namespace {

using zf::chat::ChatFormat;
using zf::chat::ParseAssistant;
using namespace chat_corpus;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \n\t\r"), e = s.find_last_not_of(" \n\t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Compares a parsed message with the rendered one; returns "" or what differs.
std::string Diff(const zf::chat::ParsedMessage& got, const Case& c) {
  const Json& want = c.assistant;
  std::ostringstream d;
  if (Trim(got.content) != Trim(want["content"].get<std::string>())) d << "content '" << got.content << "'; ";
  if (c.reasoning && (!got.has_reasoning || got.reasoning != want["reasoning_content"].get<std::string>())) {
    d << "reasoning '" << got.reasoning << "'; ";
  }
  const size_t n = want.contains("tool_calls") ? want["tool_calls"].size() : 0;
  if (got.tool_calls.size() != n) {
    d << got.tool_calls.size() << " calls instead of " << n;
    return d.str();
  }
  for (size_t i = 0; i < n; ++i) {
    const Json& w = want["tool_calls"][i]["function"];
    if (got.tool_calls[i].name != w["name"]) d << "call " << i << " name '" << got.tool_calls[i].name << "'; ";
    // JSON-equal: key order aside (Gemma 4's template sorts the keys).
    const nlohmann::json args = nlohmann::json::parse(got.tool_calls[i].arguments, nullptr, false);
    if (args != nlohmann::json::parse(w["arguments"].dump())) d << "call " << i << " arguments " << got.tool_calls[i].arguments << "; ";
  }
  return d.str();
}

std::string TrimRight(const std::string& s) {
  const size_t e = s.find_last_not_of(" \n\t\r");
  return e == std::string::npos ? "" : s.substr(0, e + 1);
}

bool IsPrefix(const std::string& p, const std::string& s) { return s.compare(0, p.size(), p) == 0; }

// Streaming: the partial parse of every prefix of `text` (at character boundaries) must be
// extended by the final parse: content and reasoning grow at their end, calls are appended with
// the same ids and names, and a call's arguments so far are a prefix of its final arguments
// (content up to whitespace at its start: a text turns out to hold calls, whose format trims
// it, only when they arrive). Returns "" or the first prefix that breaks it; *fragments counts
// the prefixes that showed a call's arguments in part.
std::string StreamingDiff(const std::string& text, const ChatFormat& f, const zf::chat::ParsedMessage& fin,
                          int* fragments) {
  for (size_t k = 0; k <= text.size(); ++k) {
    if (k < text.size() && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) continue;
    const zf::chat::ParsedMessage p = ParseAssistant(std::string_view(text).substr(0, k), f, kTools, true);
    bool ok = (IsPrefix(Trim(p.content), Trim(fin.content)) && IsPrefix(TrimRight(p.reasoning), fin.reasoning));
    ok = ok && p.tool_calls.size() <= fin.tool_calls.size();
    for (size_t i = 0; ok && i < p.tool_calls.size(); ++i) {
      const std::string& a = p.tool_calls[i].arguments;
      ok = p.tool_calls[i].name == fin.tool_calls[i].name && IsPrefix(a, fin.tool_calls[i].arguments) &&
           p.tool_calls[i].id == fin.tool_calls[i].id;
      if (ok && !a.empty() && a != fin.tool_calls[i].arguments) ++*fragments;
    }
    if (!ok) {
      return "after " + std::to_string(k) + " bytes: content '" + p.content + "' reasoning '" + p.reasoning + "' " +
             std::to_string(p.tool_calls.size()) + " calls";
    }
  }
  return "";
}

TEST(ChatParse, CorpusRoundTrip) {
  const std::vector<fs::path> files = CorpusFiles();
  ASSERT_GE(files.size(), 70u);
  // Renderings that cannot be read back, and why (each checked by hand).
  const std::map<std::string, std::string> known = {
      {"NVIDIA-Nemotron-Nano-v2 / content_and_call",
       "the template writes the content, ends the turn and opens a second assistant turn for the calls"},
      {"MiniMax-M3 / one_call", "the template writes an object argument as nested elements (<unit>, <item>): read as text"},
      {"MiniMax-M3 / parallel_calls", "the same nested object argument"},
      {"MiniMax-M3 / reasoning_and_call", "the same nested object argument"},
      {"openai-gpt-oss-120b / content_and_call",
       "the template writes content next to a call as the analysis channel: it reads back as reasoning"},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B / parallel_calls",
       "the template writes <｜tool▁calls▁end｜> after the second call only (never after a single one)"},
  };
  int native = 0, reasoning = 0, checked = 0, streamed = 0;  // streamed: one_call's arguments in part
  std::vector<std::string> failures;
  for (const fs::path& p : files) {
   const std::string source = ReadFile(p.string());
   // Templates with a thinking switch are also read with thinking on (the generation prompt
   // opens the reasoning, or leaves it to the model, instead of writing an empty block).
   for (const bool thinking : {false, true}) {
    if (thinking && source.find("enable_thinking") == std::string::npos) continue;
    CorpusTemplate tpl;
    if (!LoadCorpusTemplate(p, thinking, &tpl)) continue;  // the corpus test covers templates jinja2 itself rejects
    const std::string& stem = tpl.stem;
    const std::string mode = thinking ? " (thinking)" : "";
    const Renderer& probe = tpl.probe;
    const bool with_tools = tpl.with_tools;
    const ChatFormat& f = tpl.format;
    if (const char* dbg = std::getenv("ZF_CHAT_DEBUG"); dbg && stem == dbg) {
      Json pieces = Json::array();
      for (auto& pc : f.tools.call) pieces.push_back({pc.kind, pc.text});
      std::printf("%s\n", Json({{"open", f.tools.block_open}, {"sep", f.tools.call_sep}, {"close", f.tools.block_close},
                                {"call", pieces}, {"native", f.tools.native}, {"p_open", f.tools.param_open},
                                {"p_mid", f.tools.param_mid}, {"p_close", f.tools.param_close},
                                {"r_open", f.reasoning.open}, {"r_close", f.reasoning.close},
                                {"forced", f.reasoning.forced_open}, {"closed", f.reasoning.prompt_closed},
                                {"prefix", f.content_prefix}, {"eot", f.end_of_turn}}).dump(1).c_str());
    }
    if (std::getenv("ZF_CHAT_LIST")) {
      std::printf("%s: %s%s\n", f.tools.native ? "derived" : f.harmony ? "harmony" : "not derived", stem.c_str(),
                  f.tools.native || f.harmony || source.find("tool_calls") == std::string::npos ? "" : " (renders tool_calls)");
    }
    // Messages are normalized for what a template does not render (NormalizeMessages): every
    // template with a call format renders calls.
    if ((f.tools.native || f.harmony) && !f.renders_tool_calls) failures.push_back(stem + mode + ": renders_tool_calls");
    if (std::getenv("ZF_CHAT_LIST")) {
      std::printf("  renders tool calls %d, tool results %d\n", f.renders_tool_calls, f.renders_tool_results);
    }
    if (!thinking) {
      native += f.tools.native || f.harmony;
      reasoning += !f.reasoning.close.empty();
    }
    Renderer r = probe;
    if (with_tools) r.tools = kTools;
    for (const Case& c : Cases()) {
      std::string text;
      if (!CaseText(r, f, c, &text)) continue;
      ++checked;
      const zf::chat::ParsedMessage final_msg = ParseAssistant(text, f, kTools);
      const std::string d = Diff(final_msg, c);
      int fragments = 0;
      const std::string s = d.empty() ? StreamingDiff(text, f, final_msg, &fragments) : "";
      if (c.name == "one_call" && fragments > 0) ++streamed;
      if (std::getenv("ZF_CHAT_LIST") && c.name == "one_call") std::printf("  %s: %d argument fragments\n", stem.c_str(), fragments);
      if (!s.empty()) failures.push_back(stem + mode + " / " + c.name + " streamed: " + s);
      if (!d.empty() && !known.count(stem + " / " + c.name)) {
        failures.push_back(stem + mode + " / " + c.name + ": " + d + "\n  text: " + text);
      }
    }
   }
  }
  std::ostringstream all;
  for (auto& s : failures) all << s << "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << all.str();
  std::printf("templates: %zu, native tool calls: %d (arguments streamed: %d), reasoning markers: %d, cases checked: %d\n",
              files.size(), native, streamed, reasoning, checked);
  EXPECT_GE(native, 30);
  EXPECT_GE(reasoning, 20);
}

}  // namespace

namespace {

ChatFormat DeriveFor(const std::string& stem, const Json& extra = Json::object()) {
  const std::string source = ReadFile(kDir + "/" + stem + ".jinja");
  Renderer probe;
  probe.t = std::make_shared<zf::jinja::Template>(source);
  probe.tools = zf::chat::ProbeTools();
  probe.extra = extra;
  return zf::chat::DeriveChatFormat([&](const Json& m, bool g, std::string* out) { return probe.Render(m, g, out); },
                                    source);
}

// Command R+'s "Action:" list (its template writes its instructions after the last message,
// which the derivation leaves out of the format); the corpus test cannot render it with kTools
// (the template reads additionalProperties of object parameters).
TEST(ChatParse, CommandRPlusAction) {
  const ChatFormat f = DeriveFor("CohereForAI-c4ai-command-r-plus-tool_use");
  ASSERT_TRUE(f.tools.native);
  EXPECT_EQ(f.tools.block_close, "\n]```\n");
  const std::string text =
      "I will look it up.\nAction:\n```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": "
      "{\n            \"city\": \"Zürich\"\n        }\n    },\n    {\n        \"tool_name\": \"search_web\",\n"
      "        \"parameters\": {\"query\": \"x\"}\n    }\n]```";
  const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
  ASSERT_EQ(m.tool_calls.size(), 2u) << m.content;
  EXPECT_EQ(m.content, "I will look it up.");
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json({{"city", "Zürich"}}));
  EXPECT_EQ(m.tool_calls[1].name, "search_web");
  int fragments = 0;
  EXPECT_EQ(StreamingDiff(text, f, m, &fragments), "");
  EXPECT_GT(fragments, 10);
}

// The markers a generator must show when they are control tokens: harmony's headers (gpt-oss),
// Llama 3.1's <|python_tag|>, Hermes' call block; never the end of turn.
TEST(ChatParse, MarkerTexts) {
  auto has = [](const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); };
  const std::vector<std::string> oss = zf::chat::MarkerTexts(DeriveFor("openai-gpt-oss-120b"));
  for (const char* m : {"<|channel|>", "<|message|>", "<|constrain|>", "<|start|>"}) EXPECT_TRUE(has(oss, m)) << m;
  EXPECT_TRUE(has(zf::chat::MarkerTexts(DeriveFor("meta-llama-Llama-3.1-8B-Instruct")), "<|python_tag|>"));
  const ChatFormat qwen = DeriveFor("Qwen-Qwen2.5-7B-Instruct");
  const std::vector<std::string> hermes = zf::chat::MarkerTexts(qwen);
  bool open = false, close = false;
  for (const std::string& m : hermes) {
    open = open || m.find("<tool_call>") != std::string::npos;
    close = close || m.find("</tool_call>") != std::string::npos;
    EXPECT_EQ(m.find("<|im_end|>"), std::string::npos) << m;
    EXPECT_FALSE(m.empty());
  }
  EXPECT_TRUE(open && close);
}

// llama.cpp's DeepSeek-R1 template fails whenever tools are offered (it pipes a generator into
// tojson): derived without tools, it reads R1's calls after the reasoning the prompt opened.
TEST(ChatParse, DeepSeekR1Calls) {
  const std::string source = ReadFile(kDir + "/llama-cpp-deepseek-r1.jinja");
  Renderer probe;
  probe.t = std::make_shared<zf::jinja::Template>(source);
  const ChatFormat f = zf::chat::DeriveChatFormat(
      [&](const Json& m, bool g, std::string* out) { return probe.Render(m, g, out); }, source);
  ASSERT_TRUE(f.tools.native);
  EXPECT_TRUE(f.reasoning.forced_open);
  const std::string text =
      "The user wants weather.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
      "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
  ASSERT_EQ(m.tool_calls.size(), 1u) << m.content;
  EXPECT_EQ(m.reasoning, "The user wants weather.");
  EXPECT_EQ(m.content, "");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
}

}  // namespace

namespace {

// DeepSeek V3.2's DSML writes string="false" for typed values where the probe (all strings)
// showed string="true"; the attribute is not compared, the value is typed by the tool's schema.
TEST(ChatParse, DsmlTypedParameters) {
  const ChatFormat f = DeriveFor("deepseek-ai-DeepSeek-V3.2");
  ASSERT_TRUE(f.tools.native);
  const std::string text =
      "Checking.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
      "<｜DSML｜parameter name=\"city\" string=\"true\">Zürich</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"options\" string=\"false\">{\"unit\": \"c\"}</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜function_calls>";
  const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
  ASSERT_EQ(m.tool_calls.size(), 1u) << m.content;
  EXPECT_EQ(m.content, "Checking.");
  EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json::parse(R"({"city": "Zürich", "days": 3, "options": {"unit": "c"}})"));
  int fragments = 0;
  EXPECT_EQ(StreamingDiff(text, f, m, &fragments), "");
  EXPECT_GT(fragments, 3);
}

// muse's template writes the name twice (the message's recipient and the invoke): both must agree.
TEST(ChatParse, NameWrittenTwiceMustAgree) {
  const ChatFormat f = DeriveFor("muse-glimmer");
  ASSERT_TRUE(f.tools.native);
  const std::string call =
      " to=search_web<|message|><atem:function_calls>\n<atem:invoke name=\"search_web\">\n"
      "<atem:parameter name=\"query\">x</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
  zf::chat::ParsedMessage m = ParseAssistant(call, f, kTools);
  ASSERT_EQ(m.tool_calls.size(), 1u) << m.content;
  EXPECT_EQ(m.tool_calls[0].name, "search_web");
  std::string other = call;
  other.replace(other.find("name=\"search_web\""), 17, "name=\"get_weather\"");
  m = ParseAssistant(other, f, kTools);
  EXPECT_TRUE(m.tool_calls.empty());
}

}  // namespace

namespace {

// gpt-oss (harmony): the template's own renderings of reasoning (its `thinking` field), a call
// after reasoning, and what the model writes (the recipient after the channel, <|constrain|>,
// several calls), read back whole and streamed.
TEST(ChatParse, HarmonyMessages) {
  const std::string stem = "openai-gpt-oss-120b";
  const std::string source = ReadFile(kDir + "/" + stem + ".jinja");
  Renderer r;
  r.t = std::make_shared<zf::jinja::Template>(source);
  r.tools = kTools;
  const ChatFormat f = DeriveFor(stem);
  ASSERT_TRUE(f.harmony);
  const Json user = {{"role", "user"}, {"content", "Weather?"}};
  const Json weather = {{"city", "Zürich, \"CH\""}, {"options", {{"unit", "celsius"}}}, {"days", 3}};
  struct Want {
    Json assistant;
    std::string reasoning, content;
  };
  const std::vector<Want> wants = {
      {{{"role", "assistant"}, {"content", "It is 4."}, {"thinking", "2+2 is 4."}}, "2+2 is 4.", "It is 4."},
      {{{"role", "assistant"}, {"thinking", "Need the weather."},
        {"tool_calls", Json::array({Call("c1", "get_weather", weather)})}}, "Need the weather.", ""},
  };
  for (const Want& w : wants) {
    std::string text;
    ASSERT_TRUE(AssistantText(r, Json::array({user, w.assistant}), f, &text));
    const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
    EXPECT_EQ(m.reasoning, w.reasoning) << text;
    EXPECT_EQ(m.content, w.content) << text;
    const size_t n = w.assistant.contains("tool_calls") ? 1 : 0;
    ASSERT_EQ(m.tool_calls.size(), n) << text;
    if (n == 1) {
      EXPECT_EQ(m.tool_calls[0].name, "get_weather");
      EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), weather);
    }
    int fragments = 0;
    EXPECT_EQ(StreamingDiff(text, f, m, &fragments), "") << text;
  }
  // As gpt-oss writes calls: recipient after the channel, a constrained content type, two calls.
  const std::string text =
      "<|channel|>analysis<|message|>Two lookups.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>"
      "<|start|>assistant<|channel|>commentary to=functions.search_web <|constrain|>json<|message|>"
      "{\"query\": \"naïve \\\"x\\\"\"}<|call|>";
  const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
  EXPECT_EQ(m.reasoning, "Two lookups.");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[1].name, "search_web");
  EXPECT_EQ(Json::parse(m.tool_calls[1].arguments), Json({{"query", "naïve \"x\""}}));
  EXPECT_NE(m.tool_calls[0].id, m.tool_calls[1].id);
  int fragments = 0;
  EXPECT_EQ(StreamingDiff(text, f, m, &fragments), "");
  EXPECT_GT(fragments, 10);
  // Plain text (no channels) is content as generated; a final channel alone is the content.
  EXPECT_EQ(ParseAssistant("Just text <|x", f, kTools).content, "Just text <|x");
  EXPECT_EQ(ParseAssistant("<|channel|>final<|message|>Hi.", f, kTools).content, "Hi.");
  // Arguments that are not a JSON object: the text is content, no call.
  const zf::chat::ParsedMessage bad =
      ParseAssistant(" to=functions.get_weather<|channel|>commentary json<|message|>{oops<|call|>", f, kTools);
  EXPECT_TRUE(bad.tool_calls.empty());
  EXPECT_EQ(bad.content, "{oops");
}

}  // namespace

namespace {

// Llama 3.1 / 3.3: built-in tools (`builtin_tools`) rendered by the template as
// <|python_tag|>NAME.call(k="v") read back; the model's other forms after the tag (code, a JSON
// call) as llama-server reads them; streamed, the call is held back until the turn ends.
TEST(ChatParse, LlamaPythonTagBuiltinTools) {
  for (const std::string stem : {"meta-llama-Llama-3.1-8B-Instruct", "meta-llama-Llama-3.3-70B-Instruct"}) {
    const std::string source = ReadFile(kDir + "/" + stem + ".jinja");
    Renderer r;
    r.t = std::make_shared<zf::jinja::Template>(source);
    r.tools = kTools;
    r.extra = {{"builtin_tools", {"brave_search", "wolfram_alpha"}}};
    const ChatFormat f = DeriveFor(stem);
    ASSERT_TRUE(f.python_tag) << stem;
    for (const auto& [name, args] : {std::pair<std::string, Json>{"brave_search", {{"query", "weather in Zürich \"today\", 'quoted'"}}},
                                     {"wolfram_alpha", {{"query", "integrate x^2"}}}}) {
      const Json msgs = Json::array({{{"role", "user"}, {"content", "Look it up."}},
                                     {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({Call("c1", name, args)})}}});
      std::string text;
      ASSERT_TRUE(AssistantText(r, msgs, f, &text)) << stem;
      ASSERT_NE(text.find("<|python_tag|>" + name + ".call("), std::string::npos) << text;
      const zf::chat::ParsedMessage m = ParseAssistant(text, f, kTools);
      ASSERT_EQ(m.tool_calls.size(), 1u) << text;
      EXPECT_EQ(m.tool_calls[0].name, name);
      EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), args) << text;
      EXPECT_EQ(m.content, "");
      int fragments = 0;
      EXPECT_EQ(StreamingDiff(text, f, m, &fragments), "") << text;
    }
    // Code is a call of `python`; a JSON call after the tag is that call; text before the tag
    // is content.
    zf::chat::ParsedMessage m = ParseAssistant("Let me compute.<|python_tag|>import math\nprint(math.pi)", f, kTools);
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(m.content, "Let me compute.");
    EXPECT_EQ(m.tool_calls[0].name, "python");
    EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json({{"code", "import math\nprint(math.pi)"}}));
    m = ParseAssistant("<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 2}}", f, kTools);
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(m.tool_calls[0].name, "get_weather");
    EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json({{"city", "Oslo"}, {"days", 2}}));
    m = ParseAssistant("<|python_tag|>wolfram_alpha.call(query=\"2+2\", n=3)<|eom_id|>", f, kTools);
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json({{"query", "2+2"}, {"n", 3}}));
    // Streaming: content up to the tag (a half-written tag held back), no call yet.
    m = ParseAssistant("Sure <|python_", f, kTools, true);
    EXPECT_EQ(m.content, "Sure ");
    m = ParseAssistant("Sure <|python_tag|>brave_search.call(qu", f, kTools, true);
    EXPECT_EQ(m.content, "Sure ");
    EXPECT_TRUE(m.tool_calls.empty());
    // The tag alone with nothing after it is not a call.
    EXPECT_TRUE(ParseAssistant("<|python_tag|>", f, kTools).tool_calls.empty());
  }
}

// Model output as the templates' models write it (issue #41): thinking before a call, a
// generation prompt that opens or closes the reasoning, markers the corpus cases cannot show.
std::string Summary(const zf::chat::ParsedMessage& m) {
  Json calls = Json::array();
  for (const auto& c : m.tool_calls) calls.push_back({c.name, Json::parse(c.arguments)});
  return Json({{"content", m.content}, {"reasoning", m.has_reasoning ? Json(m.reasoning) : Json()}, {"calls", calls}}).dump();
}

std::string Expect(const std::string& content, const Json& reasoning, const Json& calls = Json::array()) {
  return Json({{"content", content}, {"reasoning", reasoning}, {"calls", calls}}).dump();
}

TEST(ChatParse, Gemma4ThoughtBeforeCall) {
  const std::string text =
      "<|channel>thought\nPlan it.\n<channel|><|tool_call>call:search_web{query:<|\"|>a < b\nc<|\"|>}<tool_call|>";
  const Json calls = Json::array({{"search_web", {{"query", "a < b\nc"}}}});
  for (const Json& extra : {Json::object(), Json({{"enable_thinking", true}})}) {
    const ChatFormat f = DeriveFor("google-gemma-4-31B-it", extra);
    EXPECT_EQ(f.reasoning.open, "<|channel>thought");
    EXPECT_EQ(f.reasoning.close, "<channel|>");
    EXPECT_FALSE(f.reasoning.forced_open);
    EXPECT_EQ(f.reasoning.prompt_closed, extra.empty());  // thinking off: an empty thought block
    EXPECT_EQ(Summary(ParseAssistant(text, f, kTools)), Expect("", "Plan it.", calls));
    EXPECT_EQ(Summary(ParseAssistant("Just text.", f, kTools)), Expect("Just text.", nullptr));
    EXPECT_EQ(Summary(ParseAssistant("<|channel>thought\nHm.<channel|>Answer.", f, kTools)), Expect("Answer.", "Hm."));
  }
}

TEST(ChatParse, PromptClosesOrOpensReasoning) {
  // Generation prompts ending in an empty block (thinking off): the answer is content.
  struct C {
    const char* stem;
    Json extra;
  };
  for (const C& c : {C{"tencent-Hy3", Json::object()}, C{"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {{"enable_thinking", false}}},
                     C{"openbmb-MiniCPM5-1B", {{"enable_thinking", false}}},
                     C{"upstage-Solar-Open-100B", {{"reasoning_effort", "low"}}}}) {
    SCOPED_TRACE(c.stem);
    const ChatFormat f = DeriveFor(c.stem, c.extra);
    EXPECT_FALSE(f.reasoning.forced_open);
    EXPECT_TRUE(f.reasoning.prompt_closed);
    EXPECT_EQ(Summary(ParseAssistant("Hello there.", f, kTools)), Expect("Hello there.", nullptr));
  }
  // Prompts ending in the open marker: the output starts inside the reasoning.
  for (const C& c : {C{"tencent-Hy3", {{"reasoning_effort", "high"}}}, C{"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", Json::object()},
                     C{"openbmb-MiniCPM5-1B", {{"enable_thinking", true}}}}) {
    SCOPED_TRACE(c.stem);
    const ChatFormat f = DeriveFor(c.stem, c.extra);
    EXPECT_TRUE(f.reasoning.forced_open);
    EXPECT_FALSE(f.reasoning.prompt_closed);
    const std::string text = "Plan it." + f.reasoning.close + "Hello there.";
    EXPECT_EQ(Summary(ParseAssistant(text, f, kTools)), Expect("Hello there.", "Plan it."));
  }
  // Solar Open's default prompt ends "<|begin|>assistant" as its reasoning's close does: the
  // model opens the reasoning itself.
  EXPECT_FALSE(DeriveFor("upstage-Solar-Open-100B").reasoning.prompt_closed);
}

TEST(ChatParse, Hy3Calls) {
  const ChatFormat f = DeriveFor("tencent-Hy3");
  const std::string call =
      "<tool_calls:opensource>\n<tool_call:opensource>search_web<tool_sep:opensource>\n<arg_key:opensource>query"
      "</arg_key:opensource>\n<arg_value:opensource>a < b\nc</arg_value:opensource>\n</tool_call:opensource>\n"
      "</tool_calls:opensource>";
  const Json calls = Json::array({{"search_web", {{"query", "a < b\nc"}}}});
  EXPECT_EQ(Summary(ParseAssistant(call, f, kTools)), Expect("", nullptr, calls));
  EXPECT_EQ(Summary(ParseAssistant("Let me search.\n" + call, f, kTools)), Expect("Let me search.", nullptr, calls));
  const ChatFormat thinking = DeriveFor("tencent-Hy3", {{"reasoning_effort", "high"}});
  EXPECT_EQ(Summary(ParseAssistant("Plan it.</think:opensource>" + call, thinking, kTools)), Expect("", "Plan it.", calls));
}

TEST(ChatParse, SolarOpenThink) {
  const ChatFormat f = DeriveFor("upstage-Solar-Open-100B");
  EXPECT_EQ(f.reasoning.open, "<|think|>");
  EXPECT_EQ(f.content_prefix, "<|content|>");
  EXPECT_EQ(Summary(ParseAssistant("<|think|>Plan it.<|end|><|begin|>assistant<|content|>Answer.", f, kTools)),
            Expect("Answer.", "Plan it."));
  EXPECT_EQ(Summary(ParseAssistant("<|content|>Answer.", f, kTools)), Expect("Answer.", nullptr));
  const std::string text =
      "<|think|>Plan it.<|end|><|begin|>assistant<|tool_calls|><|tool_call:begin|>call_1<|tool_call:name|>search_web"
      "<|tool_call:args|>{\"query\": \"a < b\\nc\"}<|tool_call:end|><|calls|>";
  EXPECT_EQ(Summary(ParseAssistant(text, f, kTools)), Expect("", "Plan it.", Json::array({{"search_web", {{"query", "a < b\nc"}}}})));
}

TEST(ChatParse, MiniCpm5Cdata) {
  const ChatFormat f = DeriveFor("openbmb-MiniCPM5-1B");
  // CDATA holds the text exactly: markup, the close marker, surrounding whitespace.
  const std::string text =
      "<function name=\"search_web\"><param name=\"query\"><![CDATA[ a < b && c\n</param> x]]></param></function>";
  const Json calls = Json::array({{"search_web", {{"query", " a < b && c\n</param> x"}}}});
  EXPECT_EQ(Summary(ParseAssistant(text, f, kTools)), Expect("", nullptr, calls));
  // Streamed: each prefix's arguments are a prefix of the final ones.
  const zf::chat::ParsedMessage fin = ParseAssistant(text, f, kTools);
  int fragments = 0;
  EXPECT_EQ(StreamingDiff(text, f, fin, &fragments), "");
  EXPECT_GT(fragments, 0);
  // Not CDATA: the value as written.
  EXPECT_EQ(Summary(ParseAssistant("<function name=\"search_web\"><param name=\"query\">x <![CDATA[y]]></param></function>", f, kTools)),
            Expect("", nullptr, Json::array({{"search_web", {{"query", "x <![CDATA[y]]>"}}}})));
}

}  // namespace

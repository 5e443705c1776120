// The stream parser (src/chat/stream_parser.h) over the parser's corpus (chat_corpus.h) and
// hand-written turns, split into pieces several ways (every character, 2-7 bytes at random,
// all at once): (a) the deltas of each kind add up to message() after Finish; (b) that is the
// final parse of the whole turn (ReadAssistant: ParseAssistant with the request's policy);
// (c) every message() along the way is extended by the final one.
#include <cstdio>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"
#include "chat/stream_parser.h"
#include "chat_corpus.h"

namespace {

using namespace chat_corpus;
using zf::chat::Delta;
using zf::chat::ParsedMessage;
using zf::chat::ReadOptions;
using zf::chat::StreamParser;

bool IsPrefix(const std::string& p, const std::string& s) { return s.compare(0, p.size(), p) == 0; }

// Piece lengths: 0 = every character; n > 0 = random lengths 2..7 from seed n; -1 = all at once.
std::vector<std::string> Split(const std::string& text, int how) {
  std::vector<std::string> pieces;
  std::mt19937 rng(static_cast<unsigned>(how));
  for (size_t i = 0; i < text.size();) {
    size_t n = how < 0 ? text.size() : how == 0 ? 1 : 2 + rng() % 6;
    size_t e = std::min(text.size(), i + n);
    while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;  // whole characters
    pieces.push_back(text.substr(i, e - i));
    i = e;
  }
  return pieces;
}

std::string Show(const ParsedMessage& m) { return zf::chat::ToOpenAiMessage(m).dump(); }

// "" or how `earlier` is not extended by `later`.
std::string NotExtended(const ParsedMessage& earlier, const ParsedMessage& later) {
  if (!IsPrefix(earlier.content, later.content)) return "content";
  if (!IsPrefix(earlier.reasoning, later.reasoning)) return "reasoning";
  if (earlier.tool_calls.size() > later.tool_calls.size()) return "calls";
  for (size_t k = 0; k < earlier.tool_calls.size(); ++k) {
    const auto &a = earlier.tool_calls[k], &b = later.tool_calls[k];
    if (a.id != b.id || a.name != b.name || !IsPrefix(a.arguments, b.arguments)) return "call " + std::to_string(k);
  }
  return "";
}

bool Same(const ParsedMessage& a, const ParsedMessage& b) { return Show(a) == Show(b) && a.has_reasoning == b.has_reasoning; }

// Streams `text` split `how` and checks (a), (b), (c); "" or what failed.
std::string CheckStream(const std::string& text, const zf::chat::ChatFormat& f, const Json& tools, const ReadOptions& o,
                        int how) {
  StreamParser sp(f, tools, o);
  std::vector<Delta> deltas;
  std::vector<ParsedMessage> seen;
  for (const std::string& piece : Split(text, how)) {
    sp.Push(piece, &deltas);
    seen.push_back(sp.message());
  }
  sp.Finish(&deltas);
  const ParsedMessage& fin = sp.message();
  // (a) The deltas add up to the message.
  ParsedMessage sum;
  for (const Delta& d : deltas) {
    switch (d.kind) {
      case Delta::kContent: sum.content += d.text; break;
      case Delta::kReasoning: sum.reasoning += d.text; break;
      case Delta::kToolCall:
        if (d.index != sum.tool_calls.size()) return "a call opened out of order";
        sum.tool_calls.push_back({d.id, d.name, ""});
        break;
      case Delta::kToolArgs:
        if (d.index >= sum.tool_calls.size()) return "arguments of a call not opened";
        sum.tool_calls[d.index].arguments += d.text;
        break;
    }
    if (d.kind != Delta::kToolCall && d.text.empty()) return "an empty delta";
  }
  sum.has_reasoning = !sum.reasoning.empty();
  if (Show(sum) != Show(fin)) return "(a) deltas " + Show(sum) + " != message " + Show(fin);
  // (b) The final parse of the whole turn.
  const ParsedMessage ref = zf::chat::ReadAssistant(text, f, tools, o);
  if (!Same(fin, ref)) return "(b) message " + Show(fin) + " != final parse " + Show(ref);
  // (c) Each message along the way is extended by the final one.
  for (size_t k = 0; k < seen.size(); ++k) {
    const std::string d = NotExtended(seen[k], fin);
    if (!d.empty()) return "(c) after piece " + std::to_string(k) + ": " + d + " " + Show(seen[k]);
  }
  return "";
}

const std::vector<ReadOptions>& Policies() {
  static const std::vector<ReadOptions> p = [] {
    std::vector<ReadOptions> v(4);
    v[1].parse_tools = false;
    v[2].max_calls = 1;
    v[3].split_reasoning = false;
    return v;
  }();
  return p;
}

// Every split and policy of `text`; failures are appended to *failures with `label`.
int CheckAllWays(const std::string& label, const std::string& text, const zf::chat::ChatFormat& f, const Json& tools,
                 std::vector<std::string>* failures) {
  int checked = 0;
  for (size_t pi = 0; pi < Policies().size(); ++pi) {
    for (int how : {-1, 0, 1, 2, 3}) {
      const std::string d = CheckStream(text, f, tools, Policies()[pi], how);
      ++checked;
      if (!d.empty()) {
        failures->push_back(label + " policy " + std::to_string(pi) + " split " + std::to_string(how) + ": " + d +
                            "\n  text: " + Json(text).dump());
        return checked;
      }
    }
  }
  return checked;
}

std::string Report(const std::vector<std::string>& failures) {
  std::ostringstream all;
  for (size_t k = 0; k < failures.size() && k < 20; ++k) all << failures[k] << "\n";
  return all.str();
}

TEST(ChatStream, CorpusEverySplitAndPolicy) {
  std::vector<std::string> failures;
  int texts = 0, calls = 0, streamed_args = 0, xml_calls = 0, xml_streamed = 0;
  for (const fs::path& p : CorpusFiles()) {
    for (const bool thinking : {false, true}) {
      if (thinking && ReadFile(p.string()).find("enable_thinking") == std::string::npos) continue;
      CorpusTemplate tpl;
      if (!LoadCorpusTemplate(p, thinking, &tpl)) continue;
      Renderer r = tpl.probe;
      if (tpl.with_tools) r.tools = kTools;
      for (const Case& c : Cases()) {
        std::string text;
        if (!CaseText(r, tpl.format, c, &text)) continue;
        ++texts;
        const std::string label = tpl.stem + (thinking ? " (thinking)" : "") + " / " + c.name;
        CheckAllWays(label, text, tpl.format, kTools, &failures);
        // Also without tools offered (the generic form is then not looked for).
        CheckAllWays(label + " (no tools)", text, tpl.format, Json(), &failures);
        // JSON arguments pass through as they arrive, XML ones as their partial parse grows:
        // count the calls whose arguments were sent before the call was complete.
        StreamParser sp(tpl.format, kTools, ReadOptions());
        std::vector<Delta> deltas;
        for (const std::string& piece : Split(text, 0)) sp.Push(piece, &deltas);
        bool early = false;
        for (const Delta& d : deltas) early = early || d.kind == Delta::kToolArgs;
        sp.Finish(&deltas);
        calls += !sp.message().tool_calls.empty();
        streamed_args += early;
        if (tpl.format.tools.args == zf::chat::ArgsStyle::kXml) {
          xml_calls += !sp.message().tool_calls.empty();
          xml_streamed += early;
        }
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << Report(failures);
  std::printf("turns: %d, with calls: %d, arguments streamed before the end: %d (XML: %d of %d)\n", texts, calls,
              streamed_args, xml_streamed, xml_calls);
  EXPECT_GE(texts, 400);
  EXPECT_GE(streamed_args, 40);
  EXPECT_GE(xml_streamed, 100);
}

zf::chat::ChatFormat Format(const std::string& stem) {
  CorpusTemplate tpl;
  EXPECT_TRUE(LoadCorpusTemplate(kDir + "/" + stem + ".jinja", false, &tpl)) << stem;
  return tpl.format;
}

// Turns no template renders: cut short, malformed, a marker mentioned in passing, whitespace.
TEST(ChatStream, HandWrittenTurns) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> turns = {
      {"Qwen-Qwen2.5-7B-Instruct",
       {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"FR\\\"\", \"days\": 2}}\n</tool_call>",
        "Just text, with a <tool_call> mention.",
        "  Leading spaces, then a call.\n<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",  // generation stopped
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": tru}}\n</tool_call>",  // not JSON
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}]\n</tool_call> after",  // wrong close
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"a\"}}\n</tool_call>\n<tool_call>\n"
        "{\"name\": \"search_web\", \"arguments\": {\"query\": \"b\"}}\n</tool_call>\nDone.",
        "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>",
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lima\"}}",
        "Text <tool_call> then <tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"ü\"}}\n</tool_call>",
        "trailing spaces   \n\n", "", "   ", "<tool_"}},
      {"Qwen-Qwen3-0.6B",
       {"<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", "<think>Still going",
        "<think>Need weather.</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        "<think>  </think>  Empty thoughts.", "<thi", "</think>Closed first."}},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {"Let me add.\n</think>\n\nFour.", "Hmm, 2 and 2"}},
      {"openai-gpt-oss-120b",
       {"<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Answer.",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>",
        "plain"}},
      {"meta-llama-Llama-3.1-8B-Instruct",
       {"Sure <|python_tag|>brave_search.call(query=\"weather\")", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}",
        "Plain answer."}},
      {"Qwen3-Coder",
       {"Let me look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nZür",  // generation stopped in a value
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</param",
        "<tool_call>\n<function=get_weather>\n<parameter=days>\n1",  // in a value said once complete
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\nthen prose</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\na\n</parameter>\n<parameter=city>\nb\n</parameter>\n"
        "</function>\n</tool_call>",  // a repeated key keeps its first value
        "<tool_call>\n<function=get_weather>\n<parameter=>\nx\n</parameter>\n</function>\n</tool_call>",  // no key
        "<tool_call>\n<function=nope>\n<parameter=city>\nx\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=nope>\n<parameter=city>\nx",
        "<tool_call>\n<function=search_web>\n<parameter=query>\nline one\n\nline </para two\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n</function>\n</tool_call>"}},
      {"GLM-4.6",
       {"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris, the city of light</arg_value>\n</tool_call>",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par"}},
      {"MiniMax-M2",
       {"<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris, the city of light</parameter>\n"
        "</invoke>\n</minimax:tool_call>",
        "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Pa"}},
      {"openbmb-MiniCPM5-1B",
       {"<tool_call>\n<function=get_weather>\n<parameter=city>\n<![CDATA[a < b]]>\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n<![CDATA[a]]>b\n</parameter>\n</function>\n</tool_call>"}},
      {"google-gemma-2-2b-it", {"```json\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"zerfoo\"}}\n```"}},
  };
  std::vector<std::string> failures;
  int checked = 0;
  for (const auto& [stem, texts] : turns) {
    const zf::chat::ChatFormat f = Format(stem);
    for (const std::string& t : texts) {
      checked += CheckAllWays(stem, t, f, kTools, &failures);
      checked += CheckAllWays(stem + " (no tools)", t, f, Json(), &failures);
    }
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << Report(failures);
  EXPECT_GT(checked, 300);
}

// What is sent when: content before a call right away, a call once its arguments begin, the
// arguments as they arrive, text that may be a marker held back.
TEST(ChatStream, SendsWhatIsCertainAsItArrives) {
  const zf::chat::ChatFormat f = Format("Qwen-Qwen2.5-7B-Instruct");
  StreamParser sp(f, kTools, ReadOptions());
  std::vector<Delta> d;
  sp.Push("Let me check. ", &d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Delta::kContent);
  EXPECT_EQ(d[0].text, "Let me check.");  // the space may be trimmed before a call
  d.clear();
  sp.Push("<tool_", &d);
  EXPECT_TRUE(d.empty());
  sp.Push("call>\n{\"name\": \"get_weather\", \"arguments\": ", &d);
  EXPECT_TRUE(d.empty());  // the call is certain once its arguments begin
  sp.Push("{\"city\": \"Pa", &d);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Delta::kToolCall);
  EXPECT_EQ(d[0].name, "get_weather");
  EXPECT_EQ(d[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(d[1].kind, Delta::kToolArgs);
  EXPECT_EQ(d[1].text, "{\"city\": \"Pa");
  d.clear();
  sp.Push("ris\"}", &d);
  ASSERT_EQ(d.size(), 0u);  // complete once what follows the arguments is read
  sp.Push("}\n</tool_call>", &d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text, "ris\"}");
  d.clear();
  sp.Finish(&d);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(sp.message().content, "Let me check.");
  ASSERT_EQ(sp.message().tool_calls.size(), 1u);
  EXPECT_EQ(sp.message().tool_calls[0].arguments, "{\"city\": \"Paris\"}");
}

// XML-style arguments (Qwen3-Coder) are sent as they grow: complete parameters, and a string
// value as it arrives (whitespace and what may be the close marker held back), each fragment a
// prefix of the final arguments.
TEST(ChatStream, XmlArgumentsArriveAsTheyGrow) {
  const zf::chat::ChatFormat f = Format("Qwen3-Coder");
  std::string poem;
  for (int k = 0; k < 40; ++k) poem += "line " + std::to_string(k) + " of a long query, with \"quotes\" & <tags>\n";
  const std::string text = "Searching.\n<tool_call>\n<function=search_web>\n<parameter=query>\n" + poem +
                           "</parameter>\n</function>\n</tool_call>";
  std::vector<std::string> failures;
  CheckAllWays("Qwen3-Coder long value", text, f, kTools, &failures);
  EXPECT_TRUE(failures.empty()) << Report(failures);
  for (int how : {0, 1, 2}) {
    StreamParser sp(f, kTools, ReadOptions());
    std::vector<Delta> d;
    int fragments = 0;
    std::string sent;
    for (const std::string& piece : Split(text, how)) {
      const size_t before = d.size();
      sp.Push(piece, &d);
      for (size_t k = before; k < d.size(); ++k) {
        if (d[k].kind == Delta::kToolArgs) ++fragments, sent += d[k].text;
      }
    }
    const std::string before_finish = sent;
    sp.Finish(&d);
    ASSERT_EQ(sp.message().tool_calls.size(), 1u);
    const std::string& args = sp.message().tool_calls[0].arguments;
    EXPECT_EQ(args, Json({{"query", poem.substr(0, poem.size() - 1)}}).dump());
    // Split into many pieces, the value arrives in many fragments, all before the turn ends.
    EXPECT_GT(fragments, how == 0 ? 1000 : 100) << "split " << how;
    EXPECT_EQ(before_finish, args) << "split " << how;
  }
  // Cut short inside the value: the final parse keeps the call, its value so far.
  const ParsedMessage cut = zf::chat::ParseAssistant(text.substr(0, text.find("line 3 ")), f, kTools);
  ASSERT_EQ(cut.tool_calls.size(), 1u);
  EXPECT_EQ(cut.tool_calls[0].arguments, Json({{"query", poem.substr(0, poem.find("\nline 3 "))}}).dump());
  EXPECT_EQ(cut.content, "Searching.");
}

// The final parse's rules that make it agree with a stream: whitespace at the content's start
// is kept when nothing was read out before it, and a call whose JSON arguments began is a call.
TEST(ChatStream, FinalParseAgreesWithTheStream) {
  const zf::chat::ChatFormat f = Format("Qwen-Qwen2.5-7B-Instruct");
  ParsedMessage m = zf::chat::ParseAssistant(
      "  Hi \n<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>", f, kTools);
  EXPECT_EQ(m.content, "  Hi");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  m = zf::chat::ParseAssistant("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", f, kTools);
  ASSERT_EQ(m.tool_calls.size(), 1u);  // generation stopped inside the arguments
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Par");
  EXPECT_EQ(m.content, "");
  m = zf::chat::ParseAssistantStrict("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", f, kTools);
  EXPECT_TRUE(m.tool_calls.empty());
}

}  // namespace

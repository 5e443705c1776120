// Chat output parsing (src/chat) as zf_chat_parse runs it: generated text in the formats derived
// from real templates of the corpus (byte 0 picks the template, byte 1 bit 0 offers tools, bit 1
// parses as a streamed prefix; the rest is the text). Any valid UTF-8 text must give a message: JSON that serializes (valid
// UTF-8), tool-call arguments that are JSON objects, no crash, no quadratic blow-up past the
// size bound. Bit 2: the text is instead a `tools` array (as a request brings it), from which the
// template's tool-call grammar is built (chat/tool_grammar.h): any schema gives a grammar.
// Bit 1 clear: the text is also streamed (chat/stream_parser.h), split where the text's own
// bytes say, under the policy bits 3-5 pick: the deltas must add up to the message, and that
// must be the final parse of the whole text.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"
#include "chat/stream_parser.h"
#include "chat/tool_grammar.h"
#include "common/json_depth.h"
#include "common/utf8.h"
#include "fuzz_common.h"
#include "jinja/jinja.h"

namespace {

using Json = nlohmann::ordered_json;

// Templates covering every kind of format: JSON calls in tags, in a list, bare, after the
// prompt's marker, with ids and counters, XML parameters (named in tags or attributes, with typed
// attributes), a name written twice, a close marker naming the key, object literals with
// bare keys (Gemma 4), Python-call arguments (LFM2.5), reasoning opened by the prompt, and gpt-oss's harmony
// messages (hand-written reader).
const char* const kTemplates[] = {
    "Qwen-Qwen2.5-7B-Instruct",          "Qwen-Qwen3-0.6B",
    "Qwen3-Coder",                       "mistralai-Mistral-Nemo-Instruct-2407",
    "meta-llama-Llama-3.1-8B-Instruct",  "meetkai-functionary-medium-v3.2",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
    "upstage-Solar-Open-100B",           "poolside-Laguna-XS.2",
    "ibm-granite-granite-3.3-2B-Instruct", "google-gemma-2-2b-it",
    "llama-cpp-deepseek-r1",             "CohereForAI-c4ai-command-r-plus-tool_use",
    "openai-gpt-oss-120b",               "deepseek-ai-DeepSeek-V3.2",
    "muse-glimmer",                      "Kimi-K3",
    "google-gemma-4-31B-it",             "MiniMax-M3",
    "LFM2.5-8B-A1B",
};
constexpr size_t kN = sizeof kTemplates / sizeof kTemplates[0];

std::vector<zf::chat::ChatFormat>& Formats() {
  static std::vector<zf::chat::ChatFormat> formats = [] {
    std::vector<zf::chat::ChatFormat> out;
    for (const char* stem : kTemplates) {
      std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates/" + stem + ".jinja", std::ios::binary);
      std::stringstream s;
      s << f.rdbuf();
      const std::string source = s.str();
      zf::jinja::Template t(source);
      const zf::jinja::Value probe_tools = zf::jinja::FromJson(zf::chat::ProbeTools().dump());
      zf::jinja::Value tools = probe_tools;
      auto render = [&](const Json& messages, bool gen, std::string* o) {
        Json vars = {{"messages", messages}, {"add_generation_prompt", gen}, {"bos_token", "<s>"},
                     {"eos_token", "</s>"}, {"documents", nullptr}, {"enable_thinking", true}};
        zf::jinja::Value v = zf::jinja::FromJson(vars.dump());
        v.d().Set(zf::jinja::Value::Str("tools"), tools);
        try {
          zf::jinja::Limits lim;
          lim.now = 0;
          *o = t.Render(v, lim);
          return true;
        } catch (const zf::jinja::Error&) {
          return false;
        }
      };
      // A template that fails whenever tools are offered is probed without (as zf_chat_parse does).
      std::string probe;
      if (!render(Json::array({{{"role", "user"}, {"content", "x"}}}), true, &probe)) tools = zf::jinja::Value::None();
      out.push_back(zf::chat::DeriveChatFormat(render, source));
    }
    return out;
  }();
  return formats;
}

const Json& Tools() {
  static const Json t = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters":
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
    "ok": {"type": "boolean"}}}}}, {"type": "function", "function": {"name": "search"}}])");
  return t;
}

// Streams `text` in pieces whose lengths (1-8 bytes, whole characters) come from its own bytes
// and checks the deltas against the message, and the message against the final parse.
void CheckStream(const std::string& text, const zf::chat::ChatFormat& f, const Json& tools, uint8_t policy) {
  zf::chat::ReadOptions o;
  o.parse_tools = (policy & 1) == 0;
  o.max_calls = (policy & 2) ? 1 : SIZE_MAX;
  o.split_reasoning = (policy & 4) == 0;
  zf::chat::StreamParser sp(f, tools, o);
  std::vector<zf::chat::Delta> deltas;
  for (size_t i = 0; i < text.size();) {
    size_t e = std::min(text.size(), i + 1 + static_cast<unsigned char>(text[i]) % 8);
    while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;
    sp.Push(std::string_view(text).substr(i, e - i), &deltas);
    i = e;
  }
  sp.Finish(&deltas);
  zf::chat::ParsedMessage sum;
  for (const auto& d : deltas) {
    switch (d.kind) {
      case zf::chat::Delta::kContent: sum.content += d.text; break;
      case zf::chat::Delta::kReasoning: sum.reasoning += d.text; break;
      case zf::chat::Delta::kToolCall:
        zf::fuzz::Check(d.index == sum.tool_calls.size(), "calls open in order");
        sum.tool_calls.push_back({d.id, d.name, ""});
        break;
      case zf::chat::Delta::kToolArgs:
        zf::fuzz::Check(d.index < sum.tool_calls.size(), "arguments of an open call");
        sum.tool_calls[d.index].arguments += d.text;
        break;
    }
  }
  sum.has_reasoning = !sum.reasoning.empty();
  const zf::chat::ParsedMessage& m = sp.message();
  zf::fuzz::Check(zf::chat::ToOpenAiMessage(sum) == zf::chat::ToOpenAiMessage(m), "the deltas add up to the message");
  const zf::chat::ParsedMessage ref = zf::chat::ReadAssistant(text, f, tools, o);
  zf::fuzz::Check(zf::chat::ToOpenAiMessage(ref) == zf::chat::ToOpenAiMessage(m) && ref.has_reasoning == m.has_reasoning,
                  "the message is the final parse");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Formats();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 8192) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (!zf::IsValidUtf8(text)) return 0;  // zf_chat_parse rejects it first
  const zf::chat::ChatFormat& f = Formats()[data[0] % kN];
  if ((data[1] & 4) != 0) {
    if (zf::JsonNesting(text, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) return 0;  // refused first, as
    const Json tools = Json::parse(text, nullptr, false);                         // by zf_chat_tool_grammar
    if (tools.is_discarded() || !tools.is_array() || tools.empty()) return 0;
    for (const Json& t : tools) {  // zf_chat_tool_grammar's checks
      const Json& fn = t.is_object() && t.contains("function") ? t["function"] : t;
      if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) return 0;
      if (fn.contains("parameters") && !fn["parameters"].is_object()) return 0;
    }
    const zf::chat::SpecialTokens specials = {{"<|\"|>", 7}, {"<|tool_call>", 8}};
    const zf::chat::ToolGrammar g = zf::chat::ToolCallGrammar(f, tools, (data[1] & 8) != 0, specials);
    zf::fuzz::Check(!g.grammar.empty() && g.grammar.rfind("start:", 0) == 0, "a grammar with a start rule");
    return 0;
  }
  const Json none;
  // Bit 1: the text as a streamed prefix (a call's arguments may be in part).
  const bool partial = (data[1] & 2) != 0;
  const zf::chat::ParsedMessage m = zf::chat::ParseAssistant(text, f, (data[1] & 1) ? Tools() : none, partial);
  std::string out;
  try {
    out = zf::chat::ToOpenAiMessage(m).dump();
  } catch (const nlohmann::json::exception&) {
    zf::fuzz::Check(false, "the message serializes");
  }
  zf::fuzz::Check(zf::IsValidUtf8(out), "the message is valid UTF-8");
  for (const auto& c : m.tool_calls) {
    // A final parse keeps a call whose JSON arguments began as the model wrote them (a stream
    // sent them): an object's text, complete or not; one cut short in XML arguments is closed.
    const Json args = Json::parse(c.arguments, nullptr, false);
    zf::fuzz::Check(partial || (!args.is_discarded() && args.is_object()) || c.arguments.rfind('{', 0) == 0,
                    "arguments are a JSON object or an object's text");
    zf::fuzz::Check(!c.name.empty() && !c.id.empty(), "calls have a name and an id");
  }
  if (!partial) CheckStream(text, f, (data[1] & 1) ? Tools() : none, static_cast<uint8_t>(data[1] >> 3));
  return 0;
}

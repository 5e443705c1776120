// The chat-template corpus (tests/data/chat_templates/templates) and the assistant turns its
// templates render: shared by the parser's tests (chat_parse_test.cpp) and the stream parser's
// (chat_stream_test.cpp).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/parser.h"
#include "jinja/jinja.h"

namespace chat_corpus {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using zf::chat::ChatFormat;

const std::string kDir = std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates";

inline std::string ReadFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"},
     "options": {"type": "object", "description": "Options"}, "days": {"type": "integer", "description": "Days"}},
     "required": ["city"]}}},
  {"type": "function", "function": {"name": "search_web", "description": "Search",
   "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "Query"}},
     "required": ["query"]}}}
])");

// A renderer as zf_chat_parse builds one, over a parsed template and given tools / extras.
struct Renderer {
  std::shared_ptr<zf::jinja::Template> t;
  Json tools;
  Json extra = Json::object();
  bool Render(const Json& messages, bool add_generation_prompt, std::string* out) const {
    Json vars = {{"messages", messages}, {"tools", tools}, {"documents", nullptr},
                 {"add_generation_prompt", add_generation_prompt}, {"bos_token", "<BOS>"}, {"eos_token", "<EOS>"}};
    for (auto& [k, v] : extra.items()) vars[k] = v;
    try {
      zf::jinja::Limits lim;
      lim.now = 1736937000;
      *out = t->Render(zf::jinja::FromJson(vars.dump()), lim);
      return true;
    } catch (const zf::jinja::Error&) {
      return false;
    }
  }
};

inline Json Call(const std::string& id, const std::string& name, const Json& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

struct Case {
  std::string name;
  Json assistant;
  bool calls = false;
  bool reasoning = false;
};

inline std::vector<Case> Cases() {
  const Json weather = {{"city", "Zürich, \"CH\""}, {"options", {{"unit", "celsius"}, {"hours", {6, 12}}}}, {"days", 3}};
  const Json search = {{"query", "naïve café ✓ 'quoted' \\ back"}};
  return {
      {"content", {{"role", "assistant"}, {"content", "Hello! Ünïcödé \"quotes\" and {braces}."}}},
      {"reasoning", {{"role", "assistant"}, {"content", "The answer is 4."}, {"reasoning_content", "2+2 is 4."}}, false, true},
      {"one_call", {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({Call("call00001", "get_weather", weather)})}}, true},
      {"parallel_calls",
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls", Json::array({Call("call00001", "get_weather", weather), Call("call00002", "search_web", search)})}},
       true},
      {"content_and_call",
       {{"role", "assistant"}, {"content", "Let me check."}, {"tool_calls", Json::array({Call("call00003", "search_web", search)})}},
       true},
      // Thinking before a call (Gemma 4's thought channel, <think> blocks before <tool_call>).
      {"reasoning_and_call",
       {{"role", "assistant"},
        {"content", ""},
        {"reasoning_content", "I should look up the weather."},
        {"tool_calls", Json::array({Call("call00004", "get_weather", weather)})}},
       true, true},
      // Markup and a line break in a string argument (MiniCPM5 writes it in a CDATA section).
      {"markup_argument",
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls", Json::array({Call("call00005", "search_web", {{"query", "if a < b && c > d:\n  <b>bold</b>"}})})}},
       true},
  };
}

// The assistant turn of `msgs` (ending with the assistant message): what follows the prompt of
// the earlier messages with the generation prompt, without the end-of-turn text.
inline bool AssistantText(const Renderer& r, const Json& msgs, const ChatFormat& f, std::string* text) {
  Json history = msgs;
  history.erase(history.size() - 1);
  std::string prompt, full;
  if (!r.Render(history, true, &prompt) || !r.Render(msgs, false, &full)) return false;
  std::string alone;  // the history without the generation prompt
  if (r.Render(history, false, &alone) && full.compare(0, alone.size(), alone) != 0 &&
      alone.size() - std::min(alone.size(), size_t(64)) > 0) {
    // A template that writes a trailer after the last message (Command R+'s instructions): the
    // turn is what differs from the history, without the trailer and without what the
    // generation prompt already wrote.
    size_t b = 0, e = 0;
    while (b < full.size() && b < alone.size() && full[b] == alone[b]) ++b;
    while (e < full.size() - b && e < alone.size() && full[full.size() - 1 - e] == alone[alone.size() - 1 - e]) ++e;
    if (alone.size() - b >= 64 && e >= alone.size() - b) {
      std::string t = full.substr(b, full.size() - b - e);
      for (size_t k = std::min(t.size(), prompt.size()); k > 0; --k) {
        if (prompt.compare(prompt.size() - k, k, t, 0, k) == 0) {
          t.erase(0, k);
          break;
        }
      }
      *text = t;
      return true;
    }
  }
  if (full.compare(0, prompt.size(), prompt) != 0) {
    // A generation prompt that the history does not show (DeepSeek-R1's "<think>"): the turn
    // starts where the two differ, not inside a marker.
    size_t n = 0;
    while (n < full.size() && n < prompt.size() && full[n] == prompt[n]) ++n;
    const size_t lt = n == 0 ? std::string::npos : full.rfind('<', n - 1);
    if (lt != std::string::npos && full.find('>', lt) >= n) n = lt;
    // More than a marker or an empty reasoning block (Gemma 4's "<|channel>thought\n<channel|>")
    // differs: not a turn after this prompt.
    const size_t marker = full.compare(n, 1, "<") == 0 ? 32 : 16;
    if (n < prompt.size() - std::min<size_t>(prompt.size(), marker)) return false;
    *text = full.substr(n);
  } else {
    *text = full.substr(prompt.size());
  }
  const std::string& eot = f.end_of_turn;
  if (!eot.empty() && text->size() >= eot.size() && text->compare(text->size() - eot.size(), eot.size(), eot) == 0) {
    text->resize(text->size() - eot.size());
  }
  // A prompt that opens the reasoning makes the model close it before answering, even when the
  // template's rendering of a past turn drops the reasoning block.
  if (f.reasoning.forced_open && text->find(f.reasoning.close) == std::string::npos) *text = f.reasoning.close + *text;
  return true;
}

// The template files of the corpus, sorted.
inline std::vector<fs::path> CorpusFiles() {
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".jinja") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// A template probed as zf_chat_parse probes it (tools offered unless it then fails; `thinking`:
// enable_thinking set); false where the template does not parse.
struct CorpusTemplate {
  std::string stem;
  std::string source;
  Renderer probe;
  bool with_tools = false;
  ChatFormat format;
};
inline bool LoadCorpusTemplate(const fs::path& p, bool thinking, CorpusTemplate* out) {
  out->source = ReadFile(p.string());
  out->stem = p.stem().string();
  try {
    out->probe.t = std::make_shared<zf::jinja::Template>(out->source);
  } catch (const zf::jinja::Error&) {
    return false;
  }
  if (thinking) out->probe.extra = {{"enable_thinking", true}};
  out->probe.tools = zf::chat::ProbeTools();
  std::string probe_text;  // a template that fails when offered tools is probed without (as zf_chat_parse does)
  out->with_tools = out->probe.Render(Json::array({{{"role", "user"}, {"content", "x"}}}), true, &probe_text);
  if (!out->with_tools) out->probe.tools = nullptr;
  const Renderer& probe = out->probe;
  out->format = zf::chat::DeriveChatFormat(
      [&](const Json& m, bool g, std::string* o) { return probe.Render(m, g, o); }, out->source);
  return true;
}

// The turn of case `c` as renderer `r` writes it with format `f`; false where the template
// cannot show the case.
inline bool CaseText(const Renderer& r, const ChatFormat& f, const Case& c, std::string* text) {
  if (c.calls && !f.tools.native && !f.harmony) return false;
  if (c.name == "parallel_calls" && !f.tools.parallel) return false;  // templates that write one call
  // A prompt that closed the reasoning (thinking off) is not answered with reasoning.
  if (c.reasoning && f.reasoning.prompt_closed) return false;
  Json msgs = Json::array({{{"role", "user"}, {"content", "What is the weather in Zürich?"}}, c.assistant});
  if (!AssistantText(r, msgs, f, text)) return false;
  if (c.calls && text->find("get_weather") == std::string::npos && text->find("search_web") == std::string::npos) {
    // Templates that render calls only with content null and arguments as a JSON string
    // (DeepSeek-R1 Distill Llama), or calls only without content (llama.cpp's R1).
    if (c.name == "content_and_call") return false;
    msgs[1]["content"] = nullptr;
    for (Json& tc : msgs[1]["tool_calls"]) tc["function"]["arguments"] = tc["function"]["arguments"].dump();
    if (!AssistantText(r, msgs, f, text) || text->find("get_weather") == std::string::npos) return false;
  }
  // Templates that drop reasoning (or content next to calls) from what they render are not
  // asked to give it back.
  const std::string thought = c.reasoning ? c.assistant["reasoning_content"].get<std::string>() : "";
  if (c.reasoning && text->find(thought) == std::string::npos) {
    // Templates that read it from `reasoning` (Solar Open).
    msgs[1]["reasoning"] = thought;
    msgs[1].erase("reasoning_content");
    if (!AssistantText(r, msgs, f, text)) return false;
  }
  if (c.reasoning && text->find(thought) == std::string::npos) return false;
  if (c.name == "content_and_call" && text->find("Let me check.") == std::string::npos) return false;
  return true;
}

}  // namespace chat_corpus

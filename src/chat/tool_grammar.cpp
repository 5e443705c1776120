// Building the tool-call grammar (see tool_grammar.h): one rule per tool, its literals as the
// template writes them and its arguments as an inline JSON schema (llguidance's %json).
#include "chat/tool_grammar.h"

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;

// A Lark string literal: llguidance reads it as a JSON string.
std::string Lit(const std::string& s) { return Json(s).dump(); }

// A literal as the model writes it: the text of a control token in it (Llama's <|python_tag|>,
// harmony's <|call|>) is that one token, which no text literal matches (llguidance sees a control
// token as 0xFF + its name), so it is referenced by id (<[id]>) and the text around it quoted.
// Only for rule bodies: a token reference cannot stand inside a terminal or a stop string.
std::string Seq(const std::string& s, const SpecialTokens& specials) {
  if (specials.empty()) return Lit(s);
  std::string out;
  size_t from = 0;
  while (from <= s.size()) {
    size_t best = std::string::npos, best_len = 0;
    int32_t id = -1;
    for (const auto& [text, tid] : specials) {
      const size_t at = s.find(text, from);
      if (at != std::string::npos && (at < best || (at == best && text.size() > best_len))) {
        best = at, best_len = text.size(), id = tid;
      }
    }
    const std::string before = s.substr(from, best == std::string::npos ? std::string::npos : best - from);
    if (!before.empty()) out += (out.empty() ? "" : " ") + Lit(before);
    if (best == std::string::npos) break;
    out += (out.empty() ? "" : " ") + std::string("<[") + std::to_string(id) + "]>";
    from = best + best_len;
  }
  return out.empty() ? Lit("") : out;
}

Json Parameters(const Json& fn) {
  Json p = fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : Json{{"type", "object"}};
  if (!p.contains("additionalProperties")) p["additionalProperties"] = false;
  return p;
}

const Json& Function(const Json& tool) { return tool.contains("function") ? tool["function"] : tool; }

// The generic form: {"name","arguments"} or a list of 1 to 8 of them.
std::string GenericGrammar(const Json& tools, bool parallel) {
  Json calls = Json::array();
  for (const Json& t : tools) {
    const Json& fn = Function(t);
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", fn["name"]}}}, {"arguments", Parameters(fn)}}},
                     {"required", {"name", "arguments"}},
                     {"additionalProperties", false}});
  }
  Json one = calls.size() == 1 ? calls[0] : Json{{"anyOf", calls}};
  Json schema = parallel ? Json{{"type", "array"}, {"items", one}, {"minItems", 1}, {"maxItems", 8}} : one;
  return "start: %json " + schema.dump() + "\n";
}

std::string FirstWord(const std::string& s) {
  const size_t b = s.find_first_not_of(" \n\t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_first_of(" \n\t\r", b);
  return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// XML-style arguments: one element per declared parameter, in the schema's order, the required
// ones always (the parser reads any order; the model is kept to one). A string value runs to the
// first close marker (a lazy rule); other values are JSON of their schema.
std::string XmlArgRules(const ToolCallFormat& f, const Json& params, const std::string& rule, const SpecialTokens& specials) {
  std::string g, body;
  const Json props = params.contains("properties") && params["properties"].is_object() ? params["properties"] : Json::object();
  const Json required = params.contains("required") && params["required"].is_array() ? params["required"] : Json::array();
  size_t k = 0;
  for (const auto& [key, schema] : props.items()) {
    const std::string r = rule + "_" + std::to_string(k++);
    const bool is_string = schema.is_object() && schema.value("type", Json()) == "string" && !schema.contains("enum");
    std::string value;
    if (is_string) {
      value = r + "_v";
      g += value + "[lazy]: /(?s:.*)/ " + Lit(ParamClose(f, key)) + "\n";
    } else {
      value = "%json " + (schema.is_object() ? schema : Json::object()).dump() + " " + Lit(ParamClose(f, key));
    }
    g += r + ": " + Seq(f.param_open + key + f.param_mid, specials) + " " + value + "\n";
    bool req = false;
    for (const Json& q : required) req = req || q == key;
    body += " " + r + (req ? "" : "?");
  }
  return rule + ":" + (body.empty() ? " \"\"" : body) + "\n" + g;
}

// One rule per tool: the call's pieces from `from` on.
std::string CallRules(const ToolCallFormat& f, const Json& tools, const std::string& prefix, size_t from,
                      const SpecialTokens& specials, std::string* alts) {
  std::string g;
  size_t n = 0;
  for (const Json& t : tools) {
    const Json& fn = Function(t);
    const std::string rule = prefix + "_" + std::to_string(n++);
    std::string body;
    for (size_t k = from; k < f.call.size(); ++k) {
      const Piece& p = f.call[k];
      switch (p.kind) {
        case Piece::kLiteral:
          if (!p.text.empty()) body += " " + Seq(p.text, specials);
          break;
        case Piece::kName: body += " " + Lit(fn["name"].get<std::string>()); break;
        // Ids as Mistral's templates require them (nine letters or digits); counters as digits.
        case Piece::kId: body += " /[A-Za-z0-9]{9}/"; break;
        case Piece::kIndex: body += " /[0-9]{1,2}/"; break;
        case Piece::kArgs: {
          if (f.args == ArgsStyle::kXml) {
            body += " " + rule + "_args";
            g += XmlArgRules(f, Parameters(fn), rule + "_args", specials);
            break;
          }
          // Spaced as Python's json.dumps (the templates' tojson): what the model has seen.
          Json schema = Parameters(fn);
          schema["x-guidance"] = {{"whitespace_flexible", false}, {"item_separator", ", "}, {"key_separator", ": "}};
          body += " %json " + schema.dump();
          break;
        }
      }
    }
    if (body.empty()) body = " \"\"";
    g += rule + ":" + body + "\n";
    *alts += (alts->empty() ? "" : " | ") + rule;
  }
  return g;
}

}  // namespace

// Harmony (gpt-oss, chat/harmony.h): the model writes a call as a commentary message to the
// function, <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS, and ends
// the turn with <|call|> (an end token): one call per turn. "auto" waits for the recipient.
ToolGrammar HarmonyGrammar(const Json& tools, const SpecialTokens& specials) {
  ToolGrammar out;
  out.native = true;
  std::string rules, alts;
  size_t n = 0;
  for (const Json& t : tools) {
    const Json& fn = Function(t);
    const std::string rule = "call_" + std::to_string(n++);
    Json schema = Parameters(fn);
    schema["x-guidance"] = {{"whitespace_flexible", false}, {"item_separator", ", "}, {"key_separator", ": "}};
    rules += rule + ": " + Lit(fn["name"].get<std::string>()) + " " + Seq(" <|constrain|>json<|message|>", specials) +
             " %json " + schema.dump() + "\n";
    alts += (alts.empty() ? "" : " | ") + rule;
  }
  out.trigger = "to=functions.";
  out.grammar = "start: " + Seq("<|channel|>commentary " + out.trigger, specials) + " (" + alts + ")\n" + rules;
  out.lazy_grammar = "start: " + Lit(out.trigger) + " (" + alts + ")\n" + rules;
  return out;
}

ToolGrammar ToolCallGrammar(const ChatFormat& format, const Json& tools, bool parallel, const SpecialTokens& specials) {
  if (format.harmony) return HarmonyGrammar(tools, specials);
  ToolGrammar out;
  const ToolCallFormat& f = format.tools;
  // Relaxed object literals (Gemma 4) and Python-call arguments (LFM2.5) have no JSON-schema
  // form here: the generic JSON form.
  if (!f.native || f.args == ArgsStyle::kRelaxed || f.args == ArgsStyle::kPython ||
      (f.args == ArgsStyle::kXml && (f.param_open.empty() || f.param_close.empty()))) {
    out.grammar = GenericGrammar(tools, parallel);
    return out;
  }
  out.native = true;
  // The block's opening text: its open marker and the first call's leading literal (the first
  // call's rule starts after it).
  std::string head = f.block_open;
  size_t from = 0;
  if (!f.call.empty() && f.call[0].kind == Piece::kLiteral) head += f.call[0].text, from = 1;
  std::string first_alts, call_alts;
  std::string rules = CallRules(f, tools, "first", from, specials, &first_alts);
  std::string rest = " first";
  if (parallel && f.parallel) {
    rules += CallRules(f, tools, "call", 0, specials, &call_alts);
    rest += " (" + (f.call_sep.empty() ? std::string() : Seq(f.call_sep, specials) + " ") + "(" + call_alts + ")){0,7}";
  }
  if (!f.block_close.empty()) rest += " " + Seq(f.block_close, specials);
  rules = "first: " + first_alts + "\n" + rules;
  std::string start = "start:";
  // A prompt that opened the reasoning: the model closes it first.
  if (format.reasoning.forced_open) start += " think";
  if (!head.empty()) start += " " + Seq(head, specials);
  out.grammar = start + rest + "\n" + rules;
  if (format.reasoning.forced_open) out.grammar += "think[stop=" + Lit(format.reasoning.close) + "]: /(?s:.*)/\n";
  out.trigger = FirstWord(head);
  if (!out.trigger.empty()) {
    out.lazy_grammar = "start: " + Seq(head.substr(head.find(out.trigger)), specials) + rest + "\n" + rules;
  }
  return out;
}

}  // namespace zf::chat

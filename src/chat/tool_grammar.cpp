// Building the tool-call grammar (see tool_grammar.h): one rule per tool, its literals as the
// template writes them and its arguments as an inline JSON schema (llguidance's %json).
#include "chat/tool_grammar.h"

#include <algorithm>
#include <cctype>

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

// Arguments in a template's own literal syntax, which has no JSON-schema form in llguidance:
// Gemma 4's object literal ({city:<|"|>Paris<|"|>,days:2}: bare keys, strings between quote
// marks, JSON scalars) and LFM2.5's Python call ((city='Paris', days=2): strings in single quotes,
// True/False/None, mappings as JSON). Values follow their schema (type, enum, properties, items);
// the declared parameters come in the schema's order, the required ones always (the parser reads
// any order, the model is kept to one). What the schema leaves open is any value of the syntax.
class LiteralArgs {
 public:
  LiteralArgs(const ToolCallFormat& f, const SpecialTokens& specials, std::string* rules)
      : python_(f.args == ArgsStyle::kPython), quote_(f.string_quote), specials_(specials), rules_(rules) {}

  // The rule for a call's arguments object (with its braces or parentheses).
  std::string Args(const Json& params, const std::string& rule) {
    any_ = rule + "_any";
    return Object(params, rule, python_ ? "(" : "{", python_ ? ")" : "}", python_ ? "=" : ":", python_ ? ", " : ",");
  }

 private:
  // {k1 SEP v1 , k2 SEP v2 ...}: from property i on, each present one after a separator.
  std::string Object(const Json& schema, const std::string& rule, const char* open, const char* close,
                     const char* kv, const char* sep) {
    const Json props = schema.contains("properties") && schema["properties"].is_object() ? schema["properties"] : Json();
    if (props.empty()) return AnyObject(rule, open, close, kv, sep);
    const Json req = schema.contains("required") && schema["required"].is_array() ? schema["required"] : Json::array();
    std::vector<std::string> items;
    std::vector<bool> required;
    size_t k = 0;
    for (const auto& [key, sub] : props.items()) {
      const std::string item = rule + "_p" + std::to_string(k++);
      const std::string key_lit = python_ || IsBareKey(key) ? Lit(key) : Str(key);
      Add(item + ": " + key_lit + " " + Lit(kv) + " " + Value(sub, item + "_v"));
      items.push_back(item);
      bool r = false;
      for (const Json& q : req) r = r || q == key;
      required.push_back(r);
    }
    // rest_i: what may follow once an item before i was written (each prefixed by sep).
    const size_t n = items.size();
    for (size_t i = n + 1; i-- > 0;) {
      const std::string rest = rule + "_r" + std::to_string(i), next = rule + "_r" + std::to_string(i + 1);
      const std::string first = rule + "_f" + std::to_string(i), first_next = rule + "_f" + std::to_string(i + 1);
      if (i == n) {
        Add(rest + ": \"\"");
        Add(first + ": \"\"");
        continue;
      }
      const std::string with = Lit(sep) + " " + items[i] + " " + next;
      Add(rest + ": " + (required[i] ? with : with + " | " + next));
      const std::string starts = items[i] + " " + next;
      Add(first + ": " + (required[i] ? starts : starts + " | " + first_next));
    }
    Add(rule + ": " + Lit(open) + " " + rule + "_f0 " + Lit(close));
    return rule;
  }

  std::string Value(const Json& schema, const std::string& rule) {
    // Deeper than any tool's parameters go: any value (and no recursion without end).
    if (!schema.is_object() || std::count(rule.begin(), rule.end(), '_') > 48) return Any(rule);
    if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
      std::string alts;
      for (const Json& v : schema["enum"]) alts += (alts.empty() ? "" : " | ") + Scalar(v);
      Add(rule + ": " + alts);
      return rule;
    }
    const std::string type = schema.contains("type") && schema["type"].is_string() ? schema["type"].get<std::string>() : "";
    if (type == "string") return String(rule, schema);
    // Numbers of a sane length: a small model would otherwise write digits until max_tokens.
    if (type == "integer") return Term(rule, "/-?(0|[1-9][0-9]{0,11})/");
    if (type == "number") return Term(rule, "/-?(0|[1-9][0-9]{0,11})(\\.[0-9]{1,6})?/");
    if (type == "boolean") return Term(rule, python_ ? "\"True\" | \"False\"" : "\"true\" | \"false\"");
    if (type == "null") return Term(rule, python_ ? "\"None\"" : "\"null\"");
    if (type == "object" && python_) return Term(rule, "%json " + schema.dump());  // tojson of a mapping
    if (type == "object") return Object(schema, rule, "{", "}", ":", ",");
    if (type == "array") {
      const std::string item = Value(schema.contains("items") ? schema["items"] : Json(), rule + "_i");
      const std::string sep = python_ ? ", " : ",";
      // minItems / maxItems as the schema bounds them.
      const int64_t lo = std::max<int64_t>(Count(schema, "minItems", 0), 0);
      const int64_t hi = Count(schema, "maxItems", -1);
      if (hi == 0) return Term(rule, "\"[\" \"]\"");
      const std::string more = "(" + Lit(sep) + " " + item + "){" + std::to_string(std::max<int64_t>(lo - 1, 0)) + "," +
                               (hi < 0 ? std::string() : std::to_string(hi - 1)) + "}";
      const std::string list = item + " " + more;
      Add(rule + ": \"[\" " + (lo > 0 ? list : "(" + list + ")?") + " \"]\"");
      return rule;
    }
    return Any(rule);
  }

  // Any value of the syntax, where the schema says nothing (one recursive rule per call).
  std::string Any(const std::string& rule) {
    const std::string& any = any_;
    if (!any_defined_) {
      any_defined_ = true;
      const std::string lit = python_ ? "\"True\" | \"False\" | \"None\"" : "\"true\" | \"false\" | \"null\"";
      const std::string obj = python_ ? "%json {}" : AnyObject(any + "_o", "{", "}", ":", ",");
      Add(any + ": " + String(any + "_s") + " | /-?[0-9]{1,12}(\\.[0-9]{1,6})?/ | " + lit + " | \"[\" (" + any + " (" +
          Lit(python_ ? ", " : ",") + " " + any + ")*)? \"]\" | " + obj);
    }
    Add(rule + ": " + any);
    return rule;
  }

  // An object (or a Python call's arguments) of any keys and values.
  std::string AnyObject(const std::string& rule, const char* open, const char* close, const char* kv, const char* sep) {
    const std::string pair = "/[A-Za-z_][A-Za-z0-9_]*/ " + Lit(kv) + " " + any_;
    Add(rule + ": " + Lit(open) + " (" + pair + " (" + Lit(sep) + " " + pair + ")*)? " + Lit(close));
    if (!any_defined_) Any(rule + "_a");  // defines any_
    return rule;
  }

  // A string: between single quotes (Python; the value cannot hold one), or between the
  // template's quote marks, a control token or text (then up to the first closing mark).
  // maxLength (in characters), where the schema sets one.
  std::string String(const std::string& rule, const Json& schema = Json()) {
    const int64_t max_len = Count(schema, "maxLength", -1);
    const std::string n = max_len < 0 ? "*" : "{0," + std::to_string(max_len) + "}";
    if (python_) return Term(rule, "/'[^'\\n]" + n + "'/");
    const std::string q = Seq(quote_, specials_);
    if (q != Lit(quote_)) return Term(rule, q + " /[^<]" + n + "/ " + q);  // a control token: no lexeme holds it
    Add(rule + ": " + Lit(quote_) + " " + rule + "_body");
    Add(rule + "_body[lazy]: /(?s:." + n + ")/ " + Lit(quote_));
    return rule;
  }

  std::string Str(const std::string& text) { return Seq(quote_ + text + quote_, specials_); }

  // One enum value as the syntax writes it.
  std::string Scalar(const Json& v) {
    if (v.is_string()) return python_ ? Lit("'" + v.get<std::string>() + "'") : Str(v.get<std::string>());
    if (v.is_boolean()) return Lit(python_ ? (v.get<bool>() ? "True" : "False") : (v.get<bool>() ? "true" : "false"));
    if (v.is_null()) return Lit(python_ ? "None" : "null");
    return Lit(v.dump());
  }

  // A non-negative integer field of the schema (minItems, maxLength), else `otherwise`.
  static int64_t Count(const Json& schema, const char* key, int64_t otherwise) {
    if (!schema.is_object() || !schema.contains(key) || !schema[key].is_number_integer()) return otherwise;
    const int64_t v = schema[key].get<int64_t>();
    return v < 0 || v > 100000 ? otherwise : v;
  }

  static bool IsBareKey(const std::string& k) {
    if (k.empty()) return false;
    for (char c : k) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
    return true;
  }

  std::string Term(const std::string& rule, const std::string& body) {
    Add(rule + ": " + body);
    return rule;
  }
  void Add(const std::string& line) { *rules_ += line + "\n"; }

  bool python_;
  std::string quote_;
  const SpecialTokens& specials_;
  std::string* rules_;
  std::string any_;  // the name of this call's "any value" rule
  bool any_defined_ = false;
};

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
          if (f.args == ArgsStyle::kRelaxed || f.args == ArgsStyle::kPython) {
            body += " " + LiteralArgs(f, specials, &g).Args(Parameters(fn), rule + "_args");
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
  if (!f.native || (f.args == ArgsStyle::kRelaxed && f.string_quote.empty()) ||
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
  // A trigger that opens with a control token (Gemma 4's <|tool_call>call:) is that token: the
  // generator arms on it and feeds it as the token the grammar references.
  for (const auto& [text, id] : specials) {
    if (out.trigger.size() > text.size() && out.trigger.compare(0, text.size(), text) == 0) out.trigger = text;
  }
  if (!out.trigger.empty()) {
    out.lazy_grammar = "start: " + Seq(head.substr(head.find(out.trigger)), specials) + rest + "\n" + rules;
  }
  return out;
}

namespace {

// What is wrong with `schema` at `path`, or "".
std::string CheckSchema(const Json& schema, const std::string& path) {
  if (schema.is_boolean()) return "";
  if (!schema.is_object()) return path + ": a schema must be an object or a boolean";
  static const char* const kTypes[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
  auto known = [](const Json& t) {
    if (!t.is_string()) return false;
    for (const char* k : kTypes) {
      if (t.get_ref<const std::string&>() == k) return true;
    }
    return false;
  };
  if (schema.contains("type")) {
    const Json& t = schema["type"];
    if (t.is_array()) {
      if (t.empty()) return path + ".type: an empty list of types";
      for (const Json& e : t) {
        if (!known(e)) return path + ".type: " + e.dump() + " is not a JSON Schema type";
      }
    } else if (!known(t)) {
      return path + ".type: " + (t.is_string() ? "'" + t.get<std::string>() + "'" : t.dump()) + " is not a JSON Schema type";
    }
  }
  for (const char* key : {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}) {
    if (!schema.contains(key)) continue;
    const Json& m = schema[key];
    if (!m.is_object()) return path + "." + key + ": must be an object of schemas";
    for (const auto& [name, sub] : m.items()) {
      if (std::string e = CheckSchema(sub, path + "." + key + "." + name); !e.empty()) return e;
    }
  }
  for (const char* key : {"additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "not",
                          "contains", "propertyNames", "if", "then", "else"}) {
    if (!schema.contains(key)) continue;
    if (std::string e = CheckSchema(schema[key], path + "." + key); !e.empty()) return e;
  }
  if (schema.contains("items")) {
    const Json& items = schema["items"];
    if (items.is_array()) {
      for (size_t i = 0; i < items.size(); ++i) {
        if (std::string e = CheckSchema(items[i], path + ".items[" + std::to_string(i) + "]"); !e.empty()) return e;
      }
    } else if (std::string e = CheckSchema(items, path + ".items"); !e.empty()) {
      return e;
    }
  }
  for (const char* key : {"anyOf", "oneOf", "allOf", "prefixItems"}) {
    if (!schema.contains(key)) continue;
    const Json& list = schema[key];
    if (!list.is_array() || (list.empty() && std::string(key) != "prefixItems")) {
      return path + "." + key + ": must be a non-empty list of schemas";
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (std::string e = CheckSchema(list[i], path + "." + key + "[" + std::to_string(i) + "]"); !e.empty()) return e;
    }
  }
  if (schema.contains("required")) {
    const Json& r = schema["required"];
    if (!r.is_array()) return path + ".required: must be a list of property names";
    for (const Json& n : r) {
      if (!n.is_string()) return path + ".required: " + n.dump() + " is not a property name";
    }
  }
  if (schema.contains("enum") && !schema["enum"].is_array()) return path + ".enum: must be a list";
  return "";
}

}  // namespace

std::string CheckToolParameters(const Json& tools, const std::string& what) {
  if (!tools.is_array()) return "";
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    if (!t.is_object()) continue;
    const Json& fn = t.contains("function") && t["function"].is_object() ? t["function"] : t;
    if (!fn.contains("parameters") || fn["parameters"].is_null()) continue;
    const Json name = fn.value("name", Json());
    const std::string at = what + "[" + std::to_string(i) + "]" + (name.is_string() ? " ('" + name.get<std::string>() + "')" : "");
    if (!fn["parameters"].is_object()) return at + ": parameters must be a JSON Schema object";
    if (std::string e = CheckSchema(fn["parameters"], "parameters"); !e.empty()) return at + ": " + e;
  }
  return "";
}

}  // namespace zf::chat

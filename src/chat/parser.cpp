// Parsing an assistant turn: reasoning first (its markers), then tool calls in the format the
// template showed, matched leniently about whitespace (models space JSON as they like), then the
// remaining text as content.
#include "chat/parser.h"

#include "common/json_depth.h"
#include "common/utf8.h"

#include "chat/harmony.h"
#include "chat/python_tag.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view Trim(std::string_view s) { return TrimRight(TrimLeft(s)); }

// Matches `lit` at text[i], whitespace-insensitively: whitespace in the literal is optional and
// the text may have whitespace before any of the literal's other characters. Returns the
// position after the match or npos.
size_t MatchLiteral(std::string_view text, size_t i, std::string_view lit) {
  for (char c : lit) {
    if (IsSpace(c)) continue;
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size() || text[i] != c) return std::string_view::npos;
    ++i;
  }
  return i;
}

// Function names and call ids: OpenAI allows letters, digits, '_' and '-'; templates add '.'
// and ':' (namespaces, indices).
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         (static_cast<unsigned char>(c) >= 0x80);
}
bool IsIdChar(char c) { return IsNameChar(c) || c == ':'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t ReadWhile(std::string_view text, size_t i, bool (*pred)(char), std::string* out) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  size_t s = i;
  while (i < text.size() && pred(text[i])) ++i;
  if (i == s) return std::string_view::npos;
  *out = std::string(text.substr(s, i - s));
  return i;
}

// The end of the JSON value starting at text[i] ('{', '[' or '"'), or npos if it is not
// complete (strings and escapes respected; the value itself is checked by the JSON parser).
size_t JsonValueEnd(std::string_view text, size_t i) {
  if (i >= text.size()) return std::string_view::npos;
  JsonValueScanner scan;
  const size_t n = scan.Feed(text.substr(i));
  return n == std::string_view::npos ? n : i + n;
}

bool ParseJson(std::string_view s, Json* out) {
  // Bounded before parsing: the value is dumped and walked recursively (a model can write 10^4
  // brackets).
  if (zf::JsonNesting(s, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) return false;
  *out = Json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

// Arguments written as JSON: an object, or a JSON string holding one (some models quote it).
// `lenient` (a final parse): an object's text is taken as written even where it is not valid
// JSON, since a stream has sent it as it arrived (OpenAI's arguments are the model's text too).
size_t ReadJsonArgs(std::string_view text, size_t i, std::string* out, bool lenient = false) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i >= text.size() || (text[i] != '{' && text[i] != '"')) return std::string_view::npos;
  const size_t e = JsonValueEnd(text, i);
  if (e == std::string_view::npos) return e;
  if (lenient && text[i] == '{') {
    *out = std::string(text.substr(i, e - i));
    return e;
  }
  Json v;
  if (!ParseJson(text.substr(i, e - i), &v)) return std::string_view::npos;
  if (v.is_string()) {
    Json inner;
    if (!ParseJson(v.get<std::string>(), &inner) || !inner.is_object()) return std::string_view::npos;
    v = std::move(inner);
  }
  if (!v.is_object()) return std::string_view::npos;
  // The object as the model wrote it, so that the text streamed while it was generated (a
  // prefix of it) adds up to exactly these arguments.
  *out = text[i] == '{' ? std::string(text.substr(i, e - i)) : v.dump();
  return e;
}

// The JSON-schema type of one parameter of tool `name`, or "" if not declared.
std::string ParamType(const Json& tools, const std::string& name, const std::string& key) {
  if (!tools.is_array()) return "";
  for (const Json& t : tools) {
    const Json* fn = t.contains("function") ? &t["function"] : &t;
    if (!fn->is_object() || fn->value("name", std::string()) != name) continue;
    const Json& params = fn->contains("parameters") ? (*fn)["parameters"] : Json();
    if (!params.is_object() || !params.contains("properties") || !params["properties"].contains(key)) return "";
    const Json& p = params["properties"][key];
    if (p.is_object() && p.contains("type") && p["type"].is_string()) return p["type"].get<std::string>();
    return "";
  }
  return "";
}

// Python's repr of a dict or list (templates that write `value | string`) as JSON text:
// single-quoted strings, True / False / None. Not a Python parser: enough for literals.
std::string PythonLiteralToJson(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      const char q = c;
      out.push_back('"');
      for (++i; i < s.size() && s[i] != q; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
          if (s[i + 1] == '\'') out.push_back('\'');
          else out.append(s, i, 2);
          ++i;
        } else if (s[i] == '"') out += "\\\"";
        else out.push_back(s[i]);
      }
      out.push_back('"');
    } else if (s.compare(i, 4, "True") == 0) out += "true", i += 3;
    else if (s.compare(i, 5, "False") == 0) out += "false", i += 4;
    else if (s.compare(i, 4, "None") == 0) out += "null", i += 3;
    else out.push_back(c);
  }
  return out;
}

// A value written as text (XML-style arguments): strings raw, other types as JSON, booleans
// possibly as Python writes them.
Json TextValue(std::string_view raw, const std::string& type) {
  const std::string s(raw);
  if (type == "string") return s;
  if (type == "boolean") {
    if (s == "True" || s == "true") return true;
    if (s == "False" || s == "false") return false;
  }
  if ((type == "null" || type.empty()) && (s == "None" || s == "null")) return nullptr;
  Json v;
  if (ParseJson(s, &v)) return v;
  if (!s.empty() && (s.front() == '{' || s.front() == '[') && ParseJson(PythonLiteralToJson(s), &v)) return v;
  return s;
}

// param_mid after a key: as the template wrote it, or, where it holds attributes after the key
// (DeepSeek's DSML `" string="true">`, Kimi's `" type="string"<|sep|>`), with any attribute
// values: the key's closing character, then up to what follows the last attribute.
size_t MatchParamMid(std::string_view text, size_t i, std::string_view mid) {
  const size_t k = MatchLiteral(text, i, mid);
  if (k != std::string_view::npos) return k;
  mid = Trim(mid);
  const size_t q = mid.rfind('"');
  if (mid.size() < 2 || mid.find(' ') == std::string_view::npos || q == 0 || q == std::string_view::npos ||
      q + 1 >= mid.size() || text.substr(i, 1) != mid.substr(0, 1)) {
    return std::string_view::npos;
  }
  const std::string_view tail = mid.substr(q + 1);
  const size_t at = text.find(tail, i + 1);
  // Only attributes in between: no line break, no other tag.
  if (at == std::string_view::npos || text.substr(i, at - i).find_first_of("\n<") != std::string_view::npos) {
    return std::string_view::npos;
  }
  return at + tail.size();
}

constexpr std::string_view kCdataOpen = "<![CDATA[";
constexpr std::string_view kCdataClose = "]]>";

// A CDATA section at text[k] (after whitespace): the position after it, or npos.
size_t CdataEnd(std::string_view text, size_t k) {
  while (k < text.size() && IsSpace(text[k])) ++k;
  if (text.substr(k, kCdataOpen.size()) != kCdataOpen) return std::string_view::npos;
  const size_t e = text.find(kCdataClose, k + kCdataOpen.size());
  return e == std::string_view::npos ? e : e + kCdataClose.size();
}

// The text of the CDATA section that starts at text[k] (after whitespace) and ends at `end`.
std::string_view CdataText(std::string_view text, size_t k, size_t end) {
  while (k < text.size() && IsSpace(text[k])) ++k;
  const size_t b = k + kCdataOpen.size();
  return text.substr(b, end - kCdataClose.size() - b);
}

size_t ReadXmlArgs(std::string_view text, size_t i, const ToolCallFormat& f, const Json& tools,
                   const std::string& name, std::string* out) {
  Json args = Json::object();
  for (;;) {
    size_t j = MatchLiteral(text, i, f.param_open);
    if (j == std::string_view::npos || Trim(f.param_open).empty()) break;
    // The key runs to the first non-space character of param_mid. What does not read as a key
    // and a value is not a parameter (MiniMax-M3's </invoke> after its parameters): the
    // parameters end before it.
    const std::string_view mid = Trim(f.param_mid);
    size_t k = j;
    while (k < text.size() && IsSpace(text[k])) ++k;
    size_t key_start = k;
    size_t key_end = mid.empty() ? std::string_view::npos : text.find(mid.front(), k);
    if (key_end == std::string_view::npos) break;
    std::string key(Trim(text.substr(key_start, key_end - key_start)));
    if (key.empty()) break;
    const std::string close_text = ParamClose(f, key);
    const std::string_view close = Trim(close_text);
    k = MatchParamMid(text, key_end, f.param_mid);
    if (k == std::string_view::npos || close.empty()) break;
    // A value in a CDATA section (MiniCPM5 writes strings holding '<', '&' or a line break so)
    // is its text exactly, and may hold the close marker.
    const size_t cdata = CdataEnd(text, k);
    const size_t vend = text.find(close, cdata == std::string_view::npos ? k : cdata);
    if (vend == std::string_view::npos) break;
    // A repeated key keeps its first value: what was streamed of it stays true.
    if (!args.contains(key)) {
      args[key] = cdata != std::string_view::npos && Trim(text.substr(cdata, vend - cdata)).empty()
                      ? Json(std::string(CdataText(text, k, cdata)))
                      : TextValue(Trim(text.substr(k, vend - k)), ParamType(tools, name, key));
    }
    i = MatchLiteral(text, vend, close_text);
  }
  *out = args.dump();
  return i;
}

// MatchLiteral for a text that may stop inside the literal: npos with *ran_out set when the
// text ended while it still matched.
size_t MatchLiteralPartial(std::string_view text, size_t i, std::string_view lit, bool* ran_out) {
  for (char c : lit) {
    if (IsSpace(c)) continue;
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) {
      *ran_out = true;
      return std::string_view::npos;
    }
    if (text[i] != c) return std::string_view::npos;
    ++i;
  }
  return i;
}

// The JSON text of `v` for a prefix that a later dump extends (never throws on odd bytes).
std::string Dump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// XML-style arguments still arriving, as the start of the JSON the complete ones will be:
// "{", the complete parameters, then the value so far of a string parameter (its whitespace and
// what may be the start of the close marker held back, as the final parse trims them). Returns
// the position after the arguments when they ended, or npos (with *ran_out when the text ended
// inside them).
size_t ReadXmlArgsPartial(std::string_view text, size_t i, const ToolCallFormat& f, const Json& tools,
                          const std::string& name, std::string* out, bool* ran_out, bool* open_string = nullptr) {
  Json args = Json::object();
  auto body = [&] {
    std::string s = Dump(args);
    s.pop_back();  // the closing brace: more may come
    return s;
  };
  const std::string_view mid = Trim(f.param_mid);
  if (Trim(f.param_open).empty() || Trim(f.param_close).empty() || mid.empty()) return std::string_view::npos;
  for (;;) {
    bool ro = false;
    size_t j = MatchLiteralPartial(text, i, f.param_open, &ro);
    if (j == std::string_view::npos) {
      if (!ro) {
        if (out) *out = Dump(args);
        return i;  // no more parameters
      }
      break;
    }
    size_t k = j;
    while (k < text.size() && IsSpace(text[k])) ++k;
    const size_t key_end = text.find(mid.front(), k);
    if (key_end == std::string_view::npos) break;  // the key is still arriving
    const std::string key(Trim(text.substr(k, key_end - k)));
    if (key.empty()) return std::string_view::npos;
    k = MatchLiteralPartial(text, key_end, f.param_mid, &ro);
    if (k == std::string_view::npos) {
      // Attributes that differ from the probe's (see MatchParamMid), or the text ends in them.
      k = MatchParamMid(text, key_end, f.param_mid);
      if (k == std::string_view::npos) {
        const std::string_view m = Trim(f.param_mid);
        const size_t q = m.rfind('"');
        const bool attrs = q != std::string_view::npos && q > 0 && m.find(' ') != std::string_view::npos;
        if (!ro && !(attrs && text.substr(key_end).find('\n') == std::string_view::npos)) {
          return std::string_view::npos;
        }
        break;
      }
    }
    const std::string type = ParamType(tools, name, key);
    const std::string close_text = ParamClose(f, key);
    const std::string_view close = Trim(close_text);
    const size_t cdata = CdataEnd(text, k);
    // A CDATA section not yet closed: the value is still arriving, whatever it holds.
    const bool open_cdata = cdata == std::string_view::npos && TrimLeft(text.substr(k)).substr(0, kCdataOpen.size()) == kCdataOpen;
    const size_t vend = open_cdata ? std::string_view::npos : text.find(close, cdata == std::string_view::npos ? k : cdata);
    if (vend == std::string_view::npos) {
      // A string value so far; other types are said once complete. A repeated key is dropped.
      if (type != "string" || args.contains(key)) break;
      std::string_view v = TrimLeft(text.substr(k));
      if (v.substr(0, kCdataOpen.size()) == kCdataOpen.substr(0, std::min(v.size(), kCdataOpen.size()))) {
        // A CDATA section (or its start): said once complete, since text after its close
        // would make the whole value raw text (ReadXmlArgs).
        v = std::string_view();
      } else {
        v = v.substr(0, v.size() - PartialSuffix(v, close));
      }
      while (!v.empty() && IsSpace(v.back())) v.remove_suffix(1);
      *ran_out = true;
      if (open_string) *open_string = true;
      if (!out) return std::string_view::npos;
      std::string head = body();
      if (!args.empty()) head += ",";
      std::string value = Dump(Json(std::string(WholeUtf8Prefix(v))));
      value.pop_back();  // the closing quote
      *out = head + Dump(Json(key)) + ":" + value;
      return std::string_view::npos;
    }
    if (!args.contains(key)) {
      args[key] = cdata != std::string_view::npos && Trim(text.substr(cdata, vend - cdata)).empty()
                      ? Json(std::string(CdataText(text, k, cdata)))
                      : TextValue(Trim(text.substr(k, vend - k)), type);
    }
    i = MatchLiteralPartial(text, vend, close_text, &ro);
    if (i == std::string_view::npos) {
      if (!ro) return std::string_view::npos;
      break;
    }
  }
  if (out) *out = body();
  *ran_out = true;
  return std::string_view::npos;
}

bool Offered(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const Json& t : tools) {
    const Json& fn = t.contains("function") ? t["function"] : t;
    if (fn.is_object() && fn.value("name", std::string()) == name) return true;
  }
  return false;
}

// Streaming: a call begun at text[i] that the text ends inside. Reported (true) once its name is
// written and followed by more of the call, and its id (formats that write one) is read; the
// arguments are what can be said so far, a prefix of the complete call's: for JSON arguments
// the text as generated, for XML-style ones see ReadXmlArgsPartial. A name that is not an
// offered tool is not reported (the text may turn out to be content). *scan (if given) says
// whether the text ended inside the call (reported or not) and where JSON arguments began.
bool MatchPartialCall(std::string_view text, size_t i, const ToolCallFormat& f, const Json& tools, ToolCall* call,
                      CallScan* scan = nullptr) {
  bool ran_out = false, has_id = false;
  size_t name_end = std::string_view::npos, args_begin = std::string_view::npos, xml_args = std::string_view::npos;
  for (const Piece& p : f.call) has_id = has_id || p.kind == Piece::kId;
  auto done = [&](bool reported) {
    if (scan) scan->ran_out = ran_out, scan->args_begin = args_begin, scan->xml_args = xml_args;
    return reported;
  };
  for (const Piece& p : f.call) {
    switch (p.kind) {
      case Piece::kLiteral: i = MatchLiteralPartial(text, i, p.text, &ran_out); break;
      case Piece::kName:
      case Piece::kId:
      case Piece::kIndex: {
        std::string word;
        const size_t from = i;
        i = ReadWhile(text, i, p.kind == Piece::kName ? IsNameChar : p.kind == Piece::kId ? IsIdChar : IsDigit, &word);
        if (i == std::string_view::npos || i == text.size()) {  // nothing yet, or it may go on
          ran_out = i == text.size() || TrimLeft(text.substr(from)).empty();
          i = std::string_view::npos;
          break;
        }
        if (p.kind == Piece::kName && name_end != std::string_view::npos) {
          if (word != call->name) return done(false);  // the name written again (muse's header and invoke)
        } else if (p.kind == Piece::kName) call->name = word, name_end = i;
        else if (p.kind == Piece::kId) call->id = word;
        break;
      }
      case Piece::kArgs:
        if (f.args == ArgsStyle::kRelaxed || f.args == ArgsStyle::kPython) {
          ran_out = true;  // said once complete
          return done(false);
        }
        if (f.args == ArgsStyle::kXml) {
          xml_args = i;
          i = ReadXmlArgsPartial(text, i, f, tools, call->name, &call->arguments, &ran_out);
          break;
        }
        while (i < text.size() && IsSpace(text[i])) ++i;
        if (i == text.size()) {
          ran_out = true;
          i = std::string_view::npos;
        } else if (text[i] != '{') {
          // Arguments quoted as a string are said once complete.
          ran_out = text[i] == '"' && JsonValueEnd(text, i) == std::string_view::npos;
          return done(false);
        } else if (const size_t e = JsonValueEnd(text, i); e == std::string_view::npos) {
          args_begin = i;
          call->arguments = std::string(WholeUtf8Prefix(text.substr(i)));
          ran_out = true;
          i = std::string_view::npos;
        } else {
          i = ReadJsonArgs(text, i, &call->arguments, true);
        }
        break;
    }
    if (i == std::string_view::npos) break;
  }
  if (!ran_out) return done(false);  // a mismatch, or a complete call (MatchCall reads those)
  if (name_end == std::string_view::npos || Trim(text.substr(name_end)).empty()) return done(false);
  if (has_id && call->id.empty()) return done(false);
  return done(Offered(tools, call->name));
}

// One call: the pattern's literals and slots in order. `lenient` (a final parse, see
// ParseAssistant): a call read through its JSON arguments ends there when what follows them does
// not match the rest of the pattern (a stream has sent the call once its arguments began).
// *scan (if given) says whether the text ended inside the call and where its JSON arguments are.
// `first_piece`: where in the pattern text[i] is (streaming reads what follows JSON arguments
// read piece by piece, with scan->args_end set).
size_t MatchCall(std::string_view text, size_t i, const ToolCallFormat& f, const Json& tools, ToolCall* call,
                 bool lenient = false, CallScan* scan = nullptr, size_t first_piece = 0) {
  CallScan local;
  CallScan& sc = scan ? *scan : local;
  // Lenient, XML arguments of an offered tool reached (a stream has sent the call): the text
  // ending inside them ends the call there, its arguments what could be said of them (a string
  // value so far, closed); what follows them not matching ends the call after them.
  size_t xml_end = std::string_view::npos;
  auto xml_cut = [&]() -> size_t {
    if (!lenient || sc.xml_args == std::string_view::npos || !Offered(tools, call->name)) return std::string_view::npos;
    bool ran_out = false, open_string = false;
    if (ReadXmlArgsPartial(text, sc.xml_args, f, tools, call->name, nullptr, &ran_out, &open_string) ==
            std::string_view::npos && ran_out) {
      std::string so_far;  // read again only where wanted: a long value's JSON is most of the cost
      if (!sc.skip_cut_args) {
        ReadXmlArgsPartial(text, sc.xml_args, f, tools, call->name, &so_far, &ran_out);
        call->arguments = so_far + (open_string ? "\"}" : "}");
      }
      sc.cut = sc.ran_out = true;
      return text.size();
    }
    return std::string_view::npos;
  };
  auto fail = [&] {
    if (lenient && sc.args_end != std::string_view::npos) {
      sc.cut = true;
      return sc.args_end;
    }
    if (const size_t e = xml_cut(); e != std::string_view::npos) return e;
    if (lenient && xml_end != std::string_view::npos && Offered(tools, call->name)) {
      sc.cut = true;
      return xml_end;
    }
    return std::string_view::npos;
  };
  for (size_t pi = first_piece; pi < f.call.size(); ++pi) {
    const Piece& p = f.call[pi];
    switch (p.kind) {
      case Piece::kLiteral: i = MatchLiteralPartial(text, i, p.text, &sc.ran_out); break;
      case Piece::kName: {
        // A name written twice in one call must be the same name.
        std::string name;
        const size_t from = i;
        i = ReadWhile(text, i, IsNameChar, &name);
        if (i == std::string_view::npos) sc.ran_out = TrimLeft(text.substr(from)).empty();
        if (i != std::string_view::npos && !call->name.empty() && name != call->name) return fail();
        call->name = name;
        break;
      }
      case Piece::kId:
      case Piece::kIndex: {
        std::string word;
        const size_t from = i;
        i = ReadWhile(text, i, p.kind == Piece::kId ? IsIdChar : IsDigit, &word);
        if (i == std::string_view::npos) sc.ran_out = TrimLeft(text.substr(from)).empty();
        if (p.kind == Piece::kId) call->id = word;
        break;
      }
      case Piece::kArgs:
        if (f.args == ArgsStyle::kRelaxed || f.args == ArgsStyle::kPython) {
          while (i < text.size() && IsSpace(text[i])) ++i;
          Json v;
          i = f.args == ArgsStyle::kPython ? ReadPythonArgs(text, i, &v) : ReadRelaxedObject(text, i, f.string_quote, &v);
          if (i != std::string_view::npos) call->arguments = Dump(v);
          break;
        }
        if (f.args == ArgsStyle::kJson) {
          while (i < text.size() && IsSpace(text[i])) ++i;
          if (i < text.size() && text[i] == '{') sc.args_begin = i;
          if (i >= text.size() || JsonValueEnd(text, i) == std::string_view::npos) sc.ran_out = true;
          i = ReadJsonArgs(text, i, &call->arguments, lenient);
          if (i != std::string_view::npos && sc.args_begin != std::string_view::npos) sc.args_end = i;
          break;
        }
        sc.xml_args = i;
        i = xml_end = ReadXmlArgs(text, i, f, tools, call->name, &call->arguments);
        break;
    }
    if (i == std::string_view::npos) return fail();
  }
  if (const size_t e = xml_cut(); e != std::string_view::npos) return e;  // what matched after the
  return i;                                                                  // arguments is a parameter cut short
}

// The first word (non-space run) a tool-call block starts with: where the parser looks for
// calls. Only a word, since the model may space the rest differently.
std::string Anchor(const ToolCallFormat& f) {
  std::string a(Trim(f.block_open));
  for (const Piece& p : f.call) {
    if (!a.empty() || p.kind != Piece::kLiteral) break;
    a = std::string(Trim(p.text));
  }
  const size_t ws = a.find_first_of(" \n\t\r");
  return ws == std::string::npos ? a : a.substr(0, ws);
}

}  // namespace

// The generic JSON form for templates without their own: the whole text (or a ```json fenced
// block) is {"name","arguments"|"parameters"}, a list of those, or {"tool_calls":[...]}; every
// name must be an offered tool.
bool GenericCalls(std::string_view text, const Json& tools, std::vector<ToolCall>* calls) {
  std::string_view t = Trim(text);
  if (t.size() > 7 && t.substr(0, 3) == "```") {
    const size_t nl = t.find('\n');
    const size_t end = t.rfind("```");
    if (nl == std::string_view::npos || end <= nl) return false;
    t = Trim(t.substr(nl + 1, end - nl - 1));
  }
  if (t.empty() || (t.front() != '{' && t.front() != '[')) return false;
  Json v;
  if (!ParseJson(t, &v)) return false;
  if (v.is_object() && v.contains("tool_calls")) v = v["tool_calls"];
  else if (v.is_object() && v.contains("tool_call")) v = Json::array({v["tool_call"]});
  if (v.is_object()) v = Json::array({v});
  if (!v.is_array() || v.empty()) return false;
  std::vector<ToolCall> out;
  for (Json& c : v) {
    if (c.is_object() && c.contains("function") && c["function"].is_object()) c = c["function"];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return false;
    ToolCall tc;
    tc.name = c["name"].get<std::string>();
    bool offered = false;
    if (tools.is_array()) {
      for (const Json& tl : tools) {
        const Json& fn = tl.contains("function") ? tl["function"] : tl;
        if (fn.is_object() && fn.value("name", std::string()) == tc.name) offered = true;
      }
    }
    if (!offered) return false;
    Json args = c.contains("arguments") ? c["arguments"] : c.contains("parameters") ? c["parameters"] : Json::object();
    if (args.is_string()) {
      Json inner;
      if (!ParseJson(args.get<std::string>(), &inner)) return false;
      args = inner;
    }
    if (!args.is_object()) return false;
    tc.arguments = args.dump();
    out.push_back(std::move(tc));
  }
  *calls = std::move(out);
  return true;
}

size_t PartialSuffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Deterministic call ids for formats that write none, from what is known when the call starts
// (the text before it, its name, its place), so that a streamed call keeps its first id.
std::string DerivedId(std::string_view before, const std::string& name, size_t index) {
  uint64_t h = 1469598103934665603ull;
  for (std::string_view s : {before, std::string_view(name)}) {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  h = (h ^ index) * 1099511628211ull;
  static const char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  for (int k = 0; k < 16; ++k) id.push_back(kHex[(h >> (60 - 4 * k)) & 15]);
  return id;
}

namespace {

// One value of an object literal (see ReadRelaxedObject); depth-limited.
size_t ReadRelaxedValue(std::string_view text, size_t i, std::string_view quote, Json* out, int depth) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i >= text.size() || depth > 64) return std::string_view::npos;
  if (text.substr(i, quote.size()) == quote) {
    const size_t e = text.find(quote, i + quote.size());
    if (e == std::string_view::npos) return e;
    *out = std::string(text.substr(i + quote.size(), e - i - quote.size()));
    return e + quote.size();
  }
  if (text[i] == '{') {
    *out = Json::object();
    ++i;
    for (bool first = true;; first = false) {
      while (i < text.size() && IsSpace(text[i])) ++i;
      if (i >= text.size()) return std::string_view::npos;
      if (text[i] == '}') return i + 1;
      if (!first) {
        if (text[i] != ',') return std::string_view::npos;
        ++i;
        while (i < text.size() && IsSpace(text[i])) ++i;
      }
      std::string key;
      if (text.substr(i, quote.size()) == quote) {
        const size_t e = text.find(quote, i + quote.size());
        if (e == std::string_view::npos) return e;
        key = std::string(text.substr(i + quote.size(), e - i - quote.size()));
        i = e + quote.size();
      } else {
        const size_t s = i;
        while (i < text.size() && text[i] != ':' && text[i] != ',' && text[i] != '}' && text[i] != '{') ++i;
        key = std::string(Trim(text.substr(s, i - s)));
      }
      while (i < text.size() && IsSpace(text[i])) ++i;
      if (key.empty() || i >= text.size() || text[i] != ':') return std::string_view::npos;
      Json v;
      i = ReadRelaxedValue(text, i + 1, quote, &v, depth + 1);
      if (i == std::string_view::npos) return i;
      if (!out->contains(key)) (*out)[key] = std::move(v);
    }
  }
  if (text[i] == '[') {
    *out = Json::array();
    ++i;
    for (bool first = true;; first = false) {
      while (i < text.size() && IsSpace(text[i])) ++i;
      if (i >= text.size()) return std::string_view::npos;
      if (text[i] == ']') return i + 1;
      if (!first) {
        if (text[i] != ',') return std::string_view::npos;
        ++i;
      }
      Json v;
      i = ReadRelaxedValue(text, i, quote, &v, depth + 1);
      if (i == std::string_view::npos) return i;
      out->push_back(std::move(v));
    }
  }
  // A bare scalar: a JSON number or literal (else its text).
  const size_t s = i;
  while (i < text.size() && text[i] != ',' && text[i] != '}' && text[i] != ']' && text.substr(i, quote.size()) != quote) ++i;
  const std::string_view lit = Trim(text.substr(s, i - s));
  if (lit.empty()) return std::string_view::npos;
  if (!ParseJson(lit, out) || out->is_object() || out->is_array()) *out = std::string(lit);
  return i;
}

}  // namespace

size_t ReadRelaxedObject(std::string_view text, size_t i, std::string_view quote, Json* out) {
  if (i >= text.size() || text[i] != '{' || quote.empty()) return std::string_view::npos;
  return ReadRelaxedValue(text, i, quote, out, 0);
}

bool MatchToolCalls(std::string_view text, size_t pos, const ChatFormat& format, const Json& tools,
                    std::vector<ToolCall>* calls, size_t* end, bool partial, bool lenient) {
  const ToolCallFormat& f = format.tools;
  size_t i = MatchLiteral(text, pos, f.block_open);
  if (i == std::string_view::npos) return false;
  std::vector<ToolCall> found;
  for (;;) {
    ToolCall c;
    size_t j = found.empty() ? i : MatchLiteral(text, i, f.call_sep);
    const size_t start = j;
    if (j != std::string_view::npos) j = MatchCall(text, j, f, tools, &c, lenient && !partial);
    if (j == std::string_view::npos) break;
    if (c.id.empty()) c.id = DerivedId(text.substr(0, start), c.name, found.size());
    found.push_back(std::move(c));
    i = j;
  }
  if (partial || lenient) {
    // The text may end inside the next call: listed with its arguments so far. A final parse
    // (lenient) lists one whose JSON arguments began (generation stopped inside them; OpenAI
    // gives such a call too): a stream has sent it.
    bool ran_out = false;
    const size_t j = found.empty() ? i : MatchLiteralPartial(text, i, f.call_sep, &ran_out);
    ToolCall c;
    CallScan scan;
    if (j != std::string_view::npos && MatchPartialCall(text, j, f, tools, &c, &scan) &&
        (partial || scan.args_begin != std::string_view::npos)) {
      if (c.id.empty()) c.id = DerivedId(text.substr(0, j), c.name, found.size());
      found.push_back(std::move(c));
      for (auto& fc : found) calls->push_back(std::move(fc));
      *end = text.size();
      return true;
    }
  }
  if (found.empty()) return false;
  // A missing close (generation stopped) is tolerated, and so is one cut after one of its
  // markers (the end-of-sequence token that ends Hy3's is not in the text).
  for (size_t n = f.block_close.size(); n > 0; --n) {
    if (n < f.block_close.size() && f.block_close[n - 1] != '>') continue;
    const size_t k = MatchLiteral(text, i, std::string_view(f.block_close).substr(0, n));
    if (k != std::string_view::npos) {
      i = k;
      break;
    }
  }
  for (auto& c : found) calls->push_back(std::move(c));
  *end = i;
  return true;
}

namespace {

ParsedMessage ReadTurn(std::string_view text, const ChatFormat& format, const Json& tools, bool partial, bool lenient) {
  if (format.harmony) return ParseHarmony(text, tools, partial);
  ParsedMessage m;
  std::string_view rest = text;
  // 1. Reasoning: opened by the output or by the generation prompt, closed by the close marker
  // (or by the end of the text when generation stopped while thinking).
  const ReasoningFormat& r = format.reasoning;
  if (!r.close.empty()) {
    const std::string_view t = Trim(rest);
    if (!r.open.empty() && t.substr(0, r.open.size()) == r.open) {
      const std::string_view in = t.substr(r.open.size());
      const size_t c = in.find(r.close);
      const size_t held = partial && c == std::string_view::npos ? PartialSuffix(in, r.close) : 0;
      m.reasoning = std::string(Trim(in.substr(0, c == std::string_view::npos ? in.size() - held : c)));
      rest = c == std::string_view::npos ? std::string_view() : in.substr(c + r.close.size());
    } else if (t.substr(0, r.close.size()) == r.close) {
      rest = t.substr(r.close.size());  // an empty reasoning block some templates write
    } else if (const size_t c = r.forced_open ? rest.find(r.close) : std::string_view::npos;
               c != std::string_view::npos) {
      // The generation prompt opened the reasoning: the output starts inside it.
      m.reasoning = std::string(Trim(rest.substr(0, c)));
      rest = rest.substr(c + r.close.size());
    } else if (r.forced_open) {
      // Still inside the reasoning the prompt opened: the turn so far, or a turn that stopped
      // (max_tokens) before closing it.
      const size_t held = partial ? PartialSuffix(rest, r.close) : 0;
      m.reasoning = std::string(Trim(rest.substr(0, rest.size() - held)));
      rest = std::string_view();
    } else if (partial && ((!r.open.empty() && r.open.compare(0, t.size(), t) == 0) || r.close.compare(0, t.size(), t) == 0)) {
      rest = std::string_view();  // the text so far may be the start of a marker
    }
  }
  m.has_reasoning = !m.reasoning.empty();
  // The template's header before content (a final channel, a content tag) is not content.
  const std::string_view prefix = Trim(format.content_prefix);
  if (!prefix.empty()) {
    const std::string_view t = Trim(rest);
    if (t.substr(0, prefix.size()) == prefix) rest = t.substr(prefix.size());
    else if (partial && prefix.compare(0, t.size(), t) == 0) rest = std::string_view();
  }
  // 2. Tool calls: Llama 3.x's built-in call after <|python_tag|> (known once the turn ends: its
  // forms differ from the first characters on), else the first place the template's call block
  // matches.
  if (format.python_tag) {
    const size_t tag = rest.find(kPythonTag);
    ToolCall c;
    if (tag != std::string_view::npos && (partial || ParsePythonTagCall(rest.substr(tag + kPythonTag.size()), &c))) {
      // Whitespace at the content's start is the format's only after something read out before
      // it (a stream cannot know of a call to come when it sends the first words).
      std::string_view before = rest.substr(0, tag);
      if (rest.data() != text.data()) before = TrimLeft(before);
      if (!partial) before = TrimRight(before);
      m.content = std::string(before);
      if (!partial) {
        c.id = DerivedId(text.substr(0, static_cast<size_t>(rest.data() - text.data()) + tag), c.name, 0);
        m.tool_calls.push_back(std::move(c));
      }
      return m;
    }
    if (partial && tag == std::string_view::npos) rest = rest.substr(0, rest.size() - PartialSuffix(rest, kPythonTag));
  }
  std::string content(rest);
  if (format.tools.native) {
    // Where a block of calls may start: each occurrence of its first marker; for formats whose
    // calls start with the bare name (the generation prompt opened the block, e.g. Functionary's
    // ">>>"), the start of the text and each call separator.
    const std::string anchor = Anchor(format.tools);
    std::vector<std::pair<size_t, size_t>> starts;  // (content ends, match begins)
    if (!anchor.empty()) {
      for (size_t p = rest.find(anchor); p != std::string_view::npos; p = rest.find(anchor, p + 1)) starts.push_back({p, p});
    } else {
      starts.push_back({0, 0});
      const std::string_view sep = Trim(format.tools.call_sep);
      for (size_t p = sep.empty() ? std::string_view::npos : rest.find(sep); p != std::string_view::npos;
           p = rest.find(sep, p + 1)) {
        starts.push_back({p, p + sep.size()});
      }
    }
    bool matched = false;
    for (const auto& [content_end, p] : starts) {
      size_t end = 0;
      std::vector<ToolCall> calls;
      if (MatchToolCalls(rest, p, format, tools, &calls, &end, partial, lenient)) {
        m.tool_calls = std::move(calls);
        content = std::string(TrimRight(rest.substr(0, content_end)));
        std::string_view after = Trim(rest.substr(end));
        // Content written after the calls, before the block's close (Gemma 4 writes the calls,
        // the content, then <|tool_response>): the close is the format's.
        const std::string_view close = Trim(format.tools.block_close);
        if (!close.empty() && after.size() >= close.size() && after.substr(after.size() - close.size()) == close) {
          after = Trim(after.substr(0, after.size() - close.size()));
        }
        // Partial: what follows the complete calls may be the next call, still arriving.
        if (!after.empty() && !partial) content += (content.empty() ? "" : "\n") + std::string(after);
        matched = true;
        break;
      }
    }
    if (partial && !matched) {
      // Content stops where a call may be starting: at the first marker, or at a trailing
      // prefix of it; with no marker (calls opened by the prompt) a call may start anywhere.
      if (anchor.empty()) content.clear();
      else if (!starts.empty()) content = std::string(rest.substr(0, starts.front().first));
      else content = std::string(rest.substr(0, rest.size() - PartialSuffix(rest, anchor)));
    }
  }
  if (m.tool_calls.empty() && GenericCalls(rest, tools, &m.tool_calls)) content.clear();
  if (partial && m.tool_calls.empty() && tools.is_array() && !tools.empty()) {
    // The generic JSON form is only known when complete: hold back text that may be one.
    const std::string_view t = Trim(rest);
    if (!t.empty() && (t.front() == '{' || t.front() == '[' || t.front() == '`')) content.clear();
  }
  // Whitespace next to what was read out (reasoning, a header, calls) is the format's; a text
  // with nothing read out of it is the content exactly as generated. Whitespace at the start is
  // trimmed only after something read out before the content: a stream sends the first words
  // before it can know of a call to come.
  const bool read_before = rest.data() != text.data();
  std::string_view shaped = content;
  if (read_before) shaped = TrimLeft(shaped);
  if (!partial && (read_before || rest.size() != text.size() || !m.tool_calls.empty())) shaped = TrimRight(shaped);
  m.content = std::string(shaped);
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {  // generic calls: known only complete
    if (m.tool_calls[k].id.empty()) m.tool_calls[k].id = DerivedId(m.tool_calls[k].arguments, m.tool_calls[k].name, k);
  }
  return m;
}

}  // namespace

size_t JsonValueScanner::Feed(std::string_view s) {
  for (size_t k = 0; k < s.size(); ++k) {
    const char c = s[k];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return k + 1;
      }
      continue;
    }
    if (depth < 0) return std::string_view::npos;
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return k + 1;
      if (depth < 0) return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

std::string CallAnchor(const ToolCallFormat& f) { return Anchor(f); }

CallRead ReadCallAt(std::string_view text, size_t pos, size_t index, const ChatFormat& format, const Json& tools) {
  const ToolCallFormat& f = format.tools;
  CallRead r;
  bool ran_out = false;
  const size_t j = MatchLiteralPartial(text, pos, index == 0 ? f.block_open : f.call_sep, &ran_out);
  if (j == std::string_view::npos) {
    r.result = ran_out ? CallRead::kIncomplete : CallRead::kMismatch;
    return r;
  }
  r.begin = j;
  CallScan scan;
  scan.skip_cut_args = true;  // such a call is incomplete: MatchPartialCall reads its arguments
  ToolCall c;
  const size_t e = MatchCall(text, j, f, tools, &c, /*lenient=*/true, &scan);
  // A call that reaches the end of the text may go on where its last piece is a word or XML
  // parameters; one cut after its arguments may still match where the text ran out.
  const Piece::Kind last = f.call.empty() ? Piece::kLiteral : f.call.back().kind;
  const bool may_go_on = e == text.size() && last != Piece::kLiteral &&
                         !(last == Piece::kArgs && f.args != ArgsStyle::kXml);
  if (e != std::string_view::npos && !(scan.cut && scan.ran_out) && !may_go_on) {
    r.result = CallRead::kComplete;
    r.call = std::move(c);
    r.end = e;
    return r;
  }
  ToolCall partial;
  CallScan ps;
  const bool reported = MatchPartialCall(text, j, f, tools, &partial, &ps);
  if (e == std::string_view::npos && !scan.ran_out && !ps.ran_out) return r;  // kMismatch
  r.result = CallRead::kIncomplete;
  r.args_begin = ps.args_begin;
  if (r.args_begin == std::string_view::npos && scan.args_end == std::string_view::npos) r.args_begin = scan.args_begin;
  r.certain = reported && (ps.args_begin != std::string_view::npos || ps.xml_args != std::string_view::npos);
  r.call.name = std::move(partial.name);
  r.call.id = std::move(partial.id);
  if (reported && ps.xml_args != std::string_view::npos) r.call.arguments = std::move(partial.arguments);
  return r;
}

size_t MatchCallAfterArgs(std::string_view text, size_t args_end, const ToolCallFormat& f, const Json& tools,
                          ToolCall* call, CallScan* scan) {
  size_t after = 0;
  while (after < f.call.size() && f.call[after].kind != Piece::kArgs) ++after;
  scan->args_end = args_end;
  const size_t e = MatchCall(text, args_end, f, tools, call, /*lenient=*/true, scan, after + 1);
  const Piece::Kind last = f.call.empty() ? Piece::kLiteral : f.call.back().kind;
  if (e == text.size() && last != Piece::kLiteral && last != Piece::kArgs) scan->ran_out = scan->cut = true;  // may go on
  return e;
}

ParsedMessage ParseAssistant(std::string_view text, const ChatFormat& format, const Json& tools, bool partial) {
  return ReadTurn(text, format, tools, partial, /*lenient=*/true);
}

ParsedMessage ParseAssistantStrict(std::string_view text, const ChatFormat& format, const Json& tools) {
  return ReadTurn(text, format, tools, /*partial=*/false, /*lenient=*/false);
}

Json ToOpenAiMessage(const ParsedMessage& m) {
  Json j = Json::object();
  j["role"] = "assistant";
  if (m.content.empty() && !m.tool_calls.empty()) j["content"] = nullptr;
  else j["content"] = m.content;
  if (m.has_reasoning) j["reasoning_content"] = m.reasoning;
  if (!m.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : m.tool_calls) {
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    j["tool_calls"] = std::move(calls);
  }
  return j;
}

}  // namespace zf::chat

// Reading a `<|python_tag|>` call (see python_tag.h).
#include "chat/python_tag.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A word of [A-Za-z0-9_] at text[i]: its end (i when none).
size_t WordEnd(std::string_view text, size_t i) {
  while (i < text.size() && IsWordChar(text[i])) ++i;
  return i;
}

// Whether text[i] (after whitespace) ends a value: ")" or ", KEY=".
bool EndsValue(std::string_view text, size_t i) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i < text.size() && text[i] == ')') return true;
  if (i >= text.size() || text[i] != ',') return false;
  ++i;
  while (i < text.size() && IsSpace(text[i])) ++i;
  const size_t w = WordEnd(text, i);
  size_t e = w;
  while (e < text.size() && IsSpace(text[e])) ++e;
  return w > i && e < text.size() && text[e] == '=';
}

// The end of a bracketed value ([...] or {...}) at text[i], quotes respected, or npos.
size_t BracketEnd(std::string_view text, size_t i) {
  int depth = 0;
  char quote = 0;
  for (size_t k = i; k < text.size(); ++k) {
    const char c = text[k];
    if (quote) {
      if (c == '\\') ++k;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return k + 1;
    }
  }
  return std::string_view::npos;
}

// A Python literal's text as JSON: single-quoted strings, True / False / None.
Json PythonLiteral(std::string_view lit) {
  if (zf::JsonNesting(lit, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) return Json(std::string(lit));
  Json v = Json::parse(lit.begin(), lit.end(), nullptr, false);
  if (!v.is_discarded()) return v;
  std::string out;
  for (size_t i = 0; i < lit.size(); ++i) {
    const char c = lit[i];
    if (c == '\'' || c == '"') {
      out.push_back('"');
      for (++i; i < lit.size() && lit[i] != c; ++i) {
        if (lit[i] == '\\' && i + 1 < lit.size()) {
          if (lit[i + 1] == '\'') out.push_back('\'');
          else out.append(lit.substr(i, 2));
          ++i;
        } else if (lit[i] == '"') {
          out += "\\\"";
        } else {
          out.push_back(lit[i]);
        }
      }
      out.push_back('"');
    } else if (lit.substr(i, 4) == "True") out += "true", i += 3;
    else if (lit.substr(i, 5) == "False") out += "false", i += 4;
    else if (lit.substr(i, 4) == "None") out += "null", i += 3;
    else out.push_back(c);
  }
  v = Json::parse(out, nullptr, false);
  return v.is_discarded() ? Json(std::string(lit)) : v;
}

}  // namespace

size_t ReadPythonArgs(std::string_view text, size_t i, Json* out) {
  if (i >= text.size() || text[i] != '(') return std::string_view::npos;
  *out = Json::object();
  ++i;
  for (bool first = true;; first = false) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) return std::string_view::npos;
    if (text[i] == ')') return i + 1;
    if (!first) {
      if (text[i] != ',') return std::string_view::npos;
      ++i;
      while (i < text.size() && IsSpace(text[i])) ++i;
    }
    const size_t w = WordEnd(text, i);
    if (w == i) return std::string_view::npos;
    const std::string key(text.substr(i, w - i));
    i = w;
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size() || text[i] != '=') return std::string_view::npos;
    ++i;
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) return std::string_view::npos;
    Json value;
    if (text[i] == '"' || text[i] == '\'') {
      // Templates write strings raw between quotes: a quote ends the value only where ")" or
      // ", KEY=" follows it.
      const char q = text[i];
      size_t e = text.find(q, i + 1);
      while (e != std::string_view::npos && !EndsValue(text, e + 1)) e = text.find(q, e + 1);
      if (e == std::string_view::npos) return e;
      value = std::string(text.substr(i + 1, e - i - 1));
      i = e + 1;
    } else if (text[i] == '[' || text[i] == '{') {
      const size_t e = BracketEnd(text, i);
      if (e == std::string_view::npos) return e;
      value = PythonLiteral(text.substr(i, e - i));
      i = e;
    } else {
      const size_t s = i;
      while (i < text.size() && text[i] != ',' && text[i] != ')') ++i;
      value = PythonLiteral(Trim(text.substr(s, i - s)));
    }
    if (!out->contains(key)) (*out)[key] = std::move(value);
  }
}

namespace {

// `NAME.call(k="v", k2=3)`.
bool ParseCallSyntax(std::string_view s, ToolCall* call) {
  const size_t w = WordEnd(s, 0);
  if (w == 0 || s.substr(w, 5) != ".call") return false;
  Json args;
  if (ReadPythonArgs(s, w + 5, &args) != s.size()) return false;
  call->name = std::string(s.substr(0, w));
  call->arguments = args.dump();
  return true;
}

}  // namespace

bool ParsePythonTagCall(std::string_view after, ToolCall* call) {
  std::string_view s = Trim(after);
  for (std::string_view end : {std::string_view("<|eom_id|>"), std::string_view("<|eot_id|>")}) {
    if (s.size() >= end.size() && s.substr(s.size() - end.size()) == end) s = Trim(s.substr(0, s.size() - end.size()));
  }
  if (s.empty()) return false;
  if (s.front() == '{') {
    const Json v = zf::JsonNesting(s, zf::kMaxJsonNesting) > zf::kMaxJsonNesting
                       ? Json(Json::value_t::discarded)
                       : Json::parse(s.begin(), s.end(), nullptr, false);
    if (v.is_object() && v.contains("name") && v["name"].is_string()) {
      const Json& a = v.contains("parameters") ? v["parameters"] : v.contains("arguments") ? v["arguments"] : Json::object();
      if (a.is_object()) {
        call->name = v["name"].get<std::string>();
        call->arguments = a.dump();
        return true;
      }
    }
  }
  if (ParseCallSyntax(s, call)) return true;
  call->name = "python";
  call->arguments = Json({{"code", std::string(s)}}).dump();
  return true;
}

}  // namespace zf::chat

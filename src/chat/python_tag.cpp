// Reading a `<|python_tag|>` call (see python_tag.h).
#include "chat/python_tag.h"

#include <cctype>

#include <nlohmann/json.hpp>

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

// `NAME.call(k="v", k2=3)`: values in double quotes as written (the template writes them raw, so
// a quote ends a value only before ", " or the closing parenthesis), or JSON literals.
bool ParseCallSyntax(std::string_view s, ToolCall* call) {
  size_t i = 0;
  while (i < s.size() && IsWordChar(s[i])) ++i;
  if (i == 0 || s.substr(i, 6) != ".call(" || s.back() != ')') return false;
  const std::string name(s.substr(0, i));
  std::string_view body = s.substr(i + 6, s.size() - i - 7);
  Json args = Json::object();
  while (!Trim(body).empty()) {
    body = Trim(body);
    size_t k = 0;
    while (k < body.size() && IsWordChar(body[k])) ++k;
    if (k == 0 || k >= body.size() || body[k] != '=') return false;
    const std::string key(body.substr(0, k));
    body.remove_prefix(k + 1);
    size_t end;
    Json value;
    if (!body.empty() && body.front() == '"') {
      // The last quote before a ", KEY=" or the end.
      end = std::string_view::npos;
      for (size_t q = body.find('"', 1); q != std::string_view::npos; q = body.find('"', q + 1)) {
        const std::string_view after = Trim(body.substr(q + 1));
        bool next_key = false;
        if (!after.empty() && after.front() == ',') {
          const std::string_view n = Trim(after.substr(1));
          size_t w = 0;
          while (w < n.size() && IsWordChar(n[w])) ++w;
          next_key = w > 0 && w < n.size() && n[w] == '=';
        }
        if (after.empty() || next_key) {
          end = q + 1;
          break;
        }
      }
      if (end == std::string_view::npos) return false;
      value = std::string(body.substr(1, end - 2));
    } else {
      end = body.find(',');
      if (end == std::string_view::npos) end = body.size();
      const std::string_view lit = Trim(body.substr(0, end));
      value = Json::parse(lit.begin(), lit.end(), nullptr, false);
      if (value.is_discarded()) value = std::string(lit);
    }
    args[key] = std::move(value);
    body.remove_prefix(end);
    body = Trim(body);
    if (!body.empty()) {
      if (body.front() != ',') return false;
      body.remove_prefix(1);
    }
  }
  call->name = name;
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
    const Json v = Json::parse(s.begin(), s.end(), nullptr, false);
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

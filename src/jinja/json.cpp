// JSON both ways: Python's json.dumps as transformers' tojson filter calls it, and JSON text
// (messages, tools, extra variables from the C API) into template values via nlohmann-json.
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "jinja/jinja.h"
#include "jinja/text.h"

namespace zf::jinja {
namespace {

void JsonString(const std::string& s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    uint32_t cp = DecodeUtf8(s, &i);
    char b[16];
    switch (cp) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7f)) {
          if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
          } else {
            std::snprintf(b, sizeof b, "\\u%04x", cp);
          }
          *out += b;
        } else {
          out->append(s, start, i - start);
        }
    }
  }
  out->push_back('"');
}

struct Dumper {
  bool ensure_ascii;
  std::string indent;  // empty + !has_indent = None
  bool has_indent;
  std::string item_sep, key_sep;
  bool sort_keys;
  size_t limit;
  int depth = 0;

  void Newline(int level, std::string* out) {
    *out += '\n';
    for (int k = 0; k < level; ++k) *out += indent;
  }

  std::string Key(const Value& k) {
    switch (k.kind()) {
      case Kind::kString: return k.s();
      case Kind::kBool: return k.i() ? "true" : "false";
      case Kind::kInt: return std::to_string(k.i());
      case Kind::kFloat: return FloatRepr(k.f());
      case Kind::kNone: return "null";
      default: throw Error(std::string("keys must be str, int, float, bool or None, not ") + k.TypeName());
    }
  }

  void Dump(const Value& v, std::string* out) {
    if (out->size() > limit) throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limit) + ")");
    if (++depth > 500) throw Error("limit exceeded: recursion depth in tojson");
    switch (v.kind()) {
      case Kind::kNone: *out += "null"; break;
      case Kind::kBool: *out += v.i() ? "true" : "false"; break;
      case Kind::kInt: *out += std::to_string(v.i()); break;
      case Kind::kFloat: {
        double d = v.f();
        if (d != d) *out += "NaN";
        else if (d == 1.0 / 0.0) *out += "Infinity";
        else if (d == -1.0 / 0.0) *out += "-Infinity";
        else *out += FloatRepr(d);
        break;
      }
      case Kind::kString: JsonString(v.s(), ensure_ascii, out); break;
      case Kind::kList: {
        if (v.is_generator()) throw Error("Object of type generator is not JSON serializable");
        if (v.l().empty()) {
          *out += "[]";
          break;
        }
        *out += '[';
        for (size_t k = 0; k < v.l().size(); ++k) {
          if (k) *out += item_sep;
          if (has_indent) Newline(depth, out);
          Dump(v.l()[k], out);
        }
        if (has_indent) Newline(depth - 1, out);
        *out += ']';
        break;
      }
      case Kind::kDict: {
        if (v.is_namespace()) throw Error("Object of type Namespace is not JSON serializable");
        if (v.d().items.empty()) {
          *out += "{}";
          break;
        }
        std::vector<std::pair<std::string, const Value*>> items;
        for (auto& kv : v.d().items) items.emplace_back(Key(kv.first), &kv.second);
        if (sort_keys) {
          std::stable_sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.first < b.first; });
        }
        *out += '{';
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) *out += item_sep;
          if (has_indent) Newline(depth, out);
          JsonString(items[k].first, ensure_ascii, out);
          *out += key_sep;
          Dump(*items[k].second, out);
        }
        if (has_indent) Newline(depth - 1, out);
        *out += '}';
        break;
      }
      default: throw Error(std::string("Object of type ") + v.TypeName() + " is not JSON serializable");
    }
    --depth;
  }
};

Value Convert(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::None();
    case nlohmann::ordered_json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::Str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (auto& e : j) l.push_back(Convert(e));
      return Value::MakeList(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::MakeDict();
      for (auto it = j.begin(); it != j.end(); ++it) d.d().Set(Value::Str(it.key()), Convert(it.value()));
      d.UpdateNesting();
      return d;
    }
    default: return Value::None();
  }
}

}  // namespace

std::string ToJsonOpts(const Value& v, bool ensure_ascii, const Value& indent, const std::string* item_sep,
                       const std::string* key_sep, bool sort_keys, size_t limit) {
  Dumper d;
  d.ensure_ascii = ensure_ascii;
  d.has_indent = !indent.none() && !indent.undefined();
  if (indent.is_string()) d.indent = indent.s();
  else if (indent.is_int()) d.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(indent.i(), 1000))), ' ');
  else if (d.has_indent) throw Error("indent must be an int or a string");
  d.item_sep = item_sep ? *item_sep : d.has_indent ? "," : ", ";
  d.key_sep = key_sep ? *key_sep : ": ";
  d.sort_keys = sort_keys;
  d.limit = limit;
  std::string out;
  d.Dump(v, &out);
  return out;
}

std::string ToJson(const Value& v, int indent, const std::string* item_sep, const std::string* key_sep,
                   bool sort_keys) {
  return ToJsonOpts(v, false, indent < 0 ? Value::None() : Value::Int(indent), item_sep, key_sep, sort_keys,
                    SIZE_MAX);
}

Value FromJson(std::string_view json) {
  // Bound the nesting before parsing (the conversion recurses).
  if (JsonNesting(json, Value::kMaxNesting) > Value::kMaxNesting) {
    throw Error("JSON nested deeper than " + std::to_string(Value::kMaxNesting));
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json, nullptr, false);
  if (j.is_discarded()) throw Error("invalid JSON");
  return Convert(j);
}

}  // namespace zf::jinja

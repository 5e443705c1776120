// Python semantics of the value model: truthiness, str()/repr(), equality and ordering.
#include "jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "jinja/text.h"

namespace zf::jinja {

void Value::UpdateNesting() {
  int d = 0;
  if (kind_ == Kind::kList) {
    for (auto& x : *l_) d = std::max(d, x.nesting_);
  } else if (kind_ == Kind::kDict && !ns_) {
    for (auto& kv : dict_->items) d = std::max(d, kv.second.nesting_);
  }
  nesting_ = d + 1;
  if (nesting_ > kMaxNesting) {
    throw Error("limit exceeded: nesting depth of lists and dicts (" + std::to_string(kMaxNesting) + ")");
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return d_ != 0;
    case Kind::kString: return !s_->empty();
    case Kind::kList: return gen_ || !l_->empty();
    case Kind::kDict: return !dict_->items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return gen_ ? "generator" : tuple_ ? "tuple" : "list";
    case Kind::kDict: return ns_ ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "object";
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest digits that round-trip, then Python's layout (repr switches to exponent form
  // below 1e-4 and from 1e16).
  char buf[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf = [-]D.DDDDe[+-]XX
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  int exp = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  const int n = static_cast<int>(digits.size());
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (exp + 1 >= n) {
    out = digits + std::string(static_cast<size_t>(exp + 1 - n), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
  }
  return neg ? "-" + out : out;
}

std::string StrRepr(const std::string& s) {
  const bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  const char q = has_sq && !has_dq ? '"' : '\'';
  std::string out(1, q);
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    uint32_t cp = DecodeUtf8(s, &i);
    char b[16];
    if (cp == static_cast<uint32_t>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0xad) {
      std::snprintf(b, sizeof b, "\\x%02x", cp);
      out += b;
    } else if (!IsPrintable(cp)) {
      if (cp <= 0xffff) std::snprintf(b, sizeof b, "\\u%04x", cp);
      else std::snprintf(b, sizeof b, "\\U%08x", cp);
      out += b;
    } else {
      out.append(s, start, i - start);
    }
  }
  out += q;
  return out;
}

namespace {
void CheckLimit(size_t n, size_t limit) {
  if (n > limit) throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limit) + ")");
}
}  // namespace

std::string Value::Repr(size_t limit) const {
  switch (kind_) {
    case Kind::kString: {
      CheckLimit(s_->size(), limit);
      std::string r = StrRepr(*s_);
      CheckLimit(r.size(), limit);
      return r;
    }
    case Kind::kList: {
      if (gen_) return "<generator object>";
      std::string o = tuple_ ? "(" : "[";
      for (size_t k = 0; k < l_->size(); ++k) {
        if (k) o += ", ";
        o += (*l_)[k].Repr(limit);
        CheckLimit(o.size(), limit);
      }
      if (tuple_) return o + (l_->size() == 1 ? ",)" : ")");
      return o + "]";
    }
    case Kind::kDict: {
      if (ns_) return "<Namespace " + std::string("{") + "}>";
      std::string o = "{";
      bool first = true;
      for (auto& kv : dict_->items) {
        if (!first) o += ", ";
        first = false;
        o += kv.first.Repr(limit) + ": " + kv.second.Repr(limit);
        CheckLimit(o.size(), limit);
      }
      return o + "}";
    }
    default: return Str();
  }
}

std::string Value::Str(size_t limit) const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return i_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return FloatRepr(d_);
    case Kind::kString: return *s_;
    case Kind::kFunction: return "<function " + *s_ + ">";
    default: return Repr(limit);
  }
}

Value* Dict::Find(const Value& key) {
  for (auto& kv : items)
    if (Equal(kv.first, key)) return &kv.second;
  return nullptr;
}

Value* Dict::Find(const std::string& key) {
  for (auto& kv : items)
    if (kv.first.is_string() && kv.first.s() == key) return &kv.second;
  return nullptr;
}

void Dict::Set(const Value& key, Value v) {
  if (Value* p = Find(key)) *p = std::move(v);
  else items.emplace_back(key, std::move(v));
}

Value Args::Get(size_t index, const char* name, Value def) const {
  for (auto& kv : kw)
    if (kv.first == name) return kv.second;
  if (index < pos.size()) return pos[index];
  return def;
}

bool Args::Has(size_t index, const char* name) const {
  for (auto& kv : kw)
    if (kv.first == name) return true;
  return index < pos.size();
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) return a.f() == b.f();
    return a.i() == b.i();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.s() == b.s();
    case Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.l().size() != b.l().size()) return false;
      for (size_t k = 0; k < a.l().size(); ++k)
        if (!Equal(a.l()[k], b.l()[k])) return false;
      return true;
    }
    case Kind::kDict: {
      if (&a.d() == &b.d()) return true;
      if (a.is_namespace() || b.is_namespace()) return false;
      if (a.d().items.size() != b.d().items.size()) return false;
      for (auto& kv : a.d().items) {
        Value* o = b.d().Find(kv.first);
        if (o == nullptr || !Equal(kv.second, *o)) return false;
      }
      return true;
    }
    case Kind::kFunction: return &a.fn() == &b.fn();
    default: return false;
  }
}

int Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) return a.f() < b.f() ? -1 : a.f() > b.f() ? 1 : 0;
    return a.i() < b.i() ? -1 : a.i() > b.i() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {  // UTF-8 byte order == code point order
    int c = a.s().compare(b.s());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    size_t n = std::min(a.l().size(), b.l().size());
    for (size_t k = 0; k < n; ++k) {
      if (!Equal(a.l()[k], b.l()[k])) return Compare(a.l()[k], b.l()[k]);
    }
    return a.l().size() < b.l().size() ? -1 : a.l().size() > b.l().size() ? 1 : 0;
  }
  throw Error(std::string("'<' not supported between instances of '") + a.TypeName() + "' and '" + b.TypeName() + "'");
}

}  // namespace zf::jinja

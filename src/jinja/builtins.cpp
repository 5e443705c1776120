// jinja2's filters, tests and globals, and the Python methods templates call on str, dict and
// list (ImmutableSandboxedEnvironment: methods that mutate a list or dict raise).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>

#include "jinja/interp.h"
#include "jinja/text.h"

namespace zf::jinja {

std::string ToJsonOpts(const Value& v, bool ensure_ascii, const Value& indent, const std::string* item_sep,
                       const std::string* key_sep, bool sort_keys, size_t limit);

namespace {

const std::set<std::string>& Filters() {
  static const std::set<std::string> k = {
      "abs", "attr", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first", "float",
      "format", "indent", "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min",
      "reject", "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string",
      "sum", "title", "tojson", "trim", "unique", "upper", "wordcount", "batch"};
  return k;
}

const std::set<std::string>& Tests() {
  static const std::set<std::string> k = {
      "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even", "false", "filter",
      "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping",
      "ne", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", "==",
      "!=", "<", "<=", ">", ">="};
  return k;
}

const std::set<std::string> kStrMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "replace",
    "title", "capitalize", "format", "find", "rfind", "count", "join", "isdigit", "isalpha", "isspace",
    "isalnum", "islower", "isupper", "splitlines", "removeprefix", "removesuffix", "index", "center", "zfill"};
const std::set<std::string> kDictMethods = {"items", "keys", "values", "get", "copy", "pop", "update",
                                            "setdefault", "clear", "popitem"};
const std::set<std::string> kListMethods = {"index", "count", "copy", "append", "extend", "insert", "pop",
                                            "remove", "reverse", "sort", "clear"};
const std::set<std::string> kUnsafe = {"pop", "update", "setdefault", "clear", "popitem", "append", "extend",
                                       "insert", "remove", "reverse", "sort"};

std::string Title(const std::string& s) {
  std::string o;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t c = DecodeUtf8(s, &i);
    bool cased = ToUpper(c) != c || ToLower(c) != c;
    AppendUtf8(cased ? (prev_cased ? ToLower(c) : ToUpper(c)) : c, &o);
    prev_cased = cased;
  }
  return o;
}

std::string Capitalize(const std::string& s) {
  std::string o;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    uint32_t c = DecodeUtf8(s, &i);
    AppendUtf8(first ? ToUpper(c) : ToLower(c), &o);
    first = false;
  }
  return o;
}

std::vector<std::string> SplitLines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  std::vector<uint32_t> cps = ToCodepoints(s);
  size_t start = 0;
  for (size_t k = 0; k < cps.size(); ++k) {
    uint32_t c = cps[k];
    bool br = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e || c == 0x85 ||
              c == 0x2028 || c == 0x2029;
    if (!br) continue;
    size_t end = k;
    if (c == '\r' && k + 1 < cps.size() && cps[k + 1] == '\n') ++k;
    out.push_back(FromCodepoints(cps, start, keepends ? k + 1 : end));
    start = k + 1;
  }
  if (start < cps.size()) out.push_back(FromCodepoints(cps, start, cps.size()));
  return out;
}

std::string Replace(const std::string& s, const std::string& old, const std::string& nw, int64_t count, size_t limit) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    std::vector<uint32_t> cps = ToCodepoints(s);
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || done < count) {
        out += nw;
        ++done;
      }
      if (k < cps.size()) AppendUtf8(cps[k], &out);
      if (out.size() > limit) throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limit) + ")");
    }
    return out;
  }
  size_t pos = 0;
  while (true) {
    size_t f = (count >= 0 && done >= count) ? std::string::npos : s.find(old, pos);
    if (f == std::string::npos) {
      out.append(s, pos, std::string::npos);
      break;
    }
    out.append(s, pos, f - pos);
    out += nw;
    if (out.size() > limit) throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limit) + ")");
    pos = f + old.size();
    ++done;
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep.none() || sep.undefined()) {
    std::vector<uint32_t> cps = ToCodepoints(s);
    size_t k = 0;
    while (true) {
      while (k < cps.size() && IsSpace(cps[k])) ++k;
      if (k >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        size_t e = cps.size();
        while (e > k && IsSpace(cps[e - 1])) --e;
        out.push_back(FromCodepoints(cps, k, e));
        break;
      }
      size_t b = k;
      while (k < cps.size() && !IsSpace(cps[k])) ++k;
      out.push_back(FromCodepoints(cps, b, k));
    }
    return out;
  }
  if (!sep.is_string()) throw Error("must be str or None, not " + std::string(sep.TypeName()));
  const std::string& d = sep.s();
  if (d.empty()) throw Error("empty separator");
  size_t pos = 0;
  while (true) {
    size_t f = (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) ? std::string::npos : s.find(d, pos);
    if (f == std::string::npos) {
      out.push_back(s.substr(pos));
      break;
    }
    out.push_back(s.substr(pos, f - pos));
    pos = f + d.size();
  }
  return out;
}

Value StrList(const std::vector<std::string>& v) {
  if (v.size() > Value::kMaxListLength) {
    throw Error("limit exceeded: list length (" + std::to_string(Value::kMaxListLength) + ")");
  }
  List l;
  for (auto& s : v) l.push_back(Value::Str(s));
  return Value::MakeList(std::move(l));
}

bool AffixTest(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (what.is_string()) return one(what.s());
  if (what.is_list()) {
    for (auto& x : what.l()) {
      if (!x.is_string()) throw Error("tuple for startswith must only contain str");
      if (one(x.s())) return true;
    }
    return false;
  }
  throw Error(std::string(prefix ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + what.TypeName());
}

const std::string& NeedStr(const Value& v, const char* what) {
  if (!v.is_string()) throw Error(std::string(what) + " must be str, not " + v.TypeName());
  return v.s();
}

int64_t NeedInt(const Value& v, const char* what) {
  if (!v.is_int()) throw Error(std::string("'") + v.TypeName() + "' object cannot be interpreted as an integer (" + what + ")");
  return v.i();
}

// Python str.format with {} / {0} / {name} fields, !s / !r conversions and no format specs
// other than empty.
std::string Format(const std::string& f, Args& a, size_t limit) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '}') {
      throw Error("Single '}' encountered in format string");
    } else if (c == '{') {
      size_t e = f.find('}', i);
      if (e == std::string::npos) throw Error("Single '{' encountered in format string");
      std::string field = f.substr(i + 1, e - i - 1);
      std::string conv, spec;
      size_t colon = field.find(':');
      if (colon != std::string::npos) {
        spec = field.substr(colon + 1);
        field.resize(colon);
      }
      size_t bang = field.find('!');
      if (bang != std::string::npos) {
        conv = field.substr(bang + 1);
        field.resize(bang);
      }
      Value v;
      if (field.empty()) {
        if (auto_idx >= a.pos.size()) throw Error("Replacement index " + std::to_string(auto_idx) + " out of range for positional args tuple");
        v = a.pos[auto_idx++];
      } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        size_t idx = static_cast<size_t>(std::atoll(field.c_str()));
        if (idx >= a.pos.size()) throw Error("Replacement index " + field + " out of range for positional args tuple");
        v = a.pos[idx];
      } else {
        bool found = false;
        for (auto& kv : a.kw)
          if (kv.first == field) {
            v = kv.second;
            found = true;
          }
        if (!found) throw Error("KeyError: '" + field + "'");
      }
      if (!spec.empty()) throw Error("format spec '" + spec + "' is not supported");
      out += conv == "r" ? v.Repr(limit) : v.Str(limit);
      i = e;
    } else {
      out += c;
    }
    if (out.size() > limit) throw Error("limit exceeded: output size");
  }
  return out;
}

// printf-style "%s" % args (the |format filter).
std::string Percent(const std::string& f, const Args& a, size_t limit) {
  std::string out;
  size_t idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) throw Error("incomplete format");
    char c = f[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (idx >= a.pos.size()) throw Error("not enough arguments for format string");
    const Value& v = a.pos[idx++];
    if (out.size() > limit) throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limit) + ")");
    if (c == 's') out += v.Str(limit);
    else if (c == 'r') out += v.Repr(limit);
    else if (c == 'd' || c == 'i') {
      if (!v.is_number()) throw Error("%d format: a real number is required");
      out += std::to_string(v.kind() == Kind::kFloat ? static_cast<int64_t>(v.f()) : v.i());
    } else throw Error(std::string("unsupported format character '") + c + "'");
  }
  if (idx < a.pos.size()) throw Error("not all arguments converted during string formatting");
  return out;
}

bool IsUpperStr(const std::string& s, bool upper) {
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t c = DecodeUtf8(s, &i);
    if (ToUpper(c) != c || ToLower(c) != c) {
      cased = true;
      if (upper ? ToUpper(c) != c : ToLower(c) != c) return false;
    }
  }
  return cased;
}

}  // namespace

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&#34;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

bool Interp::HasFilter(const std::string& n) { return Filters().count(n) != 0; }
bool Interp::HasTest(const std::string& n) { return Tests().count(n) != 0; }

bool Interp::HasMethod(const Value& obj, const std::string& n) {
  if (obj.is_string()) return kStrMethods.count(n) != 0;
  if (obj.is_dict() && !obj.is_namespace()) return kDictMethods.count(n) != 0;
  if (obj.is_list()) return kListMethods.count(n) != 0;
  return false;
}

Value Interp::CallMethod(const Value& obj, const std::string& n, Args& a) {
  if (kUnsafe.count(n) && !(obj.is_string())) {
    Fail("access to attribute '" + n + "' of '" + obj.TypeName() + "' object is unsafe.");
  }
  if (obj.is_string()) {
    const std::string& s = obj.s();
    if (n == "strip" || n == "lstrip" || n == "rstrip") {
      Value c = a.Get(0, "chars", Value::None());
      std::string chars = c.is_string() ? c.s() : std::string();
      return Value::Str(Strip(s, c.is_string() ? &chars : nullptr, n != "rstrip", n != "lstrip"));
    }
    if (n == "split" || n == "rsplit") {
      int64_t maxsplit = NeedInt(a.Get(1, "maxsplit", Value::Int(-1)), "maxsplit");
      Value sep = a.Get(0, "sep", Value::None());
      if (n == "rsplit" && maxsplit >= 0) {
        // rsplit: split from the right.
        std::vector<std::string> all = Split(s, sep, -1);
        if (static_cast<int64_t>(all.size()) <= maxsplit + 1) return StrList(all);
        if (sep.is_string()) {
          size_t keep = all.size() - static_cast<size_t>(maxsplit);
          std::string head = all[0];
          for (size_t k = 1; k < keep; ++k) head += sep.s() + all[k];
          std::vector<std::string> r{head};
          r.insert(r.end(), all.begin() + static_cast<long>(keep), all.end());
          return StrList(r);
        }
        Fail("rsplit with maxsplit and no separator is not supported");
      }
      return StrList(Split(s, sep, maxsplit));
    }
    if (n == "startswith" || n == "endswith") return Value::Bool(AffixTest(s, a.Get(0, "prefix"), n == "startswith"));
    if (n == "upper") return Value::Str(Upper(s));
    if (n == "lower") return Value::Str(Lower(s));
    if (n == "title") return Value::Str(Title(s));
    if (n == "capitalize") return Value::Str(Capitalize(s));
    if (n == "replace") {
      return Value::Str(Replace(s, NeedStr(a.Get(0, "old"), "replace() argument 1"), NeedStr(a.Get(1, "new"), "replace() argument 2"),
                                NeedInt(a.Get(2, "count", Value::Int(-1)), "count"), limits_.max_output_bytes));
    }
    if (n == "format") return Value::Str(Format(s, a, limits_.max_output_bytes));
    if (n == "find" || n == "rfind" || n == "index") {
      const std::string& sub = NeedStr(a.Get(0, "sub"), "find() argument");
      size_t f = n == "rfind" ? s.rfind(sub) : s.find(sub);
      if (f == std::string::npos) {
        if (n == "index") Fail("substring not found");
        return Value::Int(-1);
      }
      return Value::Int(static_cast<int64_t>(CodepointCount(s.substr(0, f))));
    }
    if (n == "count") {
      const std::string& sub = NeedStr(a.Get(0, "sub"), "count() argument");
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodepointCount(s)) + 1);
      int64_t c = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++c;
      return Value::Int(c);
    }
    if (n == "join") {
      std::string o;
      std::vector<Value> items = Iterate(a.Get(0, "iterable"));
      for (size_t k = 0; k < items.size(); ++k) {
        if (!items[k].is_string()) Fail("sequence item " + std::to_string(k) + ": expected str instance, " + items[k].TypeName() + " found");
        if (k) o += s;
        o += items[k].s();
        CheckSize(o.size());
      }
      return Value::Str(o);
    }
    if (n == "isdigit" || n == "isalpha" || n == "isspace" || n == "isalnum") {
      if (s.empty()) return Value::Bool(false);
      for (size_t i = 0; i < s.size();) {
        uint32_t c = DecodeUtf8(s, &i);
        bool ok = n == "isdigit" ? (c >= '0' && c <= '9')
                  : n == "isspace" ? IsSpace(c)
                  : n == "isalpha" ? (ToUpper(c) != c || ToLower(c) != c || c >= 0x80)
                                   : ((c >= '0' && c <= '9') || ToUpper(c) != c || ToLower(c) != c || c >= 0x80);
        if (!ok) return Value::Bool(false);
      }
      return Value::Bool(true);
    }
    if (n == "islower" || n == "isupper") return Value::Bool(IsUpperStr(s, n == "isupper"));
    if (n == "splitlines") return StrList(SplitLines(s, a.Get(0, "keepends", Value::Bool(false)).Truthy()));
    if (n == "removeprefix" || n == "removesuffix") {
      const std::string& x = NeedStr(a.Get(0, "prefix"), n.c_str());
      if (n == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value::Str(s.substr(x.size()));
      if (n == "removesuffix" && !x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
        return Value::Str(s.substr(0, s.size() - x.size()));
      return obj;
    }
    if (n == "center" || n == "zfill") {
      int64_t w = NeedInt(a.Get(0, "width"), "width");
      int64_t len = static_cast<int64_t>(CodepointCount(s));
      if (w <= len) return obj;
      CheckSize(static_cast<size_t>(w));
      if (n == "zfill") return Value::Str(std::string(static_cast<size_t>(w - len), '0') + s);
      int64_t pad = w - len, left = pad / 2 + (pad & w & 1);
      return Value::Str(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
    }
  }
  if (obj.is_dict()) {
    Dict& d = obj.d();
    if (n == "items") {
      List l;
      for (auto& kv : d.items) l.push_back(Value::MakeTuple({kv.first, kv.second}));
      return Value::MakeList(std::move(l));
    }
    if (n == "keys" || n == "values") {
      List l;
      for (auto& kv : d.items) l.push_back(n == "keys" ? kv.first : kv.second);
      return Value::MakeList(std::move(l));
    }
    if (n == "get") {
      if (a.pos.empty()) Fail("get expected at least 1 argument, got 0");
      Value* v = d.Find(a.pos[0]);
      return v ? *v : (a.pos.size() > 1 ? a.pos[1] : Value::None());
    }
    if (n == "copy") {
      Value c = Value::MakeDict();
      c.d().items = d.items;
      return c;
    }
  }
  if (obj.is_list()) {
    if (n == "index" || n == "count") {
      Value x = a.Get(0, "value");
      int64_t c = 0;
      for (size_t k = 0; k < obj.l().size(); ++k) {
        if (Equal(obj.l()[k], x)) {
          if (n == "index") return Value::Int(static_cast<int64_t>(k));
          ++c;
        }
      }
      if (n == "index") Fail(x.Repr() + " is not in list");
      return Value::Int(c);
    }
    if (n == "copy") return Value::MakeList(obj.l());
  }
  Fail(std::string("'") + obj.TypeName() + "' object has no attribute '" + n + "'");
}

void Interp::InstallGlobals(Frame* f) {
  f->vars["range"] = Value::MakeFunction(
      [this](Args& a) {
        if (a.pos.empty() || a.pos.size() > 3) Fail("range expected 1 to 3 arguments");
        int64_t start = 0, stop, step = 1;
        if (a.pos.size() == 1) stop = NeedInt(a.pos[0], "range");
        else {
          start = NeedInt(a.pos[0], "range");
          stop = NeedInt(a.pos[1], "range");
          if (a.pos.size() == 3) step = NeedInt(a.pos[2], "range");
        }
        if (step == 0) Fail("range() arg 3 must not be zero");
        __int128 count = step > 0 ? (static_cast<__int128>(stop) - start + step - 1) / step
                                  : (static_cast<__int128>(start) - stop - step - 1) / -step;
        if (count > 100000) Fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        List l;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) l.push_back(Value::Int(i));
        return Value::MakeList(std::move(l));
      },
      "range");
  f->vars["namespace"] = Value::MakeFunction(
      [this](Args& a) {
        Value ns = Value::MakeDict();
        ns.set_namespace();
        for (auto& p : a.pos) {
          if (!p.is_dict()) throw Error("namespace() positional argument must be a mapping");
          for (auto& kv : p.d().items) ns.d().Set(kv.first, kv.second);
        }
        for (auto& kv : a.kw) ns.d().Set(Value::Str(kv.first), kv.second);
        namespaces_.push_back(ns);
        return ns;
      },
      "namespace");
  f->vars["dict"] = Value::MakeFunction(
      [](Args& a) {
        Value d = Value::MakeDict();
        for (auto& p : a.pos) {
          if (!p.is_dict()) throw Error("dict() positional argument must be a mapping");
          for (auto& kv : p.d().items) d.d().Set(kv.first, kv.second);
        }
        for (auto& kv : a.kw) d.d().Set(Value::Str(kv.first), kv.second);
        d.UpdateNesting();
        return d;
      },
      "dict");
  f->vars["raise_exception"] = Value::MakeFunction(
      [this](Args& a) -> Value { throw Error(a.Get(0, "message").Str(limits_.max_output_bytes)); }, "raise_exception");
  const int64_t now = limits_.now;
  f->vars["strftime_now"] = Value::MakeFunction(
      [now](Args& a) {
        std::string fmt = NeedStr(a.Get(0, "format"), "strftime_now() argument");
        std::time_t t = now >= 0 ? static_cast<std::time_t>(now) : std::time(nullptr);
        std::tm tm{};
        if (now >= 0) gmtime_r(&t, &tm);
        else localtime_r(&t, &tm);
        if (fmt.size() > 1000) throw Error("strftime_now format too long");
        std::string buf(fmt.size() * 16 + 64, '\0');
        size_t n = fmt.empty() ? 0 : std::strftime(&buf[0], buf.size(), fmt.c_str(), &tm);
        buf.resize(n);
        return Value::Str(buf);
      },
      "strftime_now");
}

bool Interp::ApplyTest(const std::string& n, const Value& v, Args& a) {
  Value arg = a.pos.empty() ? (a.kw.empty() ? Value() : a.kw[0].second) : a.pos[0];
  if (n == "defined") return !v.undefined();
  if (n == "undefined") return v.undefined();
  if (n == "none") return v.none();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.is_dict() && !v.is_namespace();
  if (n == "iterable") return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()) || v.undefined();
  if (n == "sequence") return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (n == "number") return v.is_number();
  if (n == "integer") return v.kind() == Kind::kInt;
  if (n == "float") return v.kind() == Kind::kFloat;
  if (n == "boolean") return v.is_bool();
  if (n == "true") return v.is_bool() && v.i();
  if (n == "false") return v.is_bool() && !v.i();
  if (n == "callable") return v.is_function();
  if (n == "escaped") return false;
  if (n == "equalto" || n == "eq" || n == "==") return Equal(v, arg);
  if (n == "ne" || n == "!=") return !Equal(v, arg);
  if (n == "sameas") {
    if (v.kind() != arg.kind()) return false;
    if (v.is_list()) return &v.l() == &arg.l();
    if (v.is_dict()) return &v.d() == &arg.d();
    return Equal(v, arg);
  }
  if (n == "odd" || n == "even") {
    if (!v.is_int()) Fail(std::string("unsupported operand type(s) for %: '") + v.TypeName() + "' and 'int'");
    int64_t m = ((v.i() % 2) + 2) % 2;
    return n == "odd" ? m == 1 : m == 0;
  }
  if (n == "divisibleby") {
    if (!v.is_number() || !arg.is_number()) Fail("divisibleby needs numbers");
    if (arg.f() == 0) Fail("integer division or modulo by zero");
    if (v.kind() == Kind::kFloat || arg.kind() == Kind::kFloat) return std::fmod(v.f(), arg.f()) == 0;
    return v.i() % arg.i() == 0;
  }
  if (n == "in") return Contains(arg, v);
  if (n == "lower" || n == "upper") return IsUpperStr(v.Str(limits_.max_output_bytes), n == "upper");
  if (n == "filter") return arg.is_string() && HasFilter(arg.s());
  if (n == "test") return arg.is_string() && HasTest(arg.s());
  if (v.undefined() || arg.undefined()) Fail("'" + (v.undefined() ? v.name() : arg.name()) + "' is undefined");
  int c = Compare(v, arg);
  if (n == "gt" || n == "greaterthan" || n == ">") return c > 0;
  if (n == "ge" || n == ">=") return c >= 0;
  if (n == "lt" || n == "lessthan" || n == "<") return c < 0;
  if (n == "le" || n == "<=") return c <= 0;
  Fail("No test named '" + n + "'.");
}

Value Interp::ApplyFilter(const std::string& n, const Value& v, Args& a) {
  auto items_of = [&](const Value& x) { return Iterate(x); };
  auto attr_path = [&](const Value& x, const Value& attr) {
    if (attr.is_int()) return GetItem(x, attr);
    Value cur = x;
    std::string path = attr.Str(limits_.max_output_bytes);
    size_t p = 0;
    while (true) {
      size_t dot = path.find('.', p);
      std::string part = path.substr(p, dot == std::string::npos ? std::string::npos : dot - p);
      bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      cur = digits ? GetItem(cur, Value::Int(std::atoll(part.c_str()))) : GetItem(cur, Value::Str(part));
      if (dot == std::string::npos) break;
      p = dot + 1;
    }
    return cur;
  };
  auto sort_key = [&](Value x, bool case_sensitive) {
    if (!case_sensitive && x.is_string()) return Value::Str(Lower(x.s()));
    return x;
  };

  if (n == "safe") return v.is_markup() ? v : Value::Markup(v.Str(limits_.max_output_bytes));
  if (n == "e" || n == "escape") return v.is_markup() ? v : Value::Markup(Escape(v.Str(limits_.max_output_bytes)));
  if (n == "string") return v.is_markup() ? v : Value::Str(v.Str(limits_.max_output_bytes));
  if (n == "trim") {
    Value c = a.Get(0, "chars", Value::None());
    std::string chars = c.is_string() ? c.s() : std::string();
    return Value::Str(Strip(v.Str(limits_.max_output_bytes), c.is_string() ? &chars : nullptr, true, true));
  }
  if (n == "upper") return Value::Str(Upper(v.Str(limits_.max_output_bytes)));
  if (n == "lower") return Value::Str(Lower(v.Str(limits_.max_output_bytes)));
  if (n == "title") return Value::Str(Title(v.Str(limits_.max_output_bytes)));
  if (n == "capitalize") return Value::Str(Capitalize(v.Str(limits_.max_output_bytes)));
  if (n == "length" || n == "count") {
    switch (v.kind()) {
      case Kind::kUndefined: return Value::Int(0);
      case Kind::kString: return Value::Int(static_cast<int64_t>(CodepointCount(v.s())));
      case Kind::kList:
        if (v.is_generator()) Fail("object of type 'generator' has no len()");
        return Value::Int(static_cast<int64_t>(v.l().size()));
      case Kind::kDict:
        if (!v.is_namespace()) return Value::Int(static_cast<int64_t>(v.d().items.size()));
        [[fallthrough]];
      default: Fail(std::string("object of type '") + v.TypeName() + "' has no len()");
    }
  }
  if (n == "default" || n == "d") {
    Value def = a.Get(0, "default_value", Value::Str(""));
    bool boolean = a.Get(1, "boolean", Value::Bool(false)).Truthy();
    if (v.undefined() || (boolean && !v.Truthy())) return def;
    return v;
  }
  if (n == "tojson") {
    bool ensure_ascii = a.Get(0, "ensure_ascii", Value::Bool(false)).Truthy();
    Value indent = a.Get(1, "indent", Value::None());
    Value seps = a.Get(2, "separators", Value::None());
    bool sort_keys = a.Get(3, "sort_keys", Value::Bool(false)).Truthy();
    std::string is, ks;
    if (!seps.none()) {
      if (!seps.is_list() || seps.l().size() != 2 || !seps.l()[0].is_string() || !seps.l()[1].is_string())
        Fail("separators must be a pair of strings");
      is = seps.l()[0].s();
      ks = seps.l()[1].s();
    }
    std::string json = ToJsonOpts(v, ensure_ascii, indent, seps.none() ? nullptr : &is, seps.none() ? nullptr : &ks,
                                  sort_keys, limits_.max_output_bytes);
    Work(json.size());
    return Value::Str(std::move(json));
  }
  if (n == "int") {
    Value def = a.Get(0, "default", Value::Int(0));
    int64_t base = NeedInt(a.Get(1, "base", Value::Int(10)), "base");
    if (v.is_int()) return Value::Int(v.i());
    if (v.kind() == Kind::kFloat) {
      if (!std::isfinite(v.f()) || std::fabs(v.f()) > 9.2e18) return def;
      return Value::Int(static_cast<int64_t>(v.f()));
    }
    if (v.is_string()) {
      std::string s = Strip(v.s(), nullptr, true, true);
      std::string t;
      for (char c : s) if (c != '_') t += c;
      char* end = nullptr;
      errno = 0;
      long long r = std::strtoll(t.c_str(), &end, static_cast<int>(base));
      if (!t.empty() && end && *end == 0 && errno == 0) return Value::Int(r);
      double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && end && *end == 0 && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::Int(static_cast<int64_t>(d));
    }
    return def;
  }
  if (n == "float") {
    Value def = a.Get(0, "default", Value::Float(0.0));
    if (v.is_number()) return Value::Float(v.f());
    if (v.is_string()) {
      std::string s = Strip(v.s(), nullptr, true, true);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == 0) return Value::Float(d);
    }
    return def;
  }
  if (n == "abs") {
    if (v.kind() == Kind::kFloat) return Value::Float(std::fabs(v.f()));
    if (v.is_int()) return Value::Int(v.i() < 0 ? -v.i() : v.i());
    Fail(std::string("bad operand type for abs(): '") + v.TypeName() + "'");
  }
  if (n == "round") {
    if (!v.is_number()) Fail("round needs a number");
    int64_t prec = NeedInt(a.Get(0, "precision", Value::Int(0)), "precision");
    std::string method = a.Get(1, "method", Value::Str("common")).Str(limits_.max_output_bytes);
    double m = std::pow(10.0, static_cast<double>(prec));
    double x = v.f() * m;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
    return Value::Float(r / m);
  }
  if (n == "first") {
    if (v.is_list()) return v.l().empty() ? Value::Undefined("No first item, sequence was empty.") : v.l()[0];
    std::vector<Value> it = items_of(v);
    return it.empty() ? Value::Undefined("No first item, sequence was empty.") : it[0];
  }
  if (n == "last") {
    if (v.is_generator()) Fail("'generator' object is not reversible");
    std::vector<Value> it = items_of(v);
    return it.empty() ? Value::Undefined("No last item, sequence was empty.") : it.back();
  }
  if (n == "list") return Value::MakeList(items_of(v));
  if (n == "reverse") {
    if (v.is_string()) {
      std::vector<uint32_t> cps = ToCodepoints(v.s());
      std::reverse(cps.begin(), cps.end());
      return Value::Str(FromCodepoints(cps, 0, cps.size()));
    }
    if (v.is_generator()) Fail("'generator' object is not reversible");
    std::vector<Value> it = items_of(v);
    std::reverse(it.begin(), it.end());
    return v.is_list() ? Value::MakeGenerator(std::move(it)) : Value::MakeList(std::move(it));
  }
  if (n == "join") {
    std::string sep = a.Get(0, "d", Value::Str("")).Str(limits_.max_output_bytes);
    Value attr = a.Get(1, "attribute", Value::None());
    std::string o;
    std::vector<Value> it = items_of(v);
    for (size_t k = 0; k < it.size(); ++k) {
      if (k) o += sep;
      o += (attr.none() ? it[k] : attr_path(it[k], attr)).Str(limits_.max_output_bytes);
      CheckSize(o.size());
    }
    return Value::Str(o);
  }
  if (n == "replace") {
    return Value::Str(Replace(v.Str(limits_.max_output_bytes), a.Get(0, "old").Str(limits_.max_output_bytes), a.Get(1, "new").Str(limits_.max_output_bytes),
                              a.Has(2, "count") && !a.Get(2, "count").none() ? NeedInt(a.Get(2, "count"), "count") : -1,
                              limits_.max_output_bytes));
  }
  if (n == "items") {
    if (v.undefined()) return Value::MakeList();
    if (!v.is_dict() || v.is_namespace()) Fail("Can only get item pairs from a mapping.");
    Args none;
    return Value::MakeGenerator(CallMethod(v, "items", none).l());
  }
  if (n == "dictsort") {
    if (!v.is_dict() || v.is_namespace()) Fail("dictsort needs a mapping");
    bool cs = a.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
    std::string by = a.Get(1, "by", Value::Str("key")).Str(limits_.max_output_bytes);
    bool rev = a.Get(2, "reverse", Value::Bool(false)).Truthy();
    int pos = by == "key" ? 0 : by == "value" ? 1 : -1;
    if (pos < 0) Fail("You can only sort by either \"key\" or \"value\"");
    List l;
    for (auto& kv : v.d().items) l.push_back(Value::MakeTuple({kv.first, kv.second}));
    std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
      int c = Compare(sort_key(x.l()[static_cast<size_t>(pos)], cs), sort_key(y.l()[static_cast<size_t>(pos)], cs));
      return rev ? c > 0 : c < 0;
    });
    return Value::MakeList(std::move(l));
  }
  if (n == "sort") {
    bool rev = a.Get(0, "reverse", Value::Bool(false)).Truthy();
    bool cs = a.Get(1, "case_sensitive", Value::Bool(false)).Truthy();
    Value attr = a.Get(2, "attribute", Value::None());
    std::vector<Value> it = items_of(v);
    std::vector<Value> keys;
    for (auto& x : it) keys.push_back(sort_key(attr.none() ? x : attr_path(x, attr), cs));
    std::vector<size_t> idx(it.size());
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
      int c = Compare(keys[x], keys[y]);
      return rev ? c > 0 : c < 0;
    });
    List l;
    for (size_t k : idx) l.push_back(it[k]);
    return Value::MakeList(std::move(l));
  }
  if (n == "unique") {
    bool cs = a.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
    Value attr = a.Get(1, "attribute", Value::None());
    List l, seen;
    for (auto& x : items_of(v)) {
      Value key = sort_key(attr.none() ? x : attr_path(x, attr), cs);
      bool dup = false;
      for (auto& s : seen)
        if (Equal(s, key)) dup = true;
      if (!dup) {
        seen.push_back(key);
        l.push_back(x);
      }
    }
    return Value::MakeGenerator(std::move(l));
  }
  if (n == "min" || n == "max") {
    bool cs = a.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
    Value attr = a.Get(1, "attribute", Value::None());
    std::vector<Value> it = items_of(v);
    if (it.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t k = 1; k < it.size(); ++k) {
      int c = Compare(sort_key(attr.none() ? it[k] : attr_path(it[k], attr), cs),
                      sort_key(attr.none() ? it[best] : attr_path(it[best], attr), cs));
      if (n == "min" ? c < 0 : c > 0) best = k;
    }
    return it[best];
  }
  if (n == "sum") {
    Value attr = a.Get(0, "attribute", Value::None());
    Value acc = a.Get(1, "start", Value::Int(0));
    for (auto& x : items_of(v)) acc = EvalBinary("+", acc, attr.none() ? x : attr_path(x, attr));
    return acc;
  }
  if (n == "attr") return GetAttr(v, a.Get(0, "name").Str(limits_.max_output_bytes));
  if (n == "map") {
    std::vector<Value> it = v.Truthy() ? items_of(v) : std::vector<Value>();
    List l;
    if (a.pos.empty()) {
      Value attr = a.Get(99, "attribute");
      Value def = a.Get(99, "default");
      for (auto& x : it) {
        Value r = attr_path(x, attr);
        l.push_back(r.undefined() && a.Has(99, "default") ? def : r);
      }
      return Value::MakeGenerator(std::move(l));
    } else {
      std::string f = a.pos[0].Str(limits_.max_output_bytes);
      if (!HasFilter(f)) Fail("No filter named '" + f + "'.");
      Args rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      for (auto& x : it) {
        Args copy = rest;
        l.push_back(ApplyFilter(f, x, copy));
      }
    }
    return Value::MakeGenerator(std::move(l));
  }
  if (n == "select" || n == "reject" || n == "selectattr" || n == "rejectattr") {
    const bool attr_mode = n == "selectattr" || n == "rejectattr";
    const bool want = n == "select" || n == "selectattr";
    size_t p = 0;
    Value attr;
    if (attr_mode) {
      if (a.pos.empty()) Fail(n + " needs an attribute");
      attr = a.pos[p++];
    }
    std::string test;
    if (p < a.pos.size()) test = a.pos[p++].Str(limits_.max_output_bytes);
    if (!test.empty() && !HasTest(test)) Fail("No test named '" + test + "'.");
    Args rest;
    rest.pos.assign(a.pos.begin() + static_cast<long>(p), a.pos.end());
    rest.kw = a.kw;
    List l;
    for (auto& x : v.Truthy() ? items_of(v) : std::vector<Value>()) {
      Value subj = attr_mode ? attr_path(x, attr) : x;
      Args copy = rest;
      bool ok = test.empty() ? subj.Truthy() : ApplyTest(test, subj, copy);
      if (ok == want) l.push_back(x);
    }
    return Value::MakeGenerator(std::move(l));
  }
  if (n == "indent") {
    Value w = a.Get(0, "width", Value::Int(4));
    bool first = a.Get(1, "first", Value::Bool(false)).Truthy();
    bool blank = a.Get(2, "blank", Value::Bool(false)).Truthy();
    std::string ind = w.is_string() ? w.s() : std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(NeedInt(w, "width"), 10000))), ' ');
    std::string s = v.Str(limits_.max_output_bytes) + "\n";
    std::vector<std::string> lines = SplitLines(s, false);
    std::string rv;
    if (blank) {
      for (size_t k = 0; k < lines.size(); ++k) {
        if (k) rv += "\n" + ind;
        rv += lines[k];
        CheckSize(rv.size());
      }
    } else {
      rv = lines.empty() ? std::string() : lines[0];
      for (size_t k = 1; k < lines.size(); ++k) {
        rv += "\n";
        if (!lines[k].empty()) rv += ind;
        rv += lines[k];
        CheckSize(rv.size());
      }
    }
    if (first) rv = ind + rv;
    return Value::Str(rv);
  }
  if (n == "center") {
    Args c;
    c.pos.push_back(a.Get(0, "width", Value::Int(80)));
    return CallMethod(Value::Str(v.Str(limits_.max_output_bytes)), "center", c);
  }
  if (n == "wordcount") return Value::Int(static_cast<int64_t>(Split(v.Str(limits_.max_output_bytes), Value::None(), -1).size()));
  if (n == "format") return Value::Str(Percent(v.Str(limits_.max_output_bytes), a, limits_.max_output_bytes));
  if (n == "batch") {
    int64_t size = NeedInt(a.Get(0, "linecount"), "linecount");
    if (size <= 0) Fail("batch size must be positive");
    List l, cur;
    for (auto& x : items_of(v)) {
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == size) {
        l.push_back(Value::MakeList(cur));
        cur.clear();
      }
    }
    if (!cur.empty()) l.push_back(Value::MakeList(cur));
    return Value::MakeList(std::move(l));
  }
  Fail("No filter named '" + n + "'.");
}

}  // namespace zf::jinja

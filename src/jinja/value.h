// The value model of the Jinja interpreter: Python's objects as templates see them (None, bool,
// int, float, str, list, dict, callables) plus jinja2's Undefined. Lists and dicts are shared by
// reference like Python's; dicts keep insertion order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zf::jinja {

// A template error: message plus the template position (1-based; 0 = unknown).
class Error : public std::runtime_error {
 public:
  Error(const std::string& m, int line = 0, int col = 0) : std::runtime_error(m), line(line), col(col) {}
  int line, col;
};

class Value;
using List = std::vector<Value>;
struct Dict;
struct Args;
using Function = std::function<Value(Args&)>;

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

class Value {
 public:
  Value() = default;  // Undefined
  static Value Undefined(std::string hint = {}) {
    Value v;
    v.s_ = std::make_shared<std::string>(std::move(hint));
    return v;
  }
  static Value None() { Value v; v.kind_ = Kind::kNone; return v; }
  static Value Bool(bool b) { Value v; v.kind_ = Kind::kBool; v.i_ = b; return v; }
  static Value Int(int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
  static Value Float(double d) { Value v; v.kind_ = Kind::kFloat; v.d_ = d; return v; }
  static Value Str(std::string s) {
    Value v;
    v.kind_ = Kind::kString;
    v.s_ = std::make_shared<std::string>(std::move(s));
    return v;
  }
  // Nesting deeper than this is an error, so that printing, comparing and freeing a value
  // never recurse without bound.
  static constexpr int kMaxNesting = 512;
  // Longest list a template can build (items from a string, split, +, *).
  static constexpr size_t kMaxListLength = size_t{1} << 20;
  static Value MakeList(List l = {}) {
    Value v;
    v.kind_ = Kind::kList;
    v.l_ = std::make_shared<List>(std::move(l));
    v.UpdateNesting();
    return v;
  }
  // Recomputes the nesting depth from the items (lists and dicts); throws Error past the limit.
  void UpdateNesting();
  int nesting() const { return nesting_; }
  // A one-pass iterator (what jinja2's map/select/reverse... return): iterable and truthy, but
  // without len(), indexing or JSON.
  static Value MakeGenerator(List l) {
    Value v = MakeList(std::move(l));
    v.gen_ = true;
    return v;
  }
  static Value MakeDict();
  static Value MakeFunction(Function f, std::string name) {
    Value v;
    v.kind_ = Kind::kFunction;
    v.f_ = std::make_shared<Function>(std::move(f));
    v.s_ = std::make_shared<std::string>(std::move(name));
    return v;
  }

  Kind kind() const { return kind_; }
  bool undefined() const { return kind_ == Kind::kUndefined; }
  bool none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }  // Python: bool is an int
  bool is_number() const { return is_int() || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  int64_t i() const { return i_; }
  double f() const { return kind_ == Kind::kFloat ? d_ : static_cast<double>(i_); }
  const std::string& s() const { return *s_; }
  List& l() const { return *l_; }
  Dict& d() const { return *dict_; }
  const Function& fn() const { return *f_; }
  const std::string& name() const {  // function name / undefined hint
    static const std::string kEmpty;
    return s_ ? *s_ : kEmpty;
  }
  // markupsafe.Markup (from |safe or |escape): `+` with a plain str HTML-escapes the plain side.
  static Value Markup(std::string s) {
    Value v = Str(std::move(s));
    v.gen_ = true;
    return v;
  }
  bool is_markup() const { return kind_ == Kind::kString && gen_; }
  // A Python tuple: a list that prints as (a, b) and never equals a list.
  static Value MakeTuple(List l) {
    Value v = MakeList(std::move(l));
    v.tuple_ = true;
    return v;
  }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_generator() const { return kind_ == Kind::kList && gen_; }
  bool is_namespace() const { return kind_ == Kind::kDict && ns_; }
  void set_namespace() { ns_ = true; }

  bool Truthy() const;
  // str() of the value as Python prints it (lists and dicts as repr).
  // Throws Error ("limit exceeded: output size") once the text would pass `limit` bytes.
  std::string Str(size_t limit = SIZE_MAX) const;
  // repr() of the value.
  std::string Repr(size_t limit = SIZE_MAX) const;
  const char* TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool ns_ = false;
  bool gen_ = false;
  bool tuple_ = false;
  int nesting_ = 0;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<List> l_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> f_;
};

// Ordered dict with Python key equality (keys are usually strings; lookups are linear, dicts in
// chat templates are small).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  Value* Find(const Value& key);
  Value* Find(const std::string& key);
  void Set(const Value& key, Value v);
};

inline Value Value::MakeDict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>();
  return v;
}

// Arguments of a call: positional then keyword.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Argument `name` at position `index` (or keyword), else `def`.
  Value Get(size_t index, const char* name, Value def = Value()) const;
  bool Has(size_t index, const char* name) const;
};

// Python equality (1 == 1.0 == True, lists and dicts elementwise).
bool Equal(const Value& a, const Value& b);
// Python ordering for numbers, strings and lists; throws for other pairs.
int Compare(const Value& a, const Value& b);
// Python float repr (shortest round-trip, "1.0", "1e-05", "inf").
std::string FloatRepr(double d);
// Python repr of a string ('...' or "..." as Python picks).
std::string StrRepr(const std::string& s);

}  // namespace zf::jinja

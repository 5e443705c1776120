// The Jinja evaluator: statements, expressions, scoping (jinja2's: loops and macros get their
// own scope, `if` does not), Undefined semantics, and the limits.
#include "jinja/interp.h"

#include <cmath>
#include <limits>

#include "jinja/parser.h"
#include "jinja/text.h"

namespace zf::jinja {

std::string Escape(const std::string& s);  // builtins.cpp

namespace {

struct DepthGuard {
  DepthGuard(int* d, int max) : d_(d) {
    if (++*d_ > max) {
      --*d_;
      throw Error("limit exceeded: recursion depth (max_depth " + std::to_string(max) + ")");
    }
  }
  ~DepthGuard() { --*d_; }
  int* d_;
};

// Break/continue travel as exceptions only inside Exec (never out of a loop body).
int64_t CheckedInt(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) {
    throw Error("integer overflow (zerfoo's integers are 64-bit)");
  }
  return static_cast<int64_t>(v);
}

double FloorMod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

void Interp::Fail(const std::string& m) const { throw Error(m); }

Interp::~Interp() {
  for (auto& ns : namespaces_) ns.d().items.clear();
  macro_frames_.clear();
}

void Interp::CheckSize(size_t n) const {
  if (n > limits_.max_output_bytes) {
    throw Error("limit exceeded: output size (max_output_bytes " + std::to_string(limits_.max_output_bytes) + ")");
  }
}

void Interp::Step() {
  if (++steps_ > limits_.max_steps) {
    throw Error("limit exceeded: loop iterations (max_steps " + std::to_string(limits_.max_steps) + ")");
  }
}

void Interp::Work(size_t bytes) {
  steps_ += bytes >> 8;
  if (steps_ > limits_.max_steps) {
    throw Error("limit exceeded: loop iterations (max_steps " + std::to_string(limits_.max_steps) +
                ", copying counts one per 256 bytes)");
  }
}

void Interp::Emit(std::string* out, const std::string& s) {
  Work(s.size());
  CheckSize(out->size() + s.size());
  out->append(s);
}

std::string Interp::Run(const Body& body, const Value& vars) {
  auto globals = std::make_shared<Frame>();
  InstallGlobals(globals.get());
  auto root = std::make_shared<Frame>();
  root->parent = globals;
  globals_ = vars;
  if (vars.is_dict()) {
    for (auto& kv : vars.d().items)
      if (kv.first.is_string()) root->vars[kv.first.s()] = kv.second;
  }
  std::string out;
  Exec(body, root, &out);
  return out;
}

Interp::Flow Interp::Exec(const Body& body, const FrameP& f, std::string* out) {
  for (const auto& s : body) {
    Flow fl = ExecStmt(*s, f, out);
    if (fl != Flow::kNormal) return fl;
  }
  return Flow::kNormal;
}

Interp::Flow Interp::ExecStmt(const Stmt& s, const FrameP& f, std::string* out) {
  try {
    switch (s.type) {
      case StmtType::kText: Emit(out, s.text); break;
      case StmtType::kOutput: Emit(out, Eval(*s.expr, f).Str(limits_.max_output_bytes)); break;
      case StmtType::kIf:
        for (size_t k = 0; k < s.bodies.size(); ++k) {
          if (k >= s.conds.size() || Eval(*s.conds[k], f).Truthy()) return Exec(s.bodies[k], f, out);
        }
        break;
      case StmtType::kFor: ExecFor(s, f, out); break;
      case StmtType::kSet: Assign(*s.target, Eval(*s.expr, f), f); break;
      case StmtType::kSetBlock: {
        std::string buf;
        Exec(s.body, f, &buf);
        Value v = Value::Str(std::move(buf));
        if (s.expr) {  // filter chain with a placeholder subject
          std::vector<const Expr*> chain;
          for (const Expr* e = s.expr.get(); e->type == ExprType::kFilter; e = e->kids[0].get()) chain.push_back(e);
          for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
            Args a;
            EvalArgs(**it, 1, f, &a);
            v = ApplyFilter((*it)->name, v, a);
          }
        }
        Assign(*s.target, v, f);
        break;
      }
      case StmtType::kMacro: f->vars[s.text] = MakeMacro(s, f); break;
      case StmtType::kCallBlock: {
        // caller() renders the block body; the call's callee receives it.
        macro_frames_.push_back(f);
        Frame* caller_frame = f.get();
        const Stmt* sp = &s;
        Value caller = Value::MakeFunction(
            [this, sp, caller_frame](Args& a) {
              auto fr = std::make_shared<Frame>();
              fr->parent = caller_frame->shared_from_this();
              for (size_t k = 0; k < sp->names.size(); ++k) {
                Value v = a.Get(k, sp->names[k].c_str());
                if (!a.Has(k, sp->names[k].c_str()) && sp->defaults[k]) v = Eval(*sp->defaults[k], fr);
                fr->vars[sp->names[k]] = v;
              }
              std::string buf;
              Exec(sp->body, fr, &buf);
              return Value::Str(std::move(buf));
            },
            "caller");
        const Expr& call = *s.expr;
        Value fn = Eval(*call.kids[0], f);
        Args a;
        EvalArgs(call, 1, f, &a);
        a.kw.emplace_back("caller", caller);
        Emit(out, Call(fn, a).Str(limits_.max_output_bytes));
        break;
      }
      case StmtType::kFilterBlock: {
        std::string buf;
        Exec(s.body, f, &buf);
        Value v = Value::Str(std::move(buf));
        std::vector<const Expr*> chain;
        for (const Expr* e = s.expr.get(); e->type == ExprType::kFilter; e = e->kids[0].get()) chain.push_back(e);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          Args a;
          EvalArgs(**it, 1, f, &a);
          v = ApplyFilter((*it)->name, v, a);
        }
        Emit(out, v.Str(limits_.max_output_bytes));
        break;
      }
      case StmtType::kBreak: return Flow::kBreak;
      case StmtType::kContinue: return Flow::kContinue;
      case StmtType::kScope: return Exec(s.body, f, out);
    }
  } catch (Error& e) {
    if (e.line == 0) throw Error(e.what(), cur_ ? cur_->line : s.line, cur_ ? cur_->col : s.col);
    throw;
  }
  return Flow::kNormal;
}

std::vector<Value> Interp::Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return {};
    case Kind::kList: Work(v.l().size() * 16); return v.l();
    case Kind::kDict: {
      if (v.is_namespace()) Fail("'Namespace' object is not iterable");
      std::vector<Value> keys;
      for (auto& kv : v.d().items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::kString: {
      if (v.s().size() > Value::kMaxListLength && CodepointCount(v.s()) > Value::kMaxListLength) {
        Fail("limit exceeded: list length (" + std::to_string(Value::kMaxListLength) + ")");
      }
      std::vector<Value> r;
      for (uint32_t cp : ToCodepoints(v.s())) {
        std::string c;
        AppendUtf8(cp, &c);
        r.push_back(Value::Str(c));
      }
      return r;
    }
    default: Fail(std::string("'") + v.TypeName() + "' object is not iterable");
  }
}

void Interp::ExecFor(const Stmt& s, const FrameP& f, std::string* out) {
  Value seq = Eval(*s.expr, f);
  std::vector<Value> items = Iterate(seq);
  auto bind = [&](Frame* fr, const Value& item) {
    if (s.names.size() == 1) {
      fr->vars[s.names[0]] = item;
      return;
    }
    std::vector<Value> parts = Iterate(item);
    if (parts.size() != s.names.size()) {
      Fail(parts.size() < s.names.size() ? "not enough values to unpack (expected " + std::to_string(s.names.size()) + ", got " + std::to_string(parts.size()) + ")"
                                         : "too many values to unpack (expected " + std::to_string(s.names.size()) + ")");
    }
    for (size_t k = 0; k < parts.size(); ++k) fr->vars[s.names[k]] = parts[k];
  };
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& it : items) {
      Step();
      auto fr = std::make_shared<Frame>();
      fr->parent = f;
      bind(fr.get(), it);
      if (Eval(*s.cond, fr).Truthy()) kept.push_back(it);
    }
    items.swap(kept);
  }
  if (items.empty()) {
    auto fr = std::make_shared<Frame>();
    fr->parent = f;
    Exec(s.else_body, fr, out);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t k = 0; k < n; ++k) {
    Step();
    auto fr = std::make_shared<Frame>();
    fr->parent = f;
    bind(fr.get(), items[static_cast<size_t>(k)]);
    Value loop = Value::MakeDict();
    Dict& d = loop.d();
    d.Set(Value::Str("index"), Value::Int(k + 1));
    d.Set(Value::Str("index0"), Value::Int(k));
    d.Set(Value::Str("revindex"), Value::Int(n - k));
    d.Set(Value::Str("revindex0"), Value::Int(n - k - 1));
    d.Set(Value::Str("first"), Value::Bool(k == 0));
    d.Set(Value::Str("last"), Value::Bool(k == n - 1));
    d.Set(Value::Str("length"), Value::Int(n));
    d.Set(Value::Str("depth"), Value::Int(1));
    d.Set(Value::Str("depth0"), Value::Int(0));
    if (k > 0) d.Set(Value::Str("previtem"), items[static_cast<size_t>(k - 1)]);
    if (k + 1 < n) d.Set(Value::Str("nextitem"), items[static_cast<size_t>(k + 1)]);
    d.Set(Value::Str("cycle"), Value::MakeFunction(
                                   [k](Args& a) {
                                     if (a.pos.empty()) throw Error("no items for cycling given");
                                     return a.pos[static_cast<size_t>(k) % a.pos.size()];
                                   },
                                   "cycle"));
    loop.set_namespace();  // attribute access only, like jinja2's LoopContext
    fr->vars["loop"] = loop;
    Flow fl = Exec(s.body, fr, out);
    if (fl == Flow::kBreak) break;
  }
}

void Interp::Assign(const Expr& target, const Value& v, const FrameP& f) {
  switch (target.type) {
    case ExprType::kName: f->vars[target.name] = v; return;
    case ExprType::kTuple: {
      std::vector<Value> parts = Iterate(v);
      if (parts.size() != target.kids.size()) Fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(target.kids.size()));
      for (size_t k = 0; k < parts.size(); ++k) Assign(*target.kids[k], parts[k], f);
      return;
    }
    case ExprType::kAttr: {
      Value* ns = f->Find(target.kids[0]->name);
      if (ns == nullptr || !ns->is_namespace() || ns->name() == "loop") {
        Fail("cannot assign attribute on non-namespace object");
      }
      ns->d().Set(Value::Str(target.name), v);
      return;
    }
    default: Fail("cannot assign to this expression");
  }
}

Value Interp::MakeMacro(const Stmt& s, const FrameP& f) {
  const Stmt* sp = &s;
  macro_frames_.push_back(f);
  Frame* def = f.get();
  return Value::MakeFunction(
      [this, sp, def](Args& a) {
        Step();
        DepthGuard g(&depth_, limits_.max_depth);
        auto fr = std::make_shared<Frame>();
        fr->parent = def->shared_from_this();
        if (a.pos.size() > sp->names.size()) Fail("macro '" + sp->text + "' takes not more than " + std::to_string(sp->names.size()) + " argument(s)");
        for (size_t k = 0; k < sp->names.size(); ++k) {
          const char* n = sp->names[k].c_str();
          if (a.Has(k, n)) fr->vars[n] = a.Get(k, n);
          else if (sp->defaults[k]) fr->vars[n] = Eval(*sp->defaults[k], fr);
          else fr->vars[n] = Value::Undefined(n);
        }
        for (auto& kv : a.kw) {
          bool known = kv.first == "caller";
          for (auto& n : sp->names) known = known || n == kv.first;
          if (!known) Fail("macro '" + sp->text + "' takes no keyword argument '" + kv.first + "'");
          if (kv.first == "caller") fr->vars["caller"] = kv.second;
        }
        std::string buf;
        Exec(sp->body, fr, &buf);
        return Value::Str(std::move(buf));
      },
      s.text);
}

void Interp::EvalArgs(const Expr& e, size_t first, const FrameP& f, Args* args) {
  size_t k = first;
  for (size_t i = 0; i < e.npos; ++i, ++k) args->pos.push_back(Eval(*e.kids[k], f));
  for (size_t i = 0; i < e.kw.size(); ++i, ++k) args->kw.emplace_back(e.kw[i], Eval(*e.kids[k], f));
}

Value Interp::Call(const Value& fn, Args& args) {
  if (fn.undefined()) Fail(fn.name().empty() ? "'Undefined' object is not callable" : "'" + fn.name() + "' is undefined");
  if (!fn.is_function()) Fail(std::string("'") + fn.TypeName() + "' object is not callable");
  return fn.fn()(args);
}

bool Interp::Contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Kind::kString:
      if (!item.is_string()) Fail("'in <string>' requires string as left operand, not " + std::string(item.TypeName()));
      return c.s().find(item.s()) != std::string::npos;
    case Kind::kList:
      for (auto& v : c.l())
        if (Equal(v, item)) return true;
      return false;
    case Kind::kDict: return c.d().Find(item) != nullptr;
    case Kind::kUndefined: return false;
    default: Fail(std::string("argument of type '") + c.TypeName() + "' is not iterable");
  }
}

Value Interp::GetAttr(const Value& obj, const std::string& name, const Expr*) {
  if (obj.undefined()) {
    Fail(obj.name().empty() ? "'Undefined' has no attribute '" + name + "'" : "'" + obj.name() + "' is undefined");
  }
  if (obj.is_dict() && !obj.is_namespace() && HasMethod(obj, name)) {
    Value self = obj;
    std::string n = name;
    return Value::MakeFunction([this, self, n](Args& a) { return CallMethod(self, n, a); }, n);
  }
  if (obj.is_dict()) {
    if (Value* v = obj.d().Find(name)) return *v;
    return Value::Undefined(std::string("'") + (obj.is_namespace() ? "Namespace" : "dict object") + "' has no attribute '" + name + "'");
  }
  if (HasMethod(obj, name)) {
    Value self = obj;
    std::string n = name;
    return Value::MakeFunction([this, self, n](Args& a) { return CallMethod(self, n, a); }, n);
  }
  return Value::Undefined(std::string("'") + obj.TypeName() + " object' has no attribute '" + name + "'");
}

Value Interp::GetItem(const Value& obj, const Value& key, const Expr*) {
  if (obj.undefined()) {
    Fail(obj.name().empty() ? "'Undefined' has no item" : "'" + obj.name() + "' is undefined");
  }
  if (obj.is_dict() && !obj.is_namespace()) {
    if (Value* v = obj.d().Find(key)) return *v;
  } else if (((obj.is_list() && !obj.is_generator()) || obj.is_string()) && key.is_int()) {
    int64_t n = obj.is_list() ? static_cast<int64_t>(obj.l().size()) : static_cast<int64_t>(CodepointCount(obj.s()));
    int64_t i = key.i() < 0 ? key.i() + n : key.i();
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.l()[static_cast<size_t>(i)];
      std::vector<uint32_t> cps = ToCodepoints(obj.s());
      return Value::Str(FromCodepoints(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    }
  }
  if (key.is_string()) {
    if (obj.is_namespace()) {
      if (Value* v = obj.d().Find(key)) return *v;
    }
    if (HasMethod(obj, key.s())) return GetAttr(obj, key.s());
  }
  return Value::Undefined(std::string("'") + obj.TypeName() + " object' has no attribute " + key.Repr());
}

namespace {

// Python slice indices for length n.
void SliceIndices(int64_t n, const Value& a, const Value& b, const Value& c, int64_t* start, int64_t* stop, int64_t* step) {
  *step = c.none() || c.undefined() ? 1 : c.i();
  if (*step == 0) throw Error("slice step cannot be zero");
  auto adj = [&](const Value& v, int64_t def, bool is_start) {
    if (v.none() || v.undefined()) return def;
    int64_t x = v.i();
    if (x < 0) {
      x += n;
      if (x < 0) x = *step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = *step < 0 ? n - 1 : n;
    }
    (void)is_start;
    return x;
  };
  *start = adj(a, *step < 0 ? n - 1 : 0, true);
  *stop = adj(b, *step < 0 ? -1 : n, false);
}

}  // namespace

Value Interp::Eval(const Expr& e, const FrameP& f) {
  DepthGuard g(&depth_, limits_.max_depth + 512);
  const Expr* saved = cur_;
  cur_ = &e;
  Value r;
  switch (e.type) {
    case ExprType::kConst: r = e.value; break;
    case ExprType::kName: {
      Value* v = f->Find(e.name);
      r = v ? *v : Value::Undefined(e.name);
      break;
    }
    case ExprType::kList:
    case ExprType::kTuple: {
      List l;
      for (auto& k : e.kids) l.push_back(Eval(*k, f));
      r = e.type == ExprType::kTuple ? Value::MakeTuple(std::move(l)) : Value::MakeList(std::move(l));
      break;
    }
    case ExprType::kDict: {
      r = Value::MakeDict();
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = Eval(*e.kids[k], f);
        if (key.is_list() || key.is_dict()) Fail(std::string("unhashable type: '") + key.TypeName() + "'");
        r.d().Set(key, Eval(*e.kids[k + 1], f));
      }
      r.UpdateNesting();
      break;
    }
    case ExprType::kAttr: {
      Value o = Eval(*e.kids[0], f);
      cur_ = &e;
      r = GetAttr(o, e.name, &e);
      break;
    }
    case ExprType::kItem: {
      Value o = Eval(*e.kids[0], f);
      Value k = Eval(*e.kids[1], f);
      cur_ = &e;
      r = GetItem(o, k, &e);
      break;
    }
    case ExprType::kSlice: {
      Value o = Eval(*e.kids[0], f);
      Value b[3];
      for (int k = 0; k < 3; ++k) {
        if (e.kids[1 + static_cast<size_t>(k)]) {
          b[k] = Eval(*e.kids[1 + static_cast<size_t>(k)], f);
          if (!b[k].none() && !b[k].is_int()) Fail("slice indices must be integers or None");
        }
      }
      cur_ = &e;
      if (o.undefined()) Fail("'" + o.name() + "' is undefined");
      std::vector<uint32_t> cps;
      int64_t n;
      if (o.is_generator()) Fail("'generator' object is not subscriptable");
      if (o.is_list()) n = static_cast<int64_t>(o.l().size());
      else if (o.is_string()) {
        cps = ToCodepoints(o.s());
        n = static_cast<int64_t>(cps.size());
      } else {
        Fail(std::string("'") + o.TypeName() + "' object is not subscriptable");
      }
      int64_t start, stop, step;
      SliceIndices(n, b[0], b[1], b[2], &start, &stop, &step);
      if (o.is_list()) {
        List l;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) l.push_back(o.l()[static_cast<size_t>(i)]);
        r = Value::MakeList(std::move(l));
      } else {
        std::string s;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) AppendUtf8(cps[static_cast<size_t>(i)], &s);
        r = Value::Str(std::move(s));
      }
      break;
    }
    case ExprType::kCall: {
      Value fn = Eval(*e.kids[0], f);
      Args a;
      EvalArgs(e, 1, f, &a);
      cur_ = &e;
      r = Call(fn, a);
      break;
    }
    case ExprType::kFilter: {
      Value subj = Eval(*e.kids[0], f);
      Args a;
      EvalArgs(e, 1, f, &a);
      cur_ = &e;
      r = ApplyFilter(e.name, subj, a);
      break;
    }
    case ExprType::kTest: {
      Value subj = Eval(*e.kids[0], f);
      Args a;
      EvalArgs(e, 1, f, &a);
      cur_ = &e;
      r = Value::Bool(ApplyTest(e.name, subj, a) != e.negated);
      break;
    }
    case ExprType::kUnary: {
      Value v = Eval(*e.kids[0], f);
      cur_ = &e;
      if (e.name == "not") r = Value::Bool(!v.Truthy());
      else if (!v.is_number()) Fail("bad operand type for unary " + e.name + ": '" + v.TypeName() + "'");
      else if (e.name == "+") r = v.is_bool() ? Value::Int(v.i()) : v;
      else if (v.kind() == Kind::kFloat) r = Value::Float(-v.f());
      else r = Value::Int(CheckedInt(-static_cast<__int128>(v.i())));
      break;
    }
    case ExprType::kBinary: {
      Value a = Eval(*e.kids[0], f);
      Value b = Eval(*e.kids[1], f);
      cur_ = &e;
      r = EvalBinary(e.name, a, b);
      break;
    }
    case ExprType::kAnd: {
      Value a = Eval(*e.kids[0], f);
      r = a.Truthy() ? Eval(*e.kids[1], f) : a;
      break;
    }
    case ExprType::kOr: {
      Value a = Eval(*e.kids[0], f);
      r = a.Truthy() ? a : Eval(*e.kids[1], f);
      break;
    }
    case ExprType::kCompare: {
      Value a = Eval(*e.kids[0], f);
      bool ok = true;
      for (size_t k = 0; k < e.ops.size() && ok; ++k) {
        Value b = Eval(*e.kids[k + 1], f);
        cur_ = &e;
        const std::string& op = e.ops[k];
        if (op == "==") ok = Equal(a, b);
        else if (op == "!=") ok = !Equal(a, b);
        else if (op == "in") ok = Contains(b, a);
        else if (op == "notin") ok = !Contains(b, a);
        else {
          if (a.undefined() || b.undefined()) Fail("'" + (a.undefined() ? a.name() : b.name()) + "' is undefined");
          int c = Compare(a, b);
          ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        a = b;
      }
      r = Value::Bool(ok);
      break;
    }
    case ExprType::kCond:
      if (Eval(*e.kids[0], f).Truthy()) r = Eval(*e.kids[1], f);
      else if (e.kids[2]) r = Eval(*e.kids[2], f);
      else r = Value::Undefined();
      break;
  }
  cur_ = saved;
  return r;
}

Value Interp::EvalBinary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.Str(limits_.max_output_bytes);
    std::string t = b.Str(limits_.max_output_bytes);
    CheckSize(s.size() + t.size());
    Work(s.size() + t.size());
    return Value::Str(s + t);
  }
  if (a.undefined() || b.undefined()) Fail("'" + (a.undefined() ? a.name() : b.name()) + "' is undefined");
  auto type_error = [&]() {
    Fail("unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() + "'");
  };
  if (a.is_number() && b.is_number()) {
    const bool flt = a.kind() == Kind::kFloat || b.kind() == Kind::kFloat;
    const __int128 x = a.i(), y = b.i();
    if (op == "+") return flt ? Value::Float(a.f() + b.f()) : Value::Int(CheckedInt(x + y));
    if (op == "-") return flt ? Value::Float(a.f() - b.f()) : Value::Int(CheckedInt(x - y));
    if (op == "*") return flt ? Value::Float(a.f() * b.f()) : Value::Int(CheckedInt(x * y));
    if (op == "/") {
      if (b.f() == 0) Fail(flt ? "float division by zero" : "division by zero");
      return Value::Float(a.f() / b.f());
    }
    if (op == "//" || op == "%") {
      if (b.f() == 0) Fail(flt ? "float divmod()" : "integer division or modulo by zero");
      if (flt) {
        double m = FloorMod(a.f(), b.f());
        return op == "%" ? Value::Float(m) : Value::Float(std::floor((a.f() - m) / b.f() + 0.5));
      }
      __int128 q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return op == "//" ? Value::Int(CheckedInt(q)) : Value::Int(CheckedInt(x - q * y));
    }
    if (op == "**") {
      if (!flt && b.i() >= 0) {
        __int128 r = 1;
        for (int64_t k = 0; k < b.i(); ++k) {
          r *= x;
          CheckedInt(r);
        }
        return Value::Int(static_cast<int64_t>(r));
      }
      return Value::Float(std::pow(a.f(), b.f()));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      CheckSize(a.s().size() + b.s().size());
      Work(a.s().size() + b.s().size());
      if (a.is_markup() || b.is_markup()) {
        return Value::Markup((a.is_markup() ? a.s() : Escape(a.s())) + (b.is_markup() ? b.s() : Escape(b.s())));
      }
      return Value::Str(a.s() + b.s());
    }
    if (a.is_list() && b.is_list() && !a.is_generator() && !b.is_generator()) {
      if (a.l().size() + b.l().size() > Value::kMaxListLength) {
        Fail("limit exceeded: list length (" + std::to_string(Value::kMaxListLength) + ")");
      }
      Work((a.l().size() + b.l().size()) * 16);
      List l = a.l();
      l.insert(l.end(), b.l().begin(), b.l().end());
      return Value::MakeList(std::move(l));
    }
  }
  if (op == "*" && (a.is_int() || b.is_int())) {
    const Value& seq = a.is_int() ? b : a;
    int64_t n = std::max<int64_t>(0, a.is_int() ? a.i() : b.i());
    // An empty sequence repeated is empty whatever the count: without this, '' * 10**11 would
    // loop 10**11 times appending nothing (the limits below divide by the length; found by
    // fuzz_chat_template).
    if ((seq.is_string() && seq.s().empty()) || (seq.is_list() && seq.l().empty())) n = 0;
    if (seq.is_string()) {
      if (!seq.s().empty() && static_cast<uint64_t>(n) > limits_.max_output_bytes / seq.s().size()) {
        CheckSize(limits_.max_output_bytes + 1);
      }
      Work(seq.s().size() * static_cast<size_t>(n));
      std::string s;
      for (int64_t k = 0; k < n; ++k) s += seq.s();
      return seq.is_markup() ? Value::Markup(std::move(s)) : Value::Str(std::move(s));
    }
    if (seq.is_list()) {
      if (!seq.l().empty() && static_cast<uint64_t>(n) > Value::kMaxListLength / seq.l().size()) {
        Fail("limit exceeded: list length (" + std::to_string(Value::kMaxListLength) + ")");
      }
      Work(seq.l().size() * static_cast<size_t>(n) * 16);
      List l;
      for (int64_t k = 0; k < n; ++k) l.insert(l.end(), seq.l().begin(), seq.l().end());
      return Value::MakeList(std::move(l));
    }
  }
  if (op == "%" && a.is_string()) {
    Args args;
    if (b.is_list()) args.pos = b.l();
    else args.pos.push_back(b);
    return ApplyFilter("format", a, args);
  }
  type_error();
  return Value();
}

// ---- Template ----

struct Template::Impl {
  Body body;
};

namespace {

// jinja2 rejects an unknown filter or test when it compiles the template, except inside an
// `if` statement or a conditional expression (a "soft" frame; loops and macros inside start a
// hard one again), where the error waits until the filter runs.
void CheckNames(const Expr* e, bool soft) {
  if (e == nullptr) return;
  if (e->type == ExprType::kCond) soft = true;
  if (!soft && e->type == ExprType::kFilter && !Interp::HasFilter(e->name)) {
    throw Error("No filter named '" + e->name + "'.", e->line, e->col);
  }
  if (!soft && e->type == ExprType::kTest && !Interp::HasTest(e->name)) {
    throw Error("No test named '" + e->name + "'.", e->line, e->col);
  }
  for (auto& k : e->kids) CheckNames(k.get(), soft);
}

void CheckNames(const Body& b, bool soft) {
  for (auto& s : b) {
    const bool inner_soft = s->type == StmtType::kIf ? true
                            : (s->type == StmtType::kFor || s->type == StmtType::kMacro ||
                               s->type == StmtType::kCallBlock || s->type == StmtType::kFilterBlock ||
                               s->type == StmtType::kSetBlock || s->type == StmtType::kScope)
                                ? false
                                : soft;
    CheckNames(s->expr.get(), s->type == StmtType::kIf ? true : soft);
    CheckNames(s->cond.get(), false);
    CheckNames(s->target.get(), soft);
    for (auto& c : s->conds) CheckNames(c.get(), true);
    for (auto& d : s->defaults) CheckNames(d.get(), soft);
    for (auto& bb : s->bodies) CheckNames(bb, inner_soft);
    CheckNames(s->body, inner_soft);
    CheckNames(s->else_body, inner_soft);
  }
}

}  // namespace

Template::Template(std::string_view source) : impl_(std::make_unique<Impl>()) {
  impl_->body = Parse(source);
  CheckNames(impl_->body, false);
}

Template::~Template() = default;

std::string Template::Render(const Value& vars, const Limits& limits) const {
  Interp in(limits);
  return in.Run(impl_->body, vars);
}

}  // namespace zf::jinja

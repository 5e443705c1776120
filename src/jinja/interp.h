// The Jinja evaluator (internal): executes a statement tree against variables, with limits.
// Builtins (filters, tests, methods, globals) live in builtins.cpp and call back into it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "jinja/ast.h"
#include "jinja/jinja.h"

namespace zf::jinja {

struct Frame : std::enable_shared_from_this<Frame> {
  std::shared_ptr<Frame> parent;
  std::map<std::string, Value> vars;
  Value* Find(const std::string& n) {
    for (Frame* f = this; f; f = f->parent.get()) {
      auto it = f->vars.find(n);
      if (it != f->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using FrameP = std::shared_ptr<Frame>;

class Interp {
 public:
  explicit Interp(const Limits& limits) : limits_(limits) {}
  // Breaks the reference cycles a render can build (a namespace holding itself) so that
  // everything is freed.
  ~Interp();

  std::string Run(const Body& body, const Value& vars);

  // Services for builtins.
  Value GetAttr(const Value& obj, const std::string& name, const Expr* at = nullptr);
  Value GetItem(const Value& obj, const Value& key, const Expr* at = nullptr);
  Value Call(const Value& fn, Args& args);
  Value ApplyFilter(const std::string& name, const Value& subject, Args& args);
  bool ApplyTest(const std::string& name, const Value& subject, Args& args);
  Value CallMethod(const Value& obj, const std::string& name, Args& args);
  void CheckSize(size_t n) const;
  void Step();
  // Charges copying work to the same budget as Step (one step per 256 bytes / 16 list items),
  // so a loop that copies large values cannot run for hours within max_steps iterations.
  void Work(size_t bytes);
  std::vector<Value> Iterate(const Value& v);
  [[noreturn]] void Fail(const std::string& m) const;

  // range, namespace, dict, raise_exception, strftime_now (builtins.cpp).
  void InstallGlobals(Frame* f);
  static bool HasFilter(const std::string& name);
  static bool HasTest(const std::string& name);
  // Methods a value has as attributes (dict.items, str.strip, ...).
  static bool HasMethod(const Value& obj, const std::string& name);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow Exec(const Body& body, const FrameP& f, std::string* out);
  Flow ExecStmt(const Stmt& s, const FrameP& f, std::string* out);
  void ExecFor(const Stmt& s, const FrameP& f, std::string* out);
  void Assign(const Expr& target, const Value& v, const FrameP& f);
  Value Eval(const Expr& e, const FrameP& f);
  Value EvalBinary(const std::string& op, const Value& a, const Value& b);
  Value MakeMacro(const Stmt& s, const FrameP& f);
  void Emit(std::string* out, const std::string& s);
  void EvalArgs(const Expr& e, size_t first, const FrameP& f, Args* args);
  bool Contains(const Value& container, const Value& item);

  Limits limits_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  const Expr* cur_ = nullptr;  // for error positions
  const Stmt* cur_stmt_ = nullptr;
  Value globals_;
  // Frames that macros and call blocks were defined in: kept alive for the whole render, so
  // the macros refer to them without owning them (a frame holds its macros: no cycle).
  std::vector<FrameP> macro_frames_;
  std::vector<Value> namespaces_;  // every namespace() made (InstallGlobals), emptied at the end
};

}  // namespace zf::jinja

// The Jinja syntax tree: expressions and statements with their template positions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace zf::jinja {

struct Expr;
using ExprP = std::unique_ptr<Expr>;

enum class ExprType {
  kConst,    // value
  kName,     // name
  kList,     // kids
  kTuple,    // kids
  kDict,     // kids: key, value, key, value...
  kAttr,     // kids[0].name
  kItem,     // kids[0][kids[1]]
  kSlice,    // kids[0][kids[1]:kids[2]:kids[3]] (null kids for omitted bounds)
  kCall,     // kids[0](kids[1..1+npos), kw...)
  kFilter,   // kids[0] | name(args...)
  kTest,     // kids[0] is [not] name(args...)
  kUnary,    // name = "-", "+", "not"
  kBinary,   // name = operator; kids[0], kids[1]
  kAnd,
  kOr,
  kCompare,  // kids[0] (ops[i] kids[i+1])...
  kCond,     // kids[1] if kids[0] else kids[2] (kids[2] may be null)
};

struct Expr {
  ExprType type;
  int line = 0, col = 0;
  Value value;
  std::string name;
  std::vector<ExprP> kids;
  // Calls, filters, tests: kids after the callee/subject are positional (npos) then keyword
  // arguments named by kw.
  size_t npos = 0;
  std::vector<std::string> kw;
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // kTest
};

struct Stmt;
using StmtP = std::unique_ptr<Stmt>;
using Body = std::vector<StmtP>;

enum class StmtType {
  kText,        // text
  kOutput,      // {{ expr }}
  kIf,          // conds[i] -> bodies[i]; a trailing body without cond is else
  kFor,         // for targets in expr [if cond] body [else else_body]
  kSet,         // set target = expr
  kSetBlock,    // set name %}body{% endset
  kMacro,       // macro name(params=defaults) body
  kCallBlock,   // call(params) expr %}body{% endcall
  kFilterBlock, // filter expr(with subject = body)
  kBreak,
  kContinue,
  kScope,       // body (generation blocks and the like: rendered in place)
};

struct Stmt {
  StmtType type;
  int line = 0, col = 0;
  std::string text;
  ExprP expr;
  ExprP cond;
  ExprP target;
  std::vector<ExprP> conds;
  std::vector<Body> bodies;
  std::vector<std::string> names;  // for targets, macro parameters
  std::vector<ExprP> defaults;     // macro parameter defaults (null where none)
  Body body, else_body;
  bool recursive = false;
};

}  // namespace zf::jinja

// Jinja parser: recursive descent over the lexer's tokens, following jinja2's grammar
// (precedence: ternary < or < and < not < comparison < + - < ~ < * / // % < ** < unary <
// postfix and filters/tests).
#include "jinja/parser.h"

#include <cstdlib>
#include <initializer_list>

#include "jinja/lexer.h"

namespace zf::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Body ParseTemplate() {
    Body b = ParseBody({});
    if (Cur().type != Tok::kEof) Fail("unexpected '" + Cur().text + "'");
    return b;
  }

 private:
  const Token& Cur() const { return t_[p_]; }
  const Token& Peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  void Next() {
    if (p_ + 1 < t_.size()) ++p_;
  }
  [[noreturn]] void Fail(const std::string& m) const { throw Error(m, Cur().line, Cur().col); }
  bool IsOp(const char* op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool IsName(const char* n) const { return Cur().type == Tok::kName && Cur().text == n; }
  void ExpectOp(const char* op) {
    if (!IsOp(op)) Fail(std::string("expected '") + op + "', got " + Describe());
    Next();
  }
  void ExpectName(const char* n) {
    if (!IsName(n)) Fail(std::string("expected '") + n + "', got " + Describe());
    Next();
  }
  std::string TakeName() {
    if (Cur().type != Tok::kName) Fail("expected a name, got " + Describe());
    std::string n = Cur().text;
    Next();
    return n;
  }
  void ExpectBlockEnd() {
    if (Cur().type != Tok::kBlockEnd) Fail("expected end of statement block, got " + Describe());
    Next();
  }
  std::string Describe() const {
    switch (Cur().type) {
      case Tok::kEof: return "end of template";
      case Tok::kBlockEnd: return "end of statement block";
      case Tok::kVarEnd: return "end of print statement";
      case Tok::kString: return "string";
      case Tok::kText: return "template data";
      default: return "'" + Cur().text + "'";
    }
  }

  ExprP Node(ExprType type, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->type = type;
    e->line = at.line;
    e->col = at.col;
    return e;
  }
  StmtP SNode(StmtType type, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->type = type;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  // Statements until `{% <one of ends>`; leaves Cur() at the end keyword.
  Body ParseBody(std::initializer_list<const char*> ends) {
    Body body;
    while (true) {
      const Token& tk = Cur();
      if (tk.type == Tok::kEof) {
        if (ends.size() != 0) Fail(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
        return body;
      }
      if (tk.type == Tok::kText) {
        auto s = SNode(StmtType::kText, tk);
        s->text = tk.text;
        body.push_back(std::move(s));
        Next();
      } else if (tk.type == Tok::kVarBegin) {
        auto s = SNode(StmtType::kOutput, tk);
        Next();
        s->expr = ParseTuple(false, true, false);
        if (Cur().type != Tok::kVarEnd) Fail("expected end of print statement, got " + Describe());
        Next();
        body.push_back(std::move(s));
      } else if (tk.type == Tok::kBlockBegin) {
        Next();
        if (Cur().type != Tok::kName) Fail("tag name expected");
        for (const char* e : ends)
          if (Cur().text == e) return body;
        body.push_back(ParseStatement());
      } else {
        Fail("unexpected " + Describe());
      }
    }
  }

  StmtP ParseStatement() {
    struct Guard {
      explicit Guard(Parser* p) : p(p) {
        if (++p->depth_ > 200) p->Fail("statements nested too deeply");
      }
      ~Guard() { --p->depth_; }
      Parser* p;
    } guard(this);
    const Token at = Cur();
    const std::string& kw = at.text;
    if (kw == "if") return ParseIf();
    if (kw == "for") return ParseFor();
    if (kw == "set") return ParseSet();
    if (kw == "macro") return ParseMacro();
    if (kw == "call") return ParseCallBlock();
    if (kw == "filter") return ParseFilterBlock();
    if (kw == "break" || kw == "continue") {
      if (loop_depth_ == 0) Fail("'" + kw + "' outside of a loop");
      auto s = SNode(kw == "break" ? StmtType::kBreak : StmtType::kContinue, at);
      Next();
      ExpectBlockEnd();
      return s;
    }
    if (kw == "generation") {
      auto s = SNode(StmtType::kScope, at);
      Next();
      ExpectBlockEnd();
      s->body = ParseBody({"endgeneration"});
      Next();
      ExpectBlockEnd();
      return s;
    }
    Fail("Encountered unknown tag '" + kw + "'.");
  }

  StmtP ParseIf() {
    auto s = SNode(StmtType::kIf, Cur());
    Next();
    while (true) {
      s->conds.push_back(ParseTuple(false, false, false));
      ExpectBlockEnd();
      s->bodies.push_back(ParseBody({"elif", "else", "endif"}));
      if (IsName("elif")) {
        Next();
        continue;
      }
      if (IsName("else")) {
        Next();
        ExpectBlockEnd();
        s->bodies.push_back(ParseBody({"endif"}));
      }
      Next();  // endif
      ExpectBlockEnd();
      return s;
    }
  }

  StmtP ParseFor() {
    auto s = SNode(StmtType::kFor, Cur());
    Next();
    bool paren = IsOp("(");
    if (paren) Next();
    s->names.push_back(TakeName());
    while (IsOp(",")) {
      Next();
      if (Cur().type != Tok::kName || IsName("in")) break;
      s->names.push_back(TakeName());
    }
    if (paren) ExpectOp(")");
    ExpectName("in");
    s->expr = ParseTuple(false, false, false);
    if (IsName("if")) {
      Next();
      s->cond = ParseExpression(true);
    }
    if (IsName("recursive")) {
      s->recursive = true;
      Next();
    }
    ExpectBlockEnd();
    ++loop_depth_;
    s->body = ParseBody({"endfor", "else"});
    --loop_depth_;
    if (IsName("else")) {
      Next();
      ExpectBlockEnd();
      s->else_body = ParseBody({"endfor"});
    }
    Next();
    ExpectBlockEnd();
    return s;
  }

  StmtP ParseSet() {
    const Token at = Cur();
    Next();
    ExprP target;
    const Token& nt = Cur();
    std::string first = TakeName();
    if (IsOp(".")) {
      Next();
      target = Node(ExprType::kAttr, nt);
      auto base = Node(ExprType::kName, nt);
      base->name = first;
      target->kids.push_back(std::move(base));
      target->name = TakeName();
    } else if (IsOp(",")) {
      target = Node(ExprType::kTuple, nt);
      auto n0 = Node(ExprType::kName, nt);
      n0->name = first;
      target->kids.push_back(std::move(n0));
      while (IsOp(",")) {
        Next();
        auto n = Node(ExprType::kName, Cur());
        n->name = TakeName();
        target->kids.push_back(std::move(n));
      }
    } else {
      target = Node(ExprType::kName, nt);
      target->name = first;
    }
    if (IsOp("=")) {
      Next();
      auto s = SNode(StmtType::kSet, at);
      s->target = std::move(target);
      s->expr = ParseTuple(false, true, false);
      ExpectBlockEnd();
      return s;
    }
    if (target->type != ExprType::kName) Fail("expected '='");
    auto s = SNode(StmtType::kSetBlock, at);
    s->target = std::move(target);
    if (IsOp("|")) {  // {% set x | filter %}
      auto holder = Node(ExprType::kConst, Cur());
      s->expr = ParseFilterChain(std::move(holder));
    }
    ExpectBlockEnd();
    s->body = ParseBody({"endset"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  void ParseSignature(Stmt* s) {
    ExpectOp("(");
    while (!IsOp(")")) {
      if (!s->names.empty()) ExpectOp(",");
      if (IsOp(")")) break;
      s->names.push_back(TakeName());
      if (IsOp("=")) {
        Next();
        s->defaults.push_back(ParseExpression(true));
      } else {
        s->defaults.push_back(nullptr);
      }
    }
    Next();
  }

  StmtP ParseMacro() {
    auto s = SNode(StmtType::kMacro, Cur());
    Next();
    s->text = TakeName();
    ParseSignature(s.get());
    ExpectBlockEnd();
    int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = ParseBody({"endmacro"});
    loop_depth_ = saved;
    Next();
    ExpectBlockEnd();
    return s;
  }

  StmtP ParseCallBlock() {
    auto s = SNode(StmtType::kCallBlock, Cur());
    Next();
    if (IsOp("(")) ParseSignature(s.get());
    s->expr = ParseExpression(true);
    if (s->expr->type != ExprType::kCall) Fail("expected call");
    ExpectBlockEnd();
    s->body = ParseBody({"endcall"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  StmtP ParseFilterBlock() {
    auto s = SNode(StmtType::kFilterBlock, Cur());
    Next();
    auto holder = Node(ExprType::kConst, Cur());
    // Parse as if preceded by '|'.
    s->expr = ParseFilter(std::move(holder));
    while (IsOp("|")) {
      Next();
      s->expr = ParseFilter(std::move(s->expr));
    }
    ExpectBlockEnd();
    s->body = ParseBody({"endfilter"});
    Next();
    ExpectBlockEnd();
    return s;
  }

  // ---- expressions ----
  ExprP ParseTuple(bool simplified, bool with_condexpr, bool explicit_parens) {
    const Token at = Cur();
    std::vector<ExprP> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) ExpectOp(",");
      if (!items.empty() && IsTupleEnd()) break;
      items.push_back(simplified ? ParsePrimary() : ParseExpression(with_condexpr));
      if (IsOp(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (items.empty()) Fail("expected an expression");
      if (!explicit_parens || true) return std::move(items[0]);
    }
    auto t = Node(ExprType::kTuple, at);
    t->kids = std::move(items);
    return t;
  }

  bool IsTupleEnd() const {
    if (Cur().type == Tok::kVarEnd || Cur().type == Tok::kBlockEnd || Cur().type == Tok::kEof) return true;
    if (IsOp(")")) return true;
    return IsName("in") || IsName("if") || IsName("recursive");
  }

  ExprP ParseExpression(bool with_condexpr) { return with_condexpr ? ParseCondExpr() : ParseOr(); }

  ExprP ParseCondExpr() {
    ExprP e = ParseOr();
    while (IsName("if")) {
      auto c = Node(ExprType::kCond, Cur());
      Next();
      ExprP test = ParseOr();
      ExprP other;
      if (IsName("else")) {
        Next();
        other = ParseCondExpr();
      }
      c->kids.push_back(std::move(test));
      c->kids.push_back(std::move(e));
      c->kids.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprP ParseOr() {
    ExprP l = ParseAnd();
    while (IsName("or")) {
      auto n = Node(ExprType::kOr, Cur());
      Next();
      n->kids.push_back(std::move(l));
      n->kids.push_back(ParseAnd());
      l = std::move(n);
    }
    return l;
  }

  ExprP ParseAnd() {
    ExprP l = ParseNot();
    while (IsName("and")) {
      auto n = Node(ExprType::kAnd, Cur());
      Next();
      n->kids.push_back(std::move(l));
      n->kids.push_back(ParseNot());
      l = std::move(n);
    }
    return l;
  }

  ExprP ParseNot() {
    if (IsName("not")) {
      if (++depth_ > 200) Fail("expression nested too deeply");
      auto n = Node(ExprType::kUnary, Cur());
      n->name = "not";
      Next();
      n->kids.push_back(ParseNot());
      --depth_;
      return n;
    }
    return ParseCompare();
  }

  ExprP ParseCompare() {
    const Token at = Cur();
    ExprP first = ParseMath1();
    ExprP cmp;
    while (true) {
      std::string op;
      if (Cur().type == Tok::kOp && (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" ||
                                     Cur().text == "<=" || Cur().text == ">" || Cur().text == ">=")) {
        op = Cur().text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
        op = "notin";
        Next();
        Next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = Node(ExprType::kCompare, at);
        cmp->kids.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(ParseMath1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprP Binary(const std::string& op, ExprP l, ExprP r, const Token& at) {
    auto n = Node(ExprType::kBinary, at);
    n->name = op;
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  ExprP ParseMath1() {
    ExprP l = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const Token at = Cur();
      Next();
      l = Binary(at.text, std::move(l), ParseConcat(), at);
    }
    return l;
  }

  ExprP ParseConcat() {
    ExprP l = ParseMath2();
    while (IsOp("~")) {
      const Token at = Cur();
      Next();
      l = Binary("~", std::move(l), ParseMath2(), at);
    }
    return l;
  }

  ExprP ParseMath2() {
    ExprP l = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token at = Cur();
      Next();
      l = Binary(at.text, std::move(l), ParsePow(), at);
    }
    return l;
  }

  ExprP ParsePow() {
    ExprP l = ParseUnary(true);
    while (IsOp("**")) {
      const Token at = Cur();
      Next();
      l = Binary("**", std::move(l), ParseUnary(true), at);
    }
    return l;
  }

  ExprP ParseUnary(bool with_filter) {
    if (++depth_ > 200) Fail("expression nested too deeply");
    ExprP n;
    if (IsOp("-") || IsOp("+")) {
      n = Node(ExprType::kUnary, Cur());
      n->name = Cur().text;
      Next();
      n->kids.push_back(ParseUnary(false));
    } else {
      n = ParsePrimary();
    }
    n = ParsePostfix(std::move(n));
    if (with_filter) n = ParseFilterExpr(std::move(n));
    --depth_;
    return n;
  }

  ExprP ParsePrimary() {
    if (++depth_ > 200) Fail("expression nested too deeply");
    const Token at = Cur();
    ExprP n;
    switch (at.type) {
      case Tok::kName: {
        const std::string& s = at.text;
        if (s == "true" || s == "True" || s == "false" || s == "False") {
          n = Node(ExprType::kConst, at);
          n->value = Value::Bool(s[0] == 't' || s[0] == 'T');
        } else if (s == "none" || s == "None") {
          n = Node(ExprType::kConst, at);
          n->value = Value::None();
        } else {
          n = Node(ExprType::kName, at);
          n->name = s;
        }
        Next();
        break;
      }
      case Tok::kString: {
        std::string s;
        while (Cur().type == Tok::kString) {
          s += Cur().text;
          Next();
        }
        n = Node(ExprType::kConst, at);
        n->value = Value::Str(std::move(s));
        break;
      }
      case Tok::kInt: {
        n = Node(ExprType::kConst, at);
        errno = 0;
        long long v = std::strtoll(at.text.c_str(), nullptr, 10);
        if (errno == ERANGE) Fail("integer literal out of range");
        n->value = Value::Int(v);
        Next();
        break;
      }
      case Tok::kFloat:
        n = Node(ExprType::kConst, at);
        n->value = Value::Float(std::strtod(at.text.c_str(), nullptr));
        Next();
        break;
      case Tok::kOp:
        if (at.text == "(") {
          Next();
          if (IsOp(")")) {
            n = Node(ExprType::kTuple, at);
          } else {
            n = ParseTuple(false, true, true);
          }
          ExpectOp(")");
        } else if (at.text == "[") {
          Next();
          n = Node(ExprType::kList, at);
          while (!IsOp("]")) {
            if (!n->kids.empty()) ExpectOp(",");
            if (IsOp("]")) break;
            n->kids.push_back(ParseExpression(true));
          }
          Next();
        } else if (at.text == "{") {
          Next();
          n = Node(ExprType::kDict, at);
          while (!IsOp("}")) {
            if (!n->kids.empty()) ExpectOp(",");
            if (IsOp("}")) break;
            n->kids.push_back(ParseExpression(true));
            ExpectOp(":");
            n->kids.push_back(ParseExpression(true));
          }
          Next();
        } else {
          Fail("unexpected '" + at.text + "'");
        }
        break;
      default:
        Fail("unexpected " + Describe());
    }
    --depth_;
    return n;
  }

  // Postfix nodes (attribute, item, slice, call) report the position where their object starts.
  ExprP ParsePostfix(ExprP n) {
    while (true) {
      Token at = Cur();
      at.line = n->line;
      at.col = n->col;
      if (IsOp(".")) {
        Next();
        if (Cur().type == Tok::kName) {
          auto a = Node(ExprType::kAttr, at);
          a->name = Cur().text;
          a->kids.push_back(std::move(n));
          n = std::move(a);
          Next();
        } else if (Cur().type == Tok::kInt) {
          auto a = Node(ExprType::kItem, at);
          a->kids.push_back(std::move(n));
          auto k = Node(ExprType::kConst, Cur());
          k->value = Value::Int(std::atoll(Cur().text.c_str()));
          a->kids.push_back(std::move(k));
          n = std::move(a);
          Next();
        } else {
          Fail("expected name or number");
        }
      } else if (IsOp("[")) {
        Next();
        n = ParseSubscript(std::move(n), at);
        ExpectOp("]");
      } else if (IsOp("(")) {
        n = ParseCall(std::move(n));
      } else {
        return n;
      }
    }
  }

  ExprP ParseSubscript(ExprP obj, const Token& at) {
    ExprP parts[3];
    int idx = 0;
    bool slice = false;
    while (true) {
      if (IsOp(":")) {
        slice = true;
        if (++idx > 2) Fail("invalid slice");
        Next();
        continue;
      }
      if (IsOp("]")) break;
      if (parts[idx]) Fail("expected ']'");
      parts[idx] = ParseExpression(true);
    }
    if (!slice) {
      if (!parts[0]) Fail("expected subscript expression");
      auto n = Node(ExprType::kItem, at);
      n->kids.push_back(std::move(obj));
      n->kids.push_back(std::move(parts[0]));
      return n;
    }
    auto n = Node(ExprType::kSlice, at);
    n->kids.push_back(std::move(obj));
    for (auto& p : parts) n->kids.push_back(std::move(p));
    return n;
  }

  // '(' args ')' appended to n's kids (n's kids[0] is the callee/subject already).
  void ParseArgs(Expr* n) {
    ExpectOp("(");
    bool first = true;
    while (!IsOp(")")) {
      if (!first) ExpectOp(",");
      first = false;
      if (IsOp(")")) break;
      if (IsOp("*") || IsOp("**")) Fail("*args and **kwargs are not supported");
      if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
        n->kw.push_back(Cur().text);
        Next();
        Next();
        n->kids.push_back(ParseExpression(true));
      } else {
        if (!n->kw.empty()) Fail("positional argument follows keyword argument");
        n->kids.push_back(ParseExpression(true));
        ++n->npos;
      }
    }
    Next();
  }

  ExprP ParseCall(ExprP callee) {
    Token at = Cur();
    at.line = callee->line;
    at.col = callee->col;
    auto n = Node(ExprType::kCall, at);
    n->kids.push_back(std::move(callee));
    ParseArgs(n.get());
    return n;
  }

  ExprP ParseFilter(ExprP subject) {
    auto n = Node(ExprType::kFilter, Cur());
    n->name = TakeName();
    while (IsOp(".")) {
      Next();
      n->name += "." + TakeName();
    }
    n->kids.push_back(std::move(subject));
    if (IsOp("(")) ParseArgs(n.get());
    return n;
  }

  ExprP ParseFilterChain(ExprP n) {
    while (IsOp("|")) {
      Next();
      n = ParseFilter(std::move(n));
    }
    return n;
  }

  ExprP ParseFilterExpr(ExprP n) {
    while (true) {
      if (IsOp("|")) {
        Next();
        n = ParseFilter(std::move(n));
      } else if (IsName("is")) {
        auto t = Node(ExprType::kTest, Cur());
        Next();
        if (IsName("not")) {
          t->negated = true;
          Next();
        }
        t->name = TakeName();
        while (IsOp(".")) {
          Next();
          t->name += "." + TakeName();
        }
        t->kids.push_back(std::move(n));
        const Token& c = Cur();
        if (IsOp("(")) {
          ParseArgs(t.get());
        } else if ((c.type == Tok::kName || c.type == Tok::kString || c.type == Tok::kInt || c.type == Tok::kFloat ||
                    IsOp("[") || IsOp("{")) &&
                   !IsName("else") && !IsName("or") && !IsName("and")) {
          if (IsName("is")) Fail("You cannot chain multiple tests with is");
          t->kids.push_back(ParsePostfix(ParsePrimary()));
          t->npos = 1;
        }
        n = std::move(t);
      } else if (IsOp("(")) {
        n = ParseCall(std::move(n));
      } else {
        return n;
      }
    }
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Body Parse(std::string_view source) { return Parser(Lex(source)).ParseTemplate(); }

}  // namespace zf::jinja

#include "tokenizer/regex_split.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/utf8.h"
#include "tokenizer/unicode.h"

namespace zf::tok {

namespace {

constexpr size_t kNoMatch = static_cast<size_t>(-1);
constexpr int kMaxDepth = 200;         // nesting of groups in a pattern
constexpr int kMaxRepeat = 1000;       // largest n, m in {n,m}
constexpr size_t kMaxProgram = 200000;  // instructions after expanding counted repeats

bool IsWordChar(uint32_t cp) {
  return cp == '_' || (CodepointFlags(cp) & (kCpLetter | kCpNumber | kCpMark)) != 0;
}

struct Node {
  enum Kind { kEmpty, kChar, kClass, kAny, kBegin, kEnd, kWordB, kNotWordB, kConcat, kAlt, kRepeat, kLook };
  Kind kind = kEmpty;
  uint32_t cp = 0;     // kChar
  bool icase = false;  // kChar
  uint32_t cls = 0;    // kClass
  int min = 0, max = 0;  // kRepeat; max < 0: unbounded
  bool greedy = true;    // kRepeat
  bool negative = false;  // kLook
  std::vector<std::unique_ptr<Node>> kids;
};

std::unique_ptr<Node> MakeNode(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

void NormalizeRanges(std::vector<std::pair<uint32_t, uint32_t>>* r) {
  std::sort(r->begin(), r->end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& x : *r) {
    if (!out.empty() && x.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  *r = std::move(out);
}

}  // namespace

bool SplitRegex::CharClass::Contains(uint32_t cp) const {
  auto member = [this](uint32_t c) {
    // Last range with first <= c.
    auto it = std::upper_bound(ranges.begin(), ranges.end(), c,
                               [](uint32_t v, const std::pair<uint32_t, uint32_t>& r) { return v < r.first; });
    if (it != ranges.begin() && c <= (it - 1)->second) return true;
    uint16_t f = CodepointFlags(c);
    if (f & flags_any) return true;
    for (uint16_t nf : not_flags) {
      if (!(f & nf)) return true;
    }
    if (word && IsWordChar(c)) return true;
    if (not_word && !IsWordChar(c)) return true;
    return false;
  };
  bool m = member(cp);
  if (!m && icase) {
    uint32_t lower = ToLower(cp);
    if (lower != cp) m = member(lower);
  }
  return m != negated;
}

// ---------------------------------------------------------------------------------------------
// Parser: pattern -> AST -> program.

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, SplitRegex* re) : pattern_(pattern), re_(re) {}

  Status Run() {
    size_t bad = 0;
    if (!IsValidUtf8(pattern_, &bad)) {
      return InvalidArgument("regex: invalid UTF-8 in pattern at byte " + std::to_string(bad));
    }
    DecodeUtf8(pattern_, &cps_, &offsets_);
    std::unique_ptr<Node> root;
    ZF_RETURN_IF_ERROR(ParseAlt(false, 0, &root));
    if (pos_ < cps_.size()) {
      // Only an unbalanced ')' stops ParseAlt before the end.
      return Error(Code::kInvalidArgument, "unbalanced ')'");
    }
    ZF_RETURN_IF_ERROR(Emit(*root));
    re_->prog_.push_back({SplitRegex::Op::kMatch});
    if (re_->prog_.size() > kMaxProgram) return Error(Code::kUnsupported, "pattern too large");
    return Status::Ok();
  }

 private:
  using Op = SplitRegex::Op;

  Status Error(Code code, const std::string& what) const {
    size_t byte = offsets_.empty() ? 0 : offsets_[std::min(pos_, offsets_.size() - 1)];
    return Status(code, "regex: " + what + " at byte " + std::to_string(byte) + " of pattern '" +
                            std::string(pattern_) + "'");
  }
  Status Unsup(const std::string& what) const { return Error(Code::kUnsupported, "unsupported " + what); }

  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFFu; }

  // alternation := concat ('|' concat)*
  Status ParseAlt(bool icase, int depth, std::unique_ptr<Node>* out) {
    if (depth > kMaxDepth) return Unsup("nesting depth");
    auto alt = MakeNode(Node::kAlt);
    for (;;) {
      std::unique_ptr<Node> c;
      ZF_RETURN_IF_ERROR(ParseConcat(icase, depth, &c));
      alt->kids.push_back(std::move(c));
      if (Peek() != '|') break;
      ++pos_;
    }
    *out = alt->kids.size() == 1 ? std::move(alt->kids[0]) : std::move(alt);
    return Status::Ok();
  }

  // Tries to read {n}, {n,}, {n,m} or {,m} at pos_; false (pos_ unchanged) if it is not one.
  bool ParseBraces(int* min, int* max, bool* too_big) {
    size_t p = pos_ + 1;
    auto number = [&](long* v) {
      size_t s = p;
      *v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
        *v = std::min<long>(*v * 10 + (cps_[p] - '0'), 1L << 30);
        ++p;
      }
      return p > s;
    };
    long lo = 0, hi = 0;
    bool has_lo = number(&lo);
    bool has_hi = false;
    bool comma = false;
    if (p < cps_.size() && cps_[p] == ',') {
      comma = true;
      ++p;
      has_hi = number(&hi);
    }
    if (p >= cps_.size() || cps_[p] != '}') return false;
    if (!has_lo && !(comma && has_hi)) return false;
    *min = static_cast<int>(lo);
    *max = comma ? (has_hi ? static_cast<int>(hi) : -1) : static_cast<int>(lo);
    *too_big = lo > kMaxRepeat || hi > kMaxRepeat;
    pos_ = p + 1;
    return true;
  }

  bool AtQuantifier() {
    uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    size_t save = pos_;
    int a, b;
    bool big;
    bool q = ParseBraces(&a, &b, &big);
    pos_ = save;
    return q;
  }

  // concat := (atom quantifier?)*
  Status ParseConcat(bool icase, int depth, std::unique_ptr<Node>* out) {
    auto cat = MakeNode(Node::kConcat);
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (AtQuantifier()) return Error(Code::kInvalidArgument, "nothing to repeat");
      std::unique_ptr<Node> atom;
      ZF_RETURN_IF_ERROR(ParseAtom(icase, depth, &atom));
      if (AtQuantifier()) {
        int min = 0, max = -1;
        size_t qpos = pos_;
        uint32_t c = Peek();
        if (c == '*') {
          ++pos_;
        } else if (c == '+') {
          min = 1;
          ++pos_;
        } else if (c == '?') {
          max = 1;
          ++pos_;
        } else {
          bool big = false;
          ParseBraces(&min, &max, &big);
          if (big) {
            pos_ = qpos;
            return Unsup("repeat count above " + std::to_string(kMaxRepeat));
          }
          if (max >= 0 && max < min) {
            pos_ = qpos;
            return Error(Code::kInvalidArgument, "min repeat greater than max repeat");
          }
        }
        bool greedy = true;
        if (Peek() == '?') {
          greedy = false;
          ++pos_;
        } else if (Peek() == '+') {
          return Unsup("possessive quantifier");
        }
        if (AtQuantifier()) return Error(Code::kInvalidArgument, "multiple repeat");
        auto rep = MakeNode(Node::kRepeat);
        rep->min = min;
        rep->max = max;
        rep->greedy = greedy;
        rep->kids.push_back(std::move(atom));
        atom = std::move(rep);
      }
      cat->kids.push_back(std::move(atom));
    }
    if (cat->kids.size() == 1) {
      *out = std::move(cat->kids[0]);
    } else if (cat->kids.empty()) {
      *out = MakeNode(Node::kEmpty);
    } else {
      *out = std::move(cat);
    }
    return Status::Ok();
  }

  Status ParseAtom(bool icase, int depth, std::unique_ptr<Node>* out) {
    uint32_t c = Peek();
    switch (c) {
      case '(':
        return ParseGroup(icase, depth, out);
      case '[':
        return ParseClass(icase, out);
      case '.':
        ++pos_;
        *out = MakeNode(Node::kAny);
        return Status::Ok();
      case '^':
        ++pos_;
        *out = MakeNode(Node::kBegin);
        return Status::Ok();
      case '$':
        ++pos_;
        *out = MakeNode(Node::kEnd);
        return Status::Ok();
      case '\\': {
        Escape e;
        ZF_RETURN_IF_ERROR(ParseEscape(false, &e));
        if (e.kind == Escape::kAssert) {
          *out = MakeNode(e.assert_kind);
        } else if (e.kind == Escape::kChar) {
          *out = CharNode(e.cp, icase);
        } else {
          SplitRegex::CharClass cls;
          cls.icase = icase;
          AddSet(e, &cls);
          *out = ClassNode(std::move(cls));
        }
        return Status::Ok();
      }
      default:
        ++pos_;
        *out = CharNode(c, icase);
        return Status::Ok();
    }
  }

  std::unique_ptr<Node> CharNode(uint32_t cp, bool icase) {
    auto n = MakeNode(Node::kChar);
    n->icase = icase;
    n->cp = icase ? ToLower(cp) : cp;
    return n;
  }

  std::unique_ptr<Node> ClassNode(SplitRegex::CharClass cls) {
    auto n = MakeNode(Node::kClass);
    n->cls = static_cast<uint32_t>(re_->classes_.size());
    re_->classes_.push_back(std::move(cls));
    return n;
  }

  Status ParseGroup(bool icase, int depth, std::unique_ptr<Node>* out) {
    size_t open = pos_;
    ++pos_;  // '('
    bool look = false, negative = false;
    if (Peek() == '?') {
      uint32_t k = Peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '=' || k == '!') {
        look = true;
        negative = k == '!';
        pos_ += 2;
      } else if (k == 'i' && Peek(2) == ':') {
        icase = true;
        pos_ += 3;
      } else {
        uint32_t k2 = Peek(2);
        pos_ = open;
        if (k == '<' && (k2 == '=' || k2 == '!')) return Unsup("lookbehind");
        if (k == '<' || k == 'P' || k == '\'') return Unsup("named group");
        if (k == '>') return Unsup("atomic group");
        if (k == '#') return Unsup("comment group");
        if (k == '(') return Unsup("conditional group");
        return Unsup("group flags (only (?:...), (?i:...), (?=...), (?!...))");
      }
    }
    std::unique_ptr<Node> body;
    ZF_RETURN_IF_ERROR(ParseAlt(icase, depth + 1, &body));
    if (Peek() != ')') {
      pos_ = open;
      return Error(Code::kInvalidArgument, "missing ')'");
    }
    ++pos_;
    if (look) {
      auto n = MakeNode(Node::kLook);
      n->negative = negative;
      n->kids.push_back(std::move(body));
      *out = std::move(n);
    } else {
      *out = std::move(body);
    }
    return Status::Ok();
  }

  struct Escape {
    enum Kind { kChar, kSet, kAssert } kind = kChar;
    uint32_t cp = 0;
    // kSet: one of
    uint16_t flags = 0;      // \p{X}
    uint16_t not_flags = 0;  // \P{X}, \S
    bool word = false, not_word = false;
    bool digit = false, not_digit = false;
    Node::Kind assert_kind = Node::kEmpty;
  };

  static void AddSet(const Escape& e, SplitRegex::CharClass* cls) {
    cls->flags_any |= e.flags;
    if (e.not_flags) cls->not_flags.push_back(e.not_flags);
    if (e.word) cls->word = true;
    if (e.not_word) cls->not_word = true;
    if (e.digit) cls->ranges.push_back({'0', '9'});
    if (e.not_digit) {
      cls->ranges.push_back({0, '0' - 1});
      cls->ranges.push_back({'9' + 1, 0x10FFFF});
    }
  }

  Status ParseHex(size_t min_digits, size_t max_digits, bool braced, uint32_t* cp) {
    uint32_t v = 0;
    size_t n = 0;
    if (braced) ++pos_;
    while (n < max_digits && !AtEnd()) {
      uint32_t d = Peek();
      int x = d >= '0' && d <= '9' ? int(d - '0') : d >= 'a' && d <= 'f' ? int(d - 'a' + 10)
                                                : d >= 'A' && d <= 'F' ? int(d - 'A' + 10) : -1;
      if (x < 0) break;
      v = v * 16 + uint32_t(x);
      ++n;
      ++pos_;
    }
    if (braced) {
      if (Peek() != '}') return Error(Code::kInvalidArgument, "bad \\x{...} escape");
      ++pos_;
    }
    if (n < min_digits || v > 0x10FFFF) return Error(Code::kInvalidArgument, "bad hex escape");
    *cp = v;
    return Status::Ok();
  }

  // At '\\'. Reads one escape.
  Status ParseEscape(bool in_class, Escape* e) {
    size_t start = pos_;
    ++pos_;
    if (AtEnd()) return Error(Code::kInvalidArgument, "trailing backslash");
    uint32_t c = Peek();
    ++pos_;
    e->kind = Escape::kChar;
    switch (c) {
      case 'n': e->cp = '\n'; return Status::Ok();
      case 'r': e->cp = '\r'; return Status::Ok();
      case 't': e->cp = '\t'; return Status::Ok();
      case 'f': e->cp = '\f'; return Status::Ok();
      case 'v': e->cp = '\v'; return Status::Ok();
      case 'a': e->cp = 0x07; return Status::Ok();
      case 'e': e->cp = 0x1B; return Status::Ok();
      case '0':
        if (Peek() >= '0' && Peek() <= '7') {
          pos_ = start;
          return Unsup("octal escape");
        }
        e->cp = 0;
        return Status::Ok();
      case 'x':
        return Peek() == '{' ? ParseHex(1, 8, true, &e->cp) : ParseHex(2, 2, false, &e->cp);
      case 'u':
        return ParseHex(4, 4, false, &e->cp);
      case 'U':
        return ParseHex(8, 8, false, &e->cp);
      case 's': e->kind = Escape::kSet; e->flags = kCpWhitespace; return Status::Ok();
      case 'S': e->kind = Escape::kSet; e->not_flags = kCpWhitespace; return Status::Ok();
      case 'd': e->kind = Escape::kSet; e->digit = true; return Status::Ok();
      case 'D': e->kind = Escape::kSet; e->not_digit = true; return Status::Ok();
      case 'w': e->kind = Escape::kSet; e->word = true; return Status::Ok();
      case 'W': e->kind = Escape::kSet; e->not_word = true; return Status::Ok();
      case 'p':
      case 'P': {
        uint32_t name = 0;
        if (Peek() == '{') {
          if (Peek(2) == '}') {
            name = Peek(1);
            pos_ += 3;
          } else {
            pos_ = start;
            return Unsup("unicode property (only \\p{L} \\p{N} \\p{P} \\p{S} \\p{M} \\p{Z} \\p{C})");
          }
        } else {
          name = Peek();
          ++pos_;
        }
        uint16_t f = 0;
        switch (name) {
          case 'L': f = kCpLetter; break;
          case 'N': f = kCpNumber; break;
          case 'P': f = kCpPunctuation; break;
          case 'S': f = kCpSymbol; break;
          case 'M': f = kCpMark; break;
          case 'Z': f = kCpSeparator; break;
          case 'C': f = kCpControl | kCpUndefined; break;
          default:
            pos_ = start;
            return Unsup("unicode property (only \\p{L} \\p{N} \\p{P} \\p{S} \\p{M} \\p{Z} \\p{C})");
        }
        e->kind = Escape::kSet;
        if (c == 'p') e->flags = f; else e->not_flags = f;
        return Status::Ok();
      }
      case 'b':
        if (in_class) { e->cp = 0x08; return Status::Ok(); }
        e->kind = Escape::kAssert; e->assert_kind = Node::kWordB; return Status::Ok();
      case 'B':
        if (in_class) break;
        e->kind = Escape::kAssert; e->assert_kind = Node::kNotWordB; return Status::Ok();
      case 'A':
        if (in_class) break;
        e->kind = Escape::kAssert; e->assert_kind = Node::kBegin; return Status::Ok();
      case 'z':
      case 'Z':
        if (in_class) break;
        e->kind = Escape::kAssert; e->assert_kind = Node::kEnd; return Status::Ok();
      default:
        if (c >= '1' && c <= '9') {
          pos_ = start;
          return Unsup("backreference");
        }
        if (c < 0x80 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) break;
        e->cp = c;  // escaped metacharacter or any other non-alphanumeric codepoint
        return Status::Ok();
    }
    pos_ = start;
    return Unsup(std::string("escape \\") + static_cast<char>(c));
  }

  Status ParseClass(bool icase, std::unique_ptr<Node>* out) {
    size_t open = pos_;
    ++pos_;  // '['
    SplitRegex::CharClass cls;
    cls.icase = icase;
    if (Peek() == '^') {
      cls.negated = true;
      ++pos_;
    }
    bool first = true;
    for (;;) {
      if (AtEnd()) {
        pos_ = open;
        return Error(Code::kInvalidArgument, "missing ']'");
      }
      uint32_t c = Peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (c == '[' && (Peek(1) == ':' || Peek(1) == '=' || Peek(1) == '.')) return Unsup("POSIX class");
      // One item: a set escape or a single codepoint, possibly the start of a range.
      uint32_t lo;
      if (c == '\\') {
        Escape e;
        ZF_RETURN_IF_ERROR(ParseEscape(true, &e));
        if (e.kind == Escape::kSet) {
          AddSet(e, &cls);
          continue;
        }
        lo = e.cp;
      } else {
        lo = c;
        ++pos_;
      }
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0xFFFFFFFFu) {
        size_t dash = pos_;
        ++pos_;
        if (Peek() == '\\') {
          Escape e;
          ZF_RETURN_IF_ERROR(ParseEscape(true, &e));
          if (e.kind == Escape::kSet) {
            pos_ = dash;
            return Error(Code::kInvalidArgument, "bad character range");
          }
          hi = e.cp;
        } else {
          hi = Peek();
          ++pos_;
        }
        if (hi < lo) {
          pos_ = dash;
          return Error(Code::kInvalidArgument, "bad character range");
        }
      }
      cls.ranges.push_back({lo, hi});
    }
    NormalizeRanges(&cls.ranges);
    if (icase) {
      // Also accept the lowercase forms of members; Contains() tests ToLower(input) too.
      std::vector<std::pair<uint32_t, uint32_t>> extra;
      for (const auto& r : cls.ranges) {
        for (uint32_t x = r.first; x <= r.second && x < 0x110000; ++x) {
          uint32_t l = ToLower(x);
          if (l != x) extra.push_back({l, l});
        }
      }
      cls.ranges.insert(cls.ranges.end(), extra.begin(), extra.end());
      NormalizeRanges(&cls.ranges);
    }
    *out = ClassNode(std::move(cls));
    return Status::Ok();
  }

  // ---- code generation ----

  size_t Add(Op op, uint32_t a = 0, uint32_t b = 0) {
    re_->prog_.push_back({op, a, b, 0});
    return re_->prog_.size() - 1;
  }
  size_t AddSplit() {
    size_t pc = Add(Op::kSplit);
    re_->prog_[pc].c = re_->num_slots_++;
    return pc;
  }
  uint32_t Here() const { return static_cast<uint32_t>(re_->prog_.size()); }

  Status Emit(const Node& n) {
    if (re_->prog_.size() > kMaxProgram) return Error(Code::kUnsupported, "pattern too large");
    auto& prog = re_->prog_;
    switch (n.kind) {
      case Node::kEmpty:
        return Status::Ok();
      case Node::kChar:
        Add(n.icase ? Op::kCharI : Op::kChar, n.cp);
        return Status::Ok();
      case Node::kClass:
        Add(Op::kClass, n.cls);
        return Status::Ok();
      case Node::kAny: Add(Op::kAny); return Status::Ok();
      case Node::kBegin: Add(Op::kBegin); return Status::Ok();
      case Node::kEnd: Add(Op::kEnd); return Status::Ok();
      case Node::kWordB: Add(Op::kWordB); return Status::Ok();
      case Node::kNotWordB: Add(Op::kNotWordB); return Status::Ok();
      case Node::kConcat:
        for (const auto& k : n.kids) ZF_RETURN_IF_ERROR(Emit(*k));
        return Status::Ok();
      case Node::kAlt: {
        std::vector<size_t> jumps;
        for (size_t i = 0; i + 1 < n.kids.size(); ++i) {
          size_t split = AddSplit();
          prog[split].a = Here();
          ZF_RETURN_IF_ERROR(Emit(*n.kids[i]));
          jumps.push_back(Add(Op::kJmp));
          prog[split].b = Here();
        }
        ZF_RETURN_IF_ERROR(Emit(*n.kids.back()));
        for (size_t j : jumps) prog[j].a = Here();
        return Status::Ok();
      }
      case Node::kRepeat: {
        const Node& body = *n.kids[0];
        for (int i = 0; i < n.min; ++i) ZF_RETURN_IF_ERROR(Emit(body));
        if (n.max < 0) {
          // L: split(body, out) ; body ; jmp L ; out:
          size_t split = AddSplit();
          ZF_RETURN_IF_ERROR(Emit(body));
          Add(Op::kJmp, static_cast<uint32_t>(split));
          uint32_t out = Here();
          prog[split].a = n.greedy ? static_cast<uint32_t>(split + 1) : out;
          prog[split].b = n.greedy ? out : static_cast<uint32_t>(split + 1);
        } else {
          // (body (body (...)?)?)?
          std::vector<size_t> splits;
          for (int i = n.min; i < n.max; ++i) {
            splits.push_back(AddSplit());
            ZF_RETURN_IF_ERROR(Emit(body));
          }
          uint32_t out = Here();
          for (size_t s : splits) {
            prog[s].a = n.greedy ? static_cast<uint32_t>(s + 1) : out;
            prog[s].b = n.greedy ? out : static_cast<uint32_t>(s + 1);
          }
        }
        return Status::Ok();
      }
      case Node::kLook: {
        // look(body=pc+2) ; jmp out ; body ; lookok ; out:
        size_t look = Add(Op::kLook, 0, n.negative ? 1 : 0);
        size_t jmp = Add(Op::kJmp);
        prog[look].a = Here();
        ZF_RETURN_IF_ERROR(Emit(*n.kids[0]));
        Add(Op::kLookOk);
        prog[jmp].a = Here();
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  std::string_view pattern_;
  SplitRegex* re_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;
  size_t pos_ = 0;
};

Status SplitRegex::Compile(std::string_view pattern, std::unique_ptr<SplitRegex>* out) {
  std::unique_ptr<SplitRegex> re(new SplitRegex());
  RegexCompiler c(pattern, re.get());
  ZF_RETURN_IF_ERROR(c.Run());
  *out = std::move(re);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Matcher: backtracking over an explicit stack, with a (split instruction, position) visited
// bitmap. A visited state either failed already or lies on the path to the match being
// returned, so it never has to be explored twice: matching is O(program * input) and loops
// whose body can match empty terminate.

namespace {

// Visited bits for (slot, position), allocated lazily in blocks of positions so memory follows
// the window the matcher actually touches.
class VisitSet {
 public:
  VisitSet(size_t slots, size_t origin) : slots_(slots), origin_(origin), words_((kBlock * slots + 63) / 64) {}

  // True if (slot, pos) was already visited; marks it.
  bool TestAndSet(uint32_t slot, size_t pos) {
    size_t rel = pos - origin_;
    size_t bi = rel / kBlock;
    if (bi >= blocks_.size()) blocks_.resize(bi + 1);
    auto& b = blocks_[bi];
    if (!b) b.reset(new uint64_t[words_]());
    size_t bit = (rel % kBlock) * slots_ + slot;
    uint64_t mask = uint64_t{1} << (bit & 63);
    if (b[bit >> 6] & mask) return true;
    b[bit >> 6] |= mask;
    return false;
  }

  // Forgets every state at positions [lo, hi].
  void Clear(size_t lo, size_t hi) {
    for (size_t p = lo; p <= hi;) {
      size_t rel = p - origin_;
      size_t bi = rel / kBlock;
      size_t block_end = origin_ + (bi + 1) * kBlock;  // first position of the next block
      size_t stop = std::min(hi + 1, block_end);
      if (bi < blocks_.size() && blocks_[bi]) {
        ClearBits(blocks_[bi].get(), (rel % kBlock) * slots_, (stop - origin_ - bi * kBlock) * slots_);
      }
      p = stop;
    }
  }

  // Frees blocks that lie entirely before pos (never visited again).
  void ReleaseBelow(size_t pos) {
    size_t full = (pos - origin_) / kBlock;
    for (size_t i = released_; i < full && i < blocks_.size(); ++i) blocks_[i].reset();
    released_ = std::max(released_, full);
  }

 private:
  static constexpr size_t kBlock = 256;

  static void ClearBits(uint64_t* w, size_t from, size_t to) {
    while (from < to && (from & 63)) {
      w[from >> 6] &= ~(uint64_t{1} << (from & 63));
      ++from;
    }
    while (from + 64 <= to) {
      w[from >> 6] = 0;
      from += 64;
    }
    while (from < to) {
      w[from >> 6] &= ~(uint64_t{1} << (from & 63));
      ++from;
    }
  }

  size_t slots_;
  size_t origin_;
  size_t words_;
  size_t released_ = 0;
  std::vector<std::unique_ptr<uint64_t[]>> blocks_;
};

}  // namespace

class RegexMatcher {
 public:
  RegexMatcher(const SplitRegex& re, const uint32_t* cps, size_t begin, size_t end)
      : re_(re), cps_(cps), begin_(begin), end_(end) {}

  struct Frame {
    uint32_t pc;
    size_t pos;
  };

  // Runs from (pc, pos). In the main program, returns the end of the first match (by priority)
  // that is longer than `start`; in a lookahead body, the position of the first kLookOk.
  // kNoMatch if none.
  size_t Exec(uint32_t pc0, size_t pos0, size_t start, VisitSet* visit, std::vector<Frame>* stack) const {
    using Op = SplitRegex::Op;
    const SplitRegex::Inst* prog = re_.prog_.data();
    stack->clear();
    stack->push_back({pc0, pos0});
    while (!stack->empty()) {
      uint32_t pc = stack->back().pc;
      size_t pos = stack->back().pos;
      stack->pop_back();
      for (;;) {
        const SplitRegex::Inst& in = prog[pc];
        bool ok = true;
        switch (in.op) {
          case Op::kChar:
            ok = pos < end_ && cps_[pos] == in.a;
            ++pos;
            ++pc;
            break;
          case Op::kCharI:
            ok = pos < end_ && ToLower(cps_[pos]) == in.a;
            ++pos;
            ++pc;
            break;
          case Op::kClass:
            ok = pos < end_ && re_.classes_[in.a].Contains(cps_[pos]);
            ++pos;
            ++pc;
            break;
          case Op::kAny:
            ok = pos < end_ && cps_[pos] != '\n';
            ++pos;
            ++pc;
            break;
          case Op::kSplit:
            if (visit->TestAndSet(in.c, pos)) {
              ok = false;
            } else {
              stack->push_back({in.b, pos});
              pc = in.a;
            }
            break;
          case Op::kJmp:
            pc = in.a;
            break;
          case Op::kBegin:
            ok = pos == begin_;
            ++pc;
            break;
          case Op::kEnd:
            ok = pos == end_;
            ++pc;
            break;
          case Op::kWordB:
          case Op::kNotWordB: {
            bool before = pos > begin_ && IsWordChar(cps_[pos - 1]);
            bool after = pos < end_ && IsWordChar(cps_[pos]);
            ok = (before != after) == (in.op == Op::kWordB);
            ++pc;
            break;
          }
          case Op::kLook: {
            // Lookaheads are atomic: run the body on its own stack and visited set.
            VisitSet sub_visit(re_.num_slots_, pos);
            std::vector<Frame> sub_stack;
            bool found = Exec(in.a, pos, pos, &sub_visit, &sub_stack) != kNoMatch;
            ok = found != (in.b != 0);
            ++pc;
            break;
          }
          case Op::kLookOk:
            return pos;
          case Op::kMatch:
            if (pos > start) return pos;
            ok = false;
            break;
        }
        if (!ok) break;
      }
    }
    return kNoMatch;
  }

 private:
  const SplitRegex& re_;
  const uint32_t* cps_;
  size_t begin_, end_;
};

void SplitRegex::FindAll(const uint32_t* cps, size_t begin, size_t end,
                         std::vector<std::pair<size_t, size_t>>* matches) const {
  if (begin >= end) return;
  RegexMatcher m(*this, cps, begin, end);
  VisitSet visit(num_slots_, begin);
  std::vector<RegexMatcher::Frame> stack;
  size_t p = begin;
  while (p < end) {
    size_t e = m.Exec(0, p, p, &visit, &stack);
    if (e == kNoMatch) {
      ++p;
    } else {
      matches->push_back({p, e});
      // States on the path to this match (positions p..e) did not fail: forget them.
      visit.Clear(p, e);
      p = e;
    }
    visit.ReleaseBelow(p);
  }
}

std::vector<size_t> SplitSegments(const std::vector<uint32_t>& cps, const std::vector<size_t>& bounds,
                                  const SplitRegex& re) {
  std::vector<size_t> out;
  out.reserve(bounds.size());
  std::vector<std::pair<size_t, size_t>> matches;
  size_t begin = 0;
  for (size_t end : bounds) {
    matches.clear();
    re.FindAll(cps.data(), begin, end, &matches);
    size_t last = begin;
    for (const auto& mt : matches) {
      if (mt.first > last) out.push_back(mt.first);
      out.push_back(mt.second);
      last = mt.second;
    }
    if (last < end) out.push_back(end);
    begin = end;
  }
  return out;
}

std::vector<size_t> SplitWithRegexes(const std::vector<uint32_t>& cps,
                                     const std::vector<const SplitRegex*>& regexes) {
  std::vector<size_t> bounds;
  if (cps.empty()) return bounds;
  bounds.push_back(cps.size());
  for (const SplitRegex* re : regexes) bounds = SplitSegments(cps, bounds, *re);
  return bounds;
}

}  // namespace zf::tok

// Jinja lexer (jinja2 3.x rules: data, {{ }}, {% %}, {# #}, raw blocks, whitespace control).
#include "jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "jinja/text.h"
#include "jinja/value.h"

namespace zf::jinja {
namespace {

class Lexer {
 public:
  explicit Lexer(std::string_view src) {
    // Newlines normalized to \n; one trailing newline dropped (keep_trailing_newline=False).
    src_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        src_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        src_ += src[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_start_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_start_.push_back(i + 1);
  }

  std::vector<Token> Run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t start = FindTagStart(pos);
      std::string text = src_.substr(pos, start - pos);
      if (start == src_.size()) {
        Emit(Tok::kText, text, pos);
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'
      size_t p = start + 2;
      char ctl = p < src_.size() ? src_[p] : 0;
      if (ctl == '-') {
        text = RStripAll(text);
        ++p;
      } else if (ctl == '+') {
        ++p;
      } else if (kind != '{') {  // lstrip_blocks for block and comment tags
        size_t l = text.rfind('\n');
        size_t l_pos = l == std::string::npos ? 0 : l + 1;
        if (l_pos > 0 || pos == 0 || src_[pos - 1] == '\n') {
          bool blank = true;
          for (size_t k = l_pos; k < text.size(); ++k)
            if (text[k] != ' ' && text[k] != '\t') blank = false;
          if (blank) text.resize(l_pos);
        }
      }
      if (!text.empty()) Emit(Tok::kText, text, pos);
      if (kind == '#') {
        pos = SkipComment(p, start);
        continue;
      }
      if (kind == '%' && TryRaw(p, start, &pos)) continue;
      Emit(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, "", start);
      pos = LexTag(p, kind == '{');
    }
    Emit(Tok::kEof, "", src_.size());
    return std::move(toks_);
  }

 private:
  size_t FindTagStart(size_t pos) const {
    for (size_t i = pos; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  static std::string RStripAll(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  }

  void Pos(size_t off, int* line, int* col) const {
    size_t lo = 0, hi = line_start_.size();
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (line_start_[mid] <= off) lo = mid;
      else hi = mid;
    }
    *line = static_cast<int>(lo + 1);
    *col = static_cast<int>(off - line_start_[lo] + 1);
  }

  [[noreturn]] void Fail(const std::string& m, size_t off) const {
    int l, c;
    Pos(off, &l, &c);
    throw Error(m, l, c);
  }

  void Emit(Tok t, std::string text, size_t off) {
    int l, c;
    Pos(off, &l, &c);
    toks_.push_back({t, std::move(text), l, c});
  }

  // After a tag end: `-X}` strips all following whitespace; a block or comment end eats one
  // newline (trim_blocks).
  size_t AfterEnd(size_t p, bool minus, bool trim) const {
    if (minus) {
      while (p < src_.size() && std::isspace(static_cast<unsigned char>(src_[p]))) ++p;
    } else if (trim && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    return p;
  }

  size_t SkipComment(size_t p, size_t start) {
    size_t e = src_.find("#}", p);
    if (e == std::string::npos) Fail("missing end of comment tag", start);
    bool minus = e > p && src_[e - 1] == '-';
    return AfterEnd(e + 2, minus, true);
  }

  // {% raw %}...{% endraw %}: the body is text.
  bool TryRaw(size_t p, size_t start, size_t* pos) {
    size_t q = p;
    while (q < src_.size() && std::isspace(static_cast<unsigned char>(src_[q]))) ++q;
    if (src_.compare(q, 3, "raw") != 0) return false;
    q += 3;
    while (q < src_.size() && std::isspace(static_cast<unsigned char>(src_[q]))) ++q;
    bool minus = false;
    if (q < src_.size() && src_[q] == '-') {
      minus = true;
      ++q;
    }
    if (src_.compare(q, 2, "%}") != 0) return false;
    size_t body = AfterEnd(q + 2, minus, true);
    // find {%[-+]? endraw [-]?%}
    for (size_t s = src_.find("{%", body); s != std::string::npos; s = src_.find("{%", s + 2)) {
      size_t r = s + 2;
      bool lminus = false;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) lminus = src_[r++] == '-';
      while (r < src_.size() && std::isspace(static_cast<unsigned char>(src_[r]))) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && std::isspace(static_cast<unsigned char>(src_[r]))) ++r;
      bool rminus = false;
      if (r < src_.size() && src_[r] == '-') {
        rminus = true;
        ++r;
      }
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, s - body);
      if (lminus) text = RStripAll(text);
      else {
        size_t l = text.rfind('\n');
        size_t l_pos = l == std::string::npos ? 0 : l + 1;
        if (l_pos > 0 || body == 0 || src_[body - 1] == '\n') {
          bool blank = true;
          for (size_t k = l_pos; k < text.size(); ++k)
            if (text[k] != ' ' && text[k] != '\t') blank = false;
          if (blank) text.resize(l_pos);
        }
      }
      if (!text.empty()) Emit(Tok::kText, text, body);
      *pos = AfterEnd(r + 2, rminus, true);
      return true;
    }
    Fail("missing {% endraw %}", start);
  }

  size_t LexTag(size_t p, bool var) {
    int depth = 0;
    const char* end = var ? "}}" : "%}";
    while (true) {
      while (p < src_.size() && std::isspace(static_cast<unsigned char>(src_[p]))) ++p;
      if (p >= src_.size()) Fail(var ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'", p);
      if (depth == 0) {
        bool minus = src_[p] == '-' && src_.compare(p + 1, 2, end) == 0;
        bool plus = !var && src_[p] == '+' && src_.compare(p + 1, 2, end) == 0;
        if (minus || plus || src_.compare(p, 2, end) == 0) {
          Emit(var ? Tok::kVarEnd : Tok::kBlockEnd, "", p);
          size_t after = p + (minus || plus ? 3 : 2);
          return AfterEnd(after, minus, !var && !plus);
        }
      }
      const char c = src_[p];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t s = p;
        while (p < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) ++p;
        Emit(Tok::kName, src_.substr(s, p - s), s);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        p = LexNumber(p);
      } else if (c == '\'' || c == '"') {
        p = LexString(p);
      } else {
        // Two-character operators first, then single characters.
        static const char* const kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
        static const char kOps1[] = "+-*/%~<>=()[]{},.:|;";
        std::string op;
        const char n = p + 1 < src_.size() ? src_[p + 1] : 0;
        for (const char* o : kOps2) {
          if (c == o[0] && n == o[1]) {
            op = o;
            break;
          }
        }
        if (op.empty() && std::strchr(kOps1, c) != nullptr && c != 0) op = std::string(1, c);
        if (op.empty()) Fail(std::string("unexpected char '") + c + "'", p);
        if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
        if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0) --depth;
        Emit(Tok::kOp, op, p);
        p += op.size();
      }
    }
  }

  size_t LexNumber(size_t p) {
    size_t s = p;
    auto digits = [&]() {
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                 (src_[p] == '_' && p + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p + 1])))))
        ++p;
    };
    digits();
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string t;
    for (size_t k = s; k < p; ++k)
      if (src_[k] != '_') t += src_[k];
    Emit(is_float ? Tok::kFloat : Tok::kInt, t, s);
    return p;
  }

  // A string literal, unescaped like Python's "unicode-escape" codec (jinja2's rule).
  size_t LexString(size_t p) {
    const char q = src_[p];
    size_t s = p++;
    std::string out;
    while (true) {
      if (p >= src_.size()) Fail("unexpected end of string", s);
      char c = src_[p];
      if (c == q) {
        ++p;
        break;
      }
      if (c != '\\') {
        out += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) Fail("unexpected end of string", s);
      char e = src_[p + 1];
      p += 2;
      auto hex = [&](int n) -> uint32_t {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k, ++p) {
          if (p >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[p])))
            Fail("truncated \\x/\\u escape in string", s);
          char h = src_[p];
          v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        return v;
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': AppendUtf8(hex(2), &out); break;
        case 'u': AppendUtf8(hex(4), &out); break;
        case 'U': {
          uint32_t v = hex(8);
          if (v > 0x10ffff) Fail("illegal Unicode character in string", s);
          AppendUtf8(v, &out);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k, ++p)
              v = v * 8 + static_cast<uint32_t>(src_[p] - '0');
            AppendUtf8(v, &out);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    Emit(Tok::kString, out, s);
    return p;
  }

  std::string src_;
  std::vector<size_t> line_start_;
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> Lex(std::string_view source) { return Lexer(source).Run(); }

}  // namespace zf::jinja

// Jinja lexer: template text -> tokens, with jinja2's whitespace control as transformers
// configures it (trim_blocks, lstrip_blocks, keep_trailing_newline=False, `{%-`/`-%}`/`{%+`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zf::jinja {

enum class Tok {
  kText,        // literal template data
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value already unescaped
  kInt,
  kFloat,
  kOp,          // operator or punctuation, text in `text`
  kEof,
};

struct Token {
  Tok type;
  std::string text;
  int line, col;
};

// Throws jinja::Error (with line/column) on a lexical error.
std::vector<Token> Lex(std::string_view source);

}  // namespace zf::jinja

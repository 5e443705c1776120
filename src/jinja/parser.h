// Jinja parser: tokens -> statement tree (jinja2's grammar and operator precedence).
#pragma once

#include <string_view>

#include "jinja/ast.h"

namespace zf::jinja {

// Throws jinja::Error with the template's line and column on a syntax error.
Body Parse(std::string_view source);

}  // namespace zf::jinja

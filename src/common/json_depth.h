// JsonNesting: how deeply a JSON text nests arrays and objects, counted on the text before it is
// parsed. nlohmann's parser and destructor do not recurse, but dump(), copies, comparisons and
// every walk over a parsed value do (as do llguidance's schema compiler and the Jinja
// conversion), so a body of 10^5 '[' would overflow the stack there. Callers reject a text
// deeper than their bound before parsing it. Header-only: the CLI uses it too.
#pragma once

#include <string_view>

namespace zf {

// The deepest nesting of [ and { outside strings, or limit + 1 as soon as it passes `limit`.
// Not a validator: brackets need not match (the parser says whether the text is JSON).
inline int JsonNesting(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_str = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The nesting bound of the JSON the library parses with nlohmann (tools, arguments, schemas),
// as the Jinja layer's (jinja::Value::kMaxNesting).
constexpr int kMaxJsonNesting = 512;

}  // namespace zf

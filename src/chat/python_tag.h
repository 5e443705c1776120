// Llama 3.x's built-in tool calls after `<|python_tag|>` (its template writes them for tools
// named in `builtin_tools`; the model writes them for brave_search, wolfram_alpha and code):
// `NAME.call(ARG="value", ...)`, a JSON call `{"name", "parameters"}`, or Python code, which is a
// call of `python` with {"code": CODE} (as llama-server reads it).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/parser.h"

namespace zf::chat {

inline constexpr std::string_view kPythonTag = "<|python_tag|>";

// Reads what follows the tag (up to the end of the turn; a trailing <|eom_id|> or <|eot_id|> is
// ignored) as one call; false when it is empty. The id is left empty.
bool ParsePythonTagCall(std::string_view after, ToolCall* call);

// Python-call arguments at text[i] ('('): `(k='v', n=3, flag=True, d={"a": 1})`, strings raw
// between quotes as templates write them; the position after ')' (npos if malformed) and the
// arguments as a JSON object. Also LFM2's call format (ArgsStyle::kPython).
size_t ReadPythonArgs(std::string_view text, size_t i, nlohmann::ordered_json* out);

}  // namespace zf::chat

// Llama 3.x's built-in tool calls after `<|python_tag|>` (its template writes them for tools
// named in `builtin_tools`; the model writes them for brave_search, wolfram_alpha and code):
// `NAME.call(ARG="value", ...)`, a JSON call `{"name", "parameters"}`, or Python code, which is a
// call of `python` with {"code": CODE} (as llama-server reads it).
#pragma once

#include <string_view>

#include "chat/parser.h"

namespace zf::chat {

inline constexpr std::string_view kPythonTag = "<|python_tag|>";

// Reads what follows the tag (up to the end of the turn; a trailing <|eom_id|> or <|eot_id|> is
// ignored) as one call; false when it is empty. The id is left empty.
bool ParsePythonTagCall(std::string_view after, ToolCall* call);

}  // namespace zf::chat

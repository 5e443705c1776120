// The grammar of an assistant turn that is only tool calls, for tool_choice "required" or a
// named function: in the call format derived from the template (the model's own, so a constrained
// model writes what it was trained to write) with each call's arguments constrained by its tool's
// parameters schema (JSON arguments inline, XML-style parameters one element each), or in the
// generic JSON form the parser reads for every template where no call format was derived.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"

namespace zf::chat {

struct ToolGrammar {
  std::string grammar;       // the whole turn
  std::string lazy_grammar;  // the output from `trigger` on ("" with no trigger)
  std::string trigger;       // the first word of the call block's opening text ("" if none)
  bool native = false;       // the template's own format (else the generic JSON form)
};

// The model's control tokens by their text ("<|python_tag|>" -> its id): a call format literal that
// holds one is that one token to the model, referenced by id (<[id]>) in the grammar.
using SpecialTokens = std::vector<std::pair<std::string, int32_t>>;

// Lark grammars in llguidance's dialect (ZF_CONSTRAINT_LARK). `tools`: the callable tools (an
// OpenAI `tools` array, each with a function name; parameters default to any object). `parallel`:
// up to 8 calls, else exactly one. Parameters without additionalProperties are closed (as
// OpenAI's strict mode): an open object lets a small model add keys until max_tokens.
ToolGrammar ToolCallGrammar(const ChatFormat& format, const nlohmann::ordered_json& tools, bool parallel,
                            const SpecialTokens& specials = {});

// A sanity check of the tools' `parameters` (each a JSON Schema object): `type` one of JSON
// Schema's types (or a list of them), the keywords that hold schemas holding schemas,
// `required` a list of names, `enum` a list. "" when sound, else what is wrong, naming the tool
// ("tools[1] ('get_weather'): parameters.properties.city.type: 'nonsense' is not a JSON Schema
// type"; `what` names the list). A tool that is not an object or has no parameters is left to the caller's checks.
std::string CheckToolParameters(const nlohmann::ordered_json& tools, const std::string& what = "tools");

}  // namespace zf::chat

// The chat template engine as zf_chat_apply_template uses it: template text and messages from
// the input ("template\0role\0content\0role\0content..."; byte 0 holds the add-assistant flag).
// Any input must end in output or a template error, within the engine's limits (no crash, no
// hang); a rendering of valid UTF-8 inputs is valid UTF-8. The template is parsed and rendered
// by jinja::Template with the default Limits, as RenderChatTemplate does, but without its cache
// of parsed templates: an input that evicts a cached template frees less than it allocates, and
// libFuzzer then runs a full leak scan after it (80 % of the time, perf), where a balanced input
// is checked for leaks for free.
#include <string>
#include <vector>

#include "common/utf8.h"
#include "fuzz_common.h"
#include "jinja/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const bool add_assistant = (data[0] & 1) != 0;
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(data[i]));
    }
  }
  parts.push_back(cur);
  for (const std::string& s : parts) {
    if (!zf::IsValidUtf8(s)) return 0;  // the C API validates roles and contents first
  }
  using zf::jinja::Value;
  Value messages = Value::MakeList();
  for (size_t i = 1; i + 1 < parts.size(); i += 2) {
    Value m = Value::MakeDict();
    m.d().Set(Value::Str("role"), Value::Str(parts[i]));
    m.d().Set(Value::Str("content"), Value::Str(parts[i + 1]));
    messages.l().push_back(m);
  }
  Value vars = Value::MakeDict();
  vars.d().Set(Value::Str("messages"), messages);
  vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool(add_assistant));
  vars.d().Set(Value::Str("bos_token"), Value::Str("<s>"));
  vars.d().Set(Value::Str("eos_token"), Value::Str("</s>"));
  std::string out;
  try {
    const zf::jinja::Template tmpl(parts[0]);
    zf::jinja::Limits limits;
    limits.now = 0;
    out = tmpl.Render(vars, limits);
  } catch (const zf::jinja::Error&) {
    return 0;  // a template error (syntax, undefined, a limit): RenderChatTemplate's ZF_ERR_TEMPLATE
  }
  zf::fuzz::Check(zf::IsValidUtf8(out), "rendered text is valid UTF-8");
  return 0;
}

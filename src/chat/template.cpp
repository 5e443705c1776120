// Parsed templates are cached; see template.h.
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jinja/jinja.h"
#include "chat/template.h"

namespace zf::chat {

// Kept byte-identical to tests/data/chat_templates/templates/builtin-chatml.jinja and
// builtin-gemma.jinja (checked by a test), which the corpus renders with jinja2.
const char kChatMlTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const char kGemmaTemplate[] =
    "{%- set ns = namespace(system='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message['role'] == 'system' -%}\n"
    "{%- set ns.system = ns.system + message['content'] | trim -%}\n"
    "{%- else -%}\n"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}\n"
    "{{- '<start_of_turn>' + role + '\\n' -}}\n"
    "{%- if ns.system and role != 'model' -%}\n"
    "{{- ns.system + '\\n\\n' -}}\n"
    "{%- set ns.system = '' -%}\n"
    "{%- endif -%}\n"
    "{{- message['content'] | trim + '<end_of_turn>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<start_of_turn>model\\n' -}}\n"
    "{%- endif -%}\n";

namespace {

// Parsed templates, most recent first: a chat renders the same template every turn, and the
// parse is most of the cost (a parsed Template is immutable, so threads share it).
std::shared_ptr<const jinja::Template> Parsed(std::string_view text) {
  static std::mutex mu;
  static std::vector<std::pair<std::string, std::shared_ptr<const jinja::Template>>> cache;
  constexpr size_t kEntries = 8;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < cache.size(); ++i) {
      if (cache[i].first == text) {
        auto hit = cache[i];
        cache.erase(cache.begin() + static_cast<std::ptrdiff_t>(i));
        cache.insert(cache.begin(), hit);
        return hit.second;
      }
    }
  }
  auto t = std::make_shared<const jinja::Template>(text);  // throws on a syntax error
  std::lock_guard<std::mutex> lock(mu);
  cache.insert(cache.begin(), {std::string(text), t});
  if (cache.size() > kEntries) cache.pop_back();
  return t;
}

}  // namespace

Status RenderChatTemplate(std::string_view chat_template, const jinja::Value& vars, int64_t now, std::string* out) {
  try {
    std::shared_ptr<const jinja::Template> t = Parsed(chat_template);
    jinja::Limits limits;
    limits.now = now;
    *out = t->Render(vars, limits);
    return Status::Ok();
  } catch (const jinja::Error& e) {
    std::string where = e.line > 0 ? "chat template line " + std::to_string(e.line) + ", column " + std::to_string(e.col) + ": "
                                   : "chat template: ";
    return TemplateError(where + e.what());
  }
}

}  // namespace zf::chat

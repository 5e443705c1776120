// A Jinja template engine for chat templates: the subset Hugging Face templates use, rendered
// byte-identically to Python's jinja2 configured as transformers' apply_chat_template does
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, tojson without ASCII escaping,
// raise_exception, strftime_now, loop controls, the generation block).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "jinja/value.h"

namespace zf::jinja {

// Bounds that keep a hostile template from hanging or exhausting the process; exceeding one is
// an Error naming the limit.
struct Limits {
  size_t max_output_bytes = 64u << 20;  // any string the template builds, the output included
  uint64_t max_steps = 10'000'000;      // loop iterations + macro calls
  int max_depth = 256;                  // nested macro calls / expression evaluation
  // strftime_now's clock: seconds since the epoch rendered as UTC, or -1 for the local time now
  // (tests pin it for reproducible output).
  int64_t now = -1;
};


class Template {
 public:
  // Parses and checks the template (unknown filters and tests are errors, as in jinja2).
  // Throws Error with line/column.
  explicit Template(std::string_view source);
  ~Template();
  Template(const Template&) = delete;
  Template& operator=(const Template&) = delete;

  // Renders with `vars` (a dict) plus the globals (range, namespace, raise_exception,
  // strftime_now, dict). Throws Error. Thread-safe (the template is immutable).
  std::string Render(const Value& vars, const Limits& limits = Limits()) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Python's json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as transformers'
// tojson filter calls it; indent < 0 means None.
std::string ToJson(const Value& v, int indent, const std::string* item_sep, const std::string* key_sep,
                   bool sort_keys);
// JSON text -> Value (objects keep their key order). Throws Error on malformed JSON.
Value FromJson(std::string_view json);

}  // namespace zf::jinja

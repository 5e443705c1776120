// A model's chat templates as a service: which template a request means, rendering OpenAI-style
// messages with it (the model's BOS/EOS text and the normalizations clients rely on), the reasoning
// and tool-call format derived from each template (cached per model: the renderer injects this
// model's special tokens, so two models sharing a template text do not share a format), and the
// control tokens the template writes as markers. Thread-safe; owned by rt::ServedModel.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/format.h"
#include "chat/tool_grammar.h"
#include "common/status.h"
#include "jinja/value.h"

namespace zf::model {
class Model;
}

namespace zf::rt {

// What one rendering needs besides the template.
struct RenderInput {
  jinja::Value messages;          // a list of message dicts
  bool may_normalize = false;     // a message has content null, tool_calls, extras or role "tool"
  jinja::Value tools = jinja::Value::None();      // None or a list
  jinja::Value documents = jinja::Value::None();  // None or a list
  std::string extra_json;         // "" or a JSON object of extra template variables
  bool add_generation_prompt = false;
  int64_t now = -1;               // strftime_now's clock (-1: the local time now)
};

class ChatTemplates {
 public:
  explicit ChatTemplates(const model::Model& model) : model_(model) {}

  // The template: the caller's text, a named one from the file (kNotFound if absent), the
  // file's, or the built-in fallback (Gemma's turn format for a vocabulary with Gemma's turn
  // tokens, else ChatML).
  Status Pick(const char* name, const char* text, std::string* out) const;

  // Renders `in` with `tmpl` (kTemplate on template errors). Tool-call turns as OpenAI clients
  // send them (content null, tool messages) are normalized for templates that do not render
  // them (chat::NormalizeMessages); a template that concatenates a null content is retried
  // with "" (as llama-server always passes it).
  Status Render(const std::string& tmpl, const RenderInput& in, std::string* out) const;

  // The format `tmpl` writes reasoning and tool calls in, with `extra_json`'s variables; derived
  // once and kept in a small most-recently-used list.
  std::shared_ptr<const chat::ChatFormat> Format(const std::string& tmpl, const std::string& extra_json) const;

  // The model's control tokens whose text occurs in one of `texts`.
  chat::SpecialTokens ControlTokensIn(const std::vector<std::string>& texts) const;

  // The control tokens the model's own template writes as markers (a call block's opener,
  // harmony's headers), sorted, not end-of-generation tokens: generation shows them in its text
  // so that the chat parser can read the turn.
  const std::vector<int32_t>& MarkerTokens() const;

 private:
  void AddModelVars(jinja::Value* vars) const;

  const model::Model& model_;
  mutable std::mutex mu_;
  mutable std::list<std::pair<std::string, std::shared_ptr<const chat::ChatFormat>>> formats_;
  mutable std::once_flag markers_once_, controls_once_, fallback_once_;
  mutable bool gemma_fallback_ = false;
  mutable std::vector<int32_t> marker_tokens_;
  mutable std::vector<std::pair<std::string, int32_t>> control_tokens_;
};

}  // namespace zf::rt

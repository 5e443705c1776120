#include "runtime/chat_templates.h"

#include <algorithm>

#include "chat/parser.h"
#include "chat/template.h"
#include "jinja/jinja.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace zf::rt {

using jinja::Value;

namespace {

// Gemma's turn markers in the vocabulary: such a model without a template of its own speaks
// Gemma's turn format, any other ChatML.
bool HasGemmaTurns(const tok::Tokenizer& t) {
  bool start = false, end = false;
  for (int32_t id = 0; id < t.n_vocab() && !(start && end); ++id) {
    const std::string& s = t.TokenText(id);
    start = start || s == "<start_of_turn>";
    end = end || s == "<end_of_turn>";
  }
  return start && end;
}

}  // namespace

Status ChatTemplates::Pick(const char* name, const char* text, std::string* out) const {
  if (text != nullptr) {
    *out = text;
    return Status::Ok();
  }
  if (name != nullptr) {
    const std::string key = std::string("tokenizer.chat_template.") + name;
    std::string_view sv;
    if (!model_.file().GetString(key, &sv).ok()) return NotFound("the model has no '" + key + "'");
    *out = std::string(sv);
    return Status::Ok();
  }
  if (!model_.chat_template().empty()) {
    *out = model_.chat_template();
    return Status::Ok();
  }
  std::call_once(fallback_once_, [this] { gemma_fallback_ = HasGemmaTurns(model_.tokenizer()); });
  *out = gemma_fallback_ ? chat::kGemmaTemplate : chat::kChatMlTemplate;
  return Status::Ok();
}

void ChatTemplates::AddModelVars(Value* vars) const {
  const tok::Tokenizer& t = model_.tokenizer();
  if (t.bos() >= 0) vars->d().Set(Value::Str("bos_token"), Value::Str(t.TokenText(t.bos())));
  if (t.eos() >= 0) vars->d().Set(Value::Str("eos_token"), Value::Str(t.TokenText(t.eos())));
}

Status ChatTemplates::Render(const std::string& tmpl, const RenderInput& in, std::string* out) const {
  Value messages = in.messages;
  nlohmann::ordered_json as_json;
  bool normalized = false;
  if (in.may_normalize) {
    as_json = nlohmann::ordered_json::parse(jinja::ToJson(messages, -1, nullptr, nullptr, false), nullptr, false);
    if (chat::MayNeedNormalizing(as_json)) {
      as_json = chat::NormalizeMessages(as_json, *Format(tmpl, in.extra_json));
      messages = jinja::FromJson(as_json.dump());
      normalized = true;
    }
  }
  Value vars = Value::MakeDict();
  vars.d().Set(Value::Str("messages"), messages);
  vars.d().Set(Value::Str("tools"), in.tools);
  vars.d().Set(Value::Str("documents"), in.documents);
  vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool(in.add_generation_prompt));
  AddModelVars(&vars);
  if (!in.extra_json.empty()) {
    Value extra = jinja::FromJson(in.extra_json);
    for (auto& kv : extra.d().items) vars.d().Set(kv.first, kv.second);
  }
  Status s = chat::RenderChatTemplate(tmpl, vars, in.now, out);
  if (!s.ok() && normalized) {
    // A template that renders tool calls but not an assistant message's content null (it
    // concatenates it): content "", as llama-server always passes it.
    bool changed = false;
    for (auto& m : as_json) {
      if (m.is_object() && m.value("role", nlohmann::ordered_json()) == "assistant" &&
          (!m.contains("content") || m["content"].is_null())) {
        m["content"] = "";
        changed = true;
      }
    }
    if (changed) {
      vars.d().Set(Value::Str("messages"), jinja::FromJson(as_json.dump()));
      std::string again;
      if (chat::RenderChatTemplate(tmpl, vars, in.now, &again).ok()) s = Status::Ok(), *out = std::move(again);
    }
  }
  return s;
}

std::shared_ptr<const chat::ChatFormat> ChatTemplates::Format(const std::string& tmpl,
                                                             const std::string& extra_json) const {
  constexpr size_t kEntries = 16;
  const std::string key = tmpl + '\0' + extra_json;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = formats_.begin(); it != formats_.end(); ++it) {
      if (it->first == key) {
        formats_.splice(formats_.begin(), formats_, it);
        return formats_.front().second;
      }
    }
  }
  Value extra = extra_json.empty() ? Value::MakeDict() : jinja::FromJson(extra_json);
  const Value tools = jinja::FromJson(chat::ProbeTools().dump());
  bool with_tools = true;
  chat::Renderer render = [&](const nlohmann::ordered_json& messages, bool add_generation_prompt, std::string* out) {
    Value vars = Value::MakeDict();
    vars.d().Set(Value::Str("messages"), jinja::FromJson(messages.dump()));
    vars.d().Set(Value::Str("tools"), with_tools ? tools : Value::None());
    vars.d().Set(Value::Str("documents"), Value::None());
    vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool(add_generation_prompt));
    AddModelVars(&vars);
    for (auto& kv : extra.d().items) vars.d().Set(kv.first, kv.second);
    return chat::RenderChatTemplate(tmpl, vars, /*now=*/0, out).ok();
  };
  // Templates that fail whenever tools are offered (llama.cpp's DeepSeek-R1 template pipes a
  // generator into tojson, which jinja2 refuses too) are probed without them: their tool-call
  // turns still render.
  std::string probe;
  if (!render(nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}}), true, &probe)) with_tools = false;
  auto f = std::make_shared<const chat::ChatFormat>(chat::DeriveChatFormat(render, tmpl));
  std::lock_guard<std::mutex> lock(mu_);
  formats_.emplace_front(key, f);
  if (formats_.size() > kEntries) formats_.pop_back();
  return f;
}

chat::SpecialTokens ChatTemplates::ControlTokensIn(const std::vector<std::string>& texts) const {
  std::call_once(controls_once_, [this] {
    const tok::Tokenizer& t = model_.tokenizer();
    for (int32_t id = 0; id < t.n_vocab(); ++id) {
      if (!t.IsControl(id)) continue;
      std::string text = t.TokenToPiece(id, true);
      if (!text.empty()) control_tokens_.emplace_back(std::move(text), id);
    }
  });
  chat::SpecialTokens out;
  for (const auto& [text, id] : control_tokens_) {
    for (const std::string& t : texts) {
      if (t.find(text) != std::string::npos) {
        out.emplace_back(text, id);
        break;
      }
    }
  }
  return out;
}

const std::vector<int32_t>& ChatTemplates::MarkerTokens() const {
  std::call_once(markers_once_, [this] {
    if (model_.chat_template().empty()) return;  // the fallback templates have no control-token markers
    try {
      const auto format = Format(model_.chat_template(), "");
      for (const auto& [text, id] : ControlTokensIn(chat::MarkerTexts(*format))) {
        if (!model_.tokenizer().IsEndOfGeneration(id)) marker_tokens_.push_back(id);
      }
      std::sort(marker_tokens_.begin(), marker_tokens_.end());
    } catch (const std::exception&) {
      marker_tokens_.clear();  // a template that fails to render: no markers to show
    }
  });
  return marker_tokens_;
}

}  // namespace zf::rt

// C entry points for chat templates: messages and options to template variables (the way
// transformers' apply_chat_template passes them), rendered by the Jinja engine.
#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "chat/format.h"
#include "chat/parser.h"
#include "chat/tool_grammar.h"
#include "common/json_depth.h"
#include "common/utf8.h"
#include "jinja/jinja.h"
#include "tokenizer/tokenizer.h"

using zf::capi::CopyOut;
using zf::capi::Fail;
using zf::capi::Succeed;
using zf::jinja::Value;

static_assert(sizeof(zf_chat_message_v2) == 64, "zf_chat_message_v2 layout is part of the ABI");
static_assert(sizeof(zf_chat_params) == 56, "zf_chat_params layout is part of the ABI");

namespace {

// An invalid field: ZF_ERR_INVALID_ARGUMENT naming it (thrown inside the guard).
struct BadField {
  std::string message;
};

void CheckUtf8(const char* s, const std::string& field) {
  size_t bad = 0;
  if (!zf::IsValidUtf8(s, &bad)) throw BadField{field + ": invalid UTF-8 at byte " + std::to_string(bad)};
}

// JSON parsed with nlohmann is walked and dumped recursively: bounded first (as FromJson does).
void CheckNesting(const char* s, const std::string& field) {
  if (zf::JsonNesting(s, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) {
    throw BadField{field + ": nested deeper than " + std::to_string(zf::kMaxJsonNesting) + " levels"};
  }
}

Value Json(const char* s, const std::string& field, bool object) {
  CheckUtf8(s, field);
  Value v;
  try {
    v = zf::jinja::FromJson(s);
  } catch (const zf::jinja::Error& e) {
    throw BadField{field + ": " + e.what()};
  }
  if (object && !v.is_dict()) throw BadField{field + ": expected a JSON object"};
  if (!object && !v.is_list()) throw BadField{field + ": expected a JSON array"};
  return v;
}

Value Str(const char* s, const std::string& field) {
  CheckUtf8(s, field);
  return Value::Str(s);
}

// The template: the caller's, a named one from the file, the file's, or the built-in fallback.
zf_status PickTemplate(const zf::model::Model& m, const char* name, const char* text, std::string* out) {
  if (text != nullptr) {
    CheckUtf8(text, "params->template_text");
    *out = text;
    return ZF_OK;
  }
  if (name != nullptr) {
    const std::string key = std::string("tokenizer.chat_template.") + name;
    std::string_view sv;
    if (!m.file().GetString(key, &sv).ok()) return Fail(ZF_ERR_NOT_FOUND, "the model has no '" + key + "'");
    *out = std::string(sv);
    return ZF_OK;
  }
  if (!m.chat_template().empty()) *out = m.chat_template();
  else *out = m.desc().arch.rfind("gemma", 0) == 0 ? zf::tok::kGemmaTemplate : zf::tok::kChatMlTemplate;
  return ZF_OK;
}

// The variables transformers passes besides messages: special tokens, tools, documents.
void AddModelVars(const zf::model::Model& m, Value* vars) {
  const zf::tok::Tokenizer& t = m.tokenizer();
  if (t.bos() >= 0) vars->d().Set(Value::Str("bos_token"), Value::Str(t.TokenText(t.bos())));
  if (t.eos() >= 0) vars->d().Set(Value::Str("eos_token"), Value::Str(t.TokenText(t.eos())));
}

zf_status Render(const zf::model::Model& m, const std::string& tmpl, const Value& vars, int64_t now, char* buf,
                 size_t cap, size_t* needed) {
  std::string out;
  zf::Status s = zf::tok::RenderChatTemplate(tmpl, vars, now, &out);
  if (!s.ok()) return Fail(s);
  (void)m;
  return CopyOut(out, buf, cap, needed);
}

// The caller's zf_chat_params over the defaults, with only the `known` flag bits.
zf_status ReadChatParams(const zf_chat_params* params, uint32_t known, zf_chat_params* p) {
  zf_chat_params_init(p, sizeof *p);
  if (!zf::capi::ReadParams(params, p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  return zf::capi::CheckFlags("params->flags", p->flags, known);
}

// The format a template writes reasoning and tool calls in, derived once per (template, extra
// variables) and kept in a small most-recently-used list: a server parses every turn with it.
std::shared_ptr<const zf::chat::ChatFormat> FormatFor(const zf::model::Model& m, const std::string& tmpl,
                                                      const std::string& extra_json) {
  static std::mutex mu;
  static std::list<std::pair<std::string, std::shared_ptr<const zf::chat::ChatFormat>>> cache;
  constexpr size_t kEntries = 16;
  const std::string key = tmpl + '\0' + extra_json;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->first == key) {
        cache.splice(cache.begin(), cache, it);
        return cache.front().second;
      }
    }
  }
  Value extra = extra_json.empty() ? Value::MakeDict() : zf::jinja::FromJson(extra_json);
  const Value tools = zf::jinja::FromJson(zf::chat::ProbeTools().dump());
  bool with_tools = true;
  zf::chat::Renderer render = [&](const nlohmann::ordered_json& messages, bool add_generation_prompt, std::string* out) {
    Value vars = Value::MakeDict();
    vars.d().Set(Value::Str("messages"), zf::jinja::FromJson(messages.dump()));
    vars.d().Set(Value::Str("tools"), with_tools ? tools : Value::None());
    vars.d().Set(Value::Str("documents"), Value::None());
    vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool(add_generation_prompt));
    AddModelVars(m, &vars);
    for (auto& kv : extra.d().items) vars.d().Set(kv.first, kv.second);
    return zf::tok::RenderChatTemplate(tmpl, vars, /*now=*/0, out).ok();
  };
  // Templates that fail whenever tools are offered (llama.cpp's DeepSeek-R1 template pipes a
  // generator into tojson, which jinja2 refuses too) are probed without them: their tool-call
  // turns still render.
  std::string probe;
  if (!render(nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}}), true, &probe)) with_tools = false;
  auto f = std::make_shared<const zf::chat::ChatFormat>(zf::chat::DeriveChatFormat(render, tmpl));
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace_front(key, f);
  if (cache.size() > kEntries) cache.pop_back();
  return f;
}

// The model's control tokens whose text occurs in one of `texts` (zf::chat::SpecialTokens).
zf::chat::SpecialTokens ControlTokensIn(const zf_model* model, const std::vector<std::string>& texts) {
  std::call_once(model->controls_once, [model] {
    const zf::tok::Tokenizer& tok = model->impl->tokenizer();
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      if (!tok.IsControl(id)) continue;
      std::string text = tok.TokenToPiece(id, true);
      if (!text.empty()) model->control_tokens.emplace_back(std::move(text), id);
    }
  });
  zf::chat::SpecialTokens out;
  for (const auto& [text, id] : model->control_tokens) {
    for (const std::string& t : texts) {
      if (t.find(text) != std::string::npos) {
        out.emplace_back(text, id);
        break;
      }
    }
  }
  return out;
}

}  // namespace

extern "C" {

ZF_API zf_status zf_chat_apply_template(const zf_model* model, const zf_chat_message* msgs, size_t n_msgs,
                                        uint32_t flags, char* buf, size_t cap, size_t* needed) {
  if (model == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  if (msgs == nullptr && n_msgs > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "msgs is NULL");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, ZF_CHAT_ADD_ASSISTANT)) return e;
  ZF_GUARD_BEGIN
  Value list = Value::MakeList();
  for (size_t i = 0; i < n_msgs; ++i) {
    if (msgs[i].role == nullptr || msgs[i].content == nullptr) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + " has a NULL role or content");
    }
    for (const char* s : {msgs[i].role, msgs[i].content}) {
      size_t bad = 0;
      if (!zf::IsValidUtf8(s, &bad)) {
        return Fail(ZF_ERR_INVALID_UTF8, "message " + std::to_string(i) + ": " + (s == msgs[i].role ? "role" : "content") +
                                             " has invalid UTF-8 at byte " + std::to_string(bad));
      }
    }
    Value msg = Value::MakeDict();
    msg.d().Set(Value::Str("role"), Value::Str(msgs[i].role));
    msg.d().Set(Value::Str("content"), Value::Str(msgs[i].content));
    list.l().push_back(msg);
  }
  const zf::model::Model& m = *model->impl;
  std::string tmpl;
  if (zf_status st = PickTemplate(m, nullptr, nullptr, &tmpl); st != ZF_OK) return st;
  Value vars = Value::MakeDict();
  vars.d().Set(Value::Str("messages"), list);
  vars.d().Set(Value::Str("tools"), Value::None());
  vars.d().Set(Value::Str("documents"), Value::None());
  vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool((flags & ZF_CHAT_ADD_ASSISTANT) != 0));
  AddModelVars(m, &vars);
  return Render(m, tmpl, vars, -1, buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_params_init(zf_chat_params* params, size_t size) {
  if (params == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "params is NULL");
  if (size < sizeof(uint32_t)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params size " + std::to_string(size) + " is too small");
  zf_chat_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  const size_t n = size < sizeof d ? size : sizeof d;
  std::memcpy(params, &d, n);
  params->struct_size = static_cast<uint32_t>(n);
  return Succeed();
}

ZF_API zf_status zf_chat_apply_template_v2(const zf_model* model, const zf_chat_message_v2* msgs, size_t n_msgs,
                                           const zf_chat_params* params, char* buf, size_t cap, size_t* needed) {
  if (model == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  if (msgs == nullptr && n_msgs > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "msgs is NULL");
  ZF_GUARD_BEGIN
  zf_chat_params p;
  if (zf_status e = ReadChatParams(params, ZF_CHAT_ADD_ASSISTANT | ZF_CHAT_FIXED_TIME, &p)) return e;
  try {
    // Messages: the stride is the first element's struct_size (all must agree); fields past a
    // caller's shorter struct are absent.
    Value list = Value::MakeList();
    bool may_normalize = false;
    const size_t stride = n_msgs > 0 ? msgs[0].struct_size : 0;
    constexpr size_t kMinSize = offsetof(zf_chat_message_v2, content);
    if (n_msgs > 0 && (stride < kMinSize + sizeof(const char*) || stride % alignof(zf_chat_message_v2) != 0)) {
      throw BadField{"msgs[0].struct_size " + std::to_string(stride) + " is too small or misaligned"};
    }
    for (size_t i = 0; i < n_msgs; ++i) {
      const auto* raw = reinterpret_cast<const unsigned char*>(msgs) + i * stride;
      zf_chat_message_v2 m;
      std::memset(&m, 0, sizeof m);
      std::memcpy(&m, raw, stride < sizeof m ? stride : sizeof m);
      const std::string at = "msgs[" + std::to_string(i) + "]";
      if (m.struct_size != stride) {
        throw BadField{at + ".struct_size " + std::to_string(m.struct_size) + " differs from msgs[0]'s " + std::to_string(stride)};
      }
      if (m.reserved != 0) throw BadField{at + ".reserved must be 0"};
      if (m.role == nullptr) throw BadField{at + ".role is NULL"};
      // What zf::chat::NormalizeMessages may change (see below).
      may_normalize = may_normalize || m.content == nullptr || m.tool_calls_json != nullptr || m.extra_json != nullptr ||
                      std::strcmp(m.role, "tool") == 0;
      Value msg = Value::MakeDict();
      zf::jinja::Dict& d = msg.d();
      d.Set(Value::Str("role"), Str(m.role, at + ".role"));
      d.Set(Value::Str("content"), m.content ? Str(m.content, at + ".content") : Value::None());
      if (m.reasoning_content) d.Set(Value::Str("reasoning_content"), Str(m.reasoning_content, at + ".reasoning_content"));
      if (m.tool_calls_json) d.Set(Value::Str("tool_calls"), Json(m.tool_calls_json, at + ".tool_calls_json", false));
      if (m.tool_call_id) d.Set(Value::Str("tool_call_id"), Str(m.tool_call_id, at + ".tool_call_id"));
      if (m.name) d.Set(Value::Str("name"), Str(m.name, at + ".name"));
      if (m.extra_json) {
        Value extra = Json(m.extra_json, at + ".extra_json", true);
        for (auto& kv : extra.d().items) d.Set(kv.first, kv.second);
      }
      msg.UpdateNesting();
      list.l().push_back(msg);
    }
    const zf::model::Model& mm = *model->impl;
    std::string tmpl;
    if (p.template_name != nullptr) CheckUtf8(p.template_name, "params->template_name");
    if (zf_status st = PickTemplate(mm, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
    if (p.extra_json) Json(p.extra_json, "params->extra_json", true);  // validated before it is used
    // Tool-call turns as OpenAI clients send them (content null, tool messages) for templates
    // that do not render them (zf::chat::NormalizeMessages).
    nlohmann::ordered_json as_json;
    bool normalized = false;
    if (may_normalize) {
      as_json = nlohmann::ordered_json::parse(zf::jinja::ToJson(list, -1, nullptr, nullptr, false), nullptr, false);
      if (zf::chat::MayNeedNormalizing(as_json)) {
        const auto format = FormatFor(mm, tmpl, p.extra_json ? p.extra_json : "");
        as_json = zf::chat::NormalizeMessages(as_json, *format);
        list = zf::jinja::FromJson(as_json.dump());
        normalized = true;
      }
    }
    Value tools = Value::None();
    if (p.tools_json) {
      tools = Json(p.tools_json, "params->tools_json", false);  // UTF-8, JSON, nesting bounded
      const auto t = nlohmann::ordered_json::parse(p.tools_json, nullptr, /*allow_exceptions=*/false);
      if (std::string e = zf::chat::CheckToolParameters(t, "params->tools_json"); !e.empty()) throw BadField{e};
    }
    Value vars = Value::MakeDict();
    vars.d().Set(Value::Str("messages"), list);
    vars.d().Set(Value::Str("tools"), tools);
    vars.d().Set(Value::Str("documents"),
                 p.documents_json ? Json(p.documents_json, "params->documents_json", false) : Value::None());
    vars.d().Set(Value::Str("add_generation_prompt"), Value::Bool((p.flags & ZF_CHAT_ADD_ASSISTANT) != 0));
    AddModelVars(mm, &vars);
    if (p.extra_json) {
      Value extra = Json(p.extra_json, "params->extra_json", true);
      for (auto& kv : extra.d().items) vars.d().Set(kv.first, kv.second);
    }
    const int64_t now = (p.flags & ZF_CHAT_FIXED_TIME) != 0 ? (p.time_unix < 0 ? 0 : p.time_unix) : -1;
    std::string out;
    zf::Status s = zf::tok::RenderChatTemplate(tmpl, vars, now, &out);
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
        vars.d().Set(Value::Str("messages"), zf::jinja::FromJson(as_json.dump()));
        std::string again;
        if (zf::tok::RenderChatTemplate(tmpl, vars, now, &again).ok()) s = zf::Status::Ok(), out = std::move(again);
      }
    }
    if (!s.ok()) return Fail(s);
    return CopyOut(out, buf, cap, needed);
  } catch (const BadField& b) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, b.message);
  } catch (const zf::jinja::Error& e) {  // nesting limits while building the variables
    return Fail(ZF_ERR_INVALID_ARGUMENT, e.what());
  }
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_parse(const zf_model* model, const char* text, size_t len, const zf_chat_params* params,
                               char* buf, size_t cap, size_t* needed) {
  if (model == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  if (text == nullptr && len > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "text is NULL");
  ZF_GUARD_BEGIN
  zf_chat_params p;
  const uint32_t flags = ZF_CHAT_ADD_ASSISTANT | ZF_CHAT_FIXED_TIME | ZF_CHAT_PARSE_PARTIAL;
  if (zf_status e = ReadChatParams(params, flags, &p)) return e;
  const std::string_view generated(text == nullptr ? "" : text, len);
  size_t bad = 0;
  if (!zf::IsValidUtf8(generated, &bad)) {
    return Fail(ZF_ERR_INVALID_UTF8, "text has invalid UTF-8 at byte " + std::to_string(bad));
  }
  try {
    const zf::model::Model& mm = *model->impl;
    std::string tmpl;
    if (p.template_name != nullptr) CheckUtf8(p.template_name, "params->template_name");
    if (zf_status st = PickTemplate(mm, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
    nlohmann::ordered_json tools;  // null: none offered
    if (p.tools_json != nullptr) {
      CheckUtf8(p.tools_json, "params->tools_json");
      CheckNesting(p.tools_json, "params->tools_json");
      tools = nlohmann::ordered_json::parse(p.tools_json, nullptr, /*allow_exceptions=*/false);
      if (tools.is_discarded()) throw BadField{"params->tools_json: malformed JSON"};
      if (!tools.is_array()) throw BadField{"params->tools_json: expected a JSON array"};
    }
    std::string extra;
    if (p.extra_json != nullptr) {
      Json(p.extra_json, "params->extra_json", true);  // validates: a JSON object
      extra = p.extra_json;
    }
    auto format = FormatFor(mm, tmpl, extra);
    const zf::chat::ParsedMessage msg = zf::chat::ParseAssistant(generated, *format, tools, (p.flags & ZF_CHAT_PARSE_PARTIAL) != 0);
    return CopyOut(zf::chat::ToOpenAiMessage(msg).dump(), buf, cap, needed);
  } catch (const BadField& b) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, b.message);
  } catch (const zf::jinja::Error& e) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, e.what());
  }
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_tool_grammar(const zf_model* model, const zf_chat_params* params, char* buf, size_t cap,
                                      size_t* needed) {
  if (model == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "model is NULL");
  if (params == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "params is NULL (params->tools_json is required)");
  ZF_GUARD_BEGIN
  zf_chat_params p;
  const uint32_t flags = ZF_CHAT_ADD_ASSISTANT | ZF_CHAT_FIXED_TIME | ZF_CHAT_PARSE_PARTIAL | ZF_CHAT_ONE_CALL;
  if (zf_status e = ReadChatParams(params, flags, &p)) return e;
  try {
    const zf::model::Model& mm = *model->impl;
    std::string tmpl;
    if (p.template_name != nullptr) CheckUtf8(p.template_name, "params->template_name");
    if (zf_status st = PickTemplate(mm, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
    if (p.tools_json == nullptr) throw BadField{"params->tools_json is NULL: the tools to call are required"};
    CheckUtf8(p.tools_json, "params->tools_json");
    CheckNesting(p.tools_json, "params->tools_json");
    const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(p.tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded()) throw BadField{"params->tools_json: malformed JSON"};
    if (!tools.is_array() || tools.empty()) throw BadField{"params->tools_json: expected a non-empty JSON array"};
    for (size_t i = 0; i < tools.size(); ++i) {
      const auto& t = tools[i];
      const auto& fn = t.is_object() && t.contains("function") ? t["function"] : t;
      const std::string at = "params->tools_json[" + std::to_string(i) + "]";
      if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
        throw BadField{at + ": no function name"};
      }
      if (fn.contains("parameters") && !fn["parameters"].is_object()) throw BadField{at + ": parameters is not an object"};
    }
    if (std::string e = zf::chat::CheckToolParameters(tools, "params->tools_json"); !e.empty()) throw BadField{e};
    std::string extra;
    if (p.extra_json != nullptr) {
      Json(p.extra_json, "params->extra_json", true);  // validates: a JSON object
      extra = p.extra_json;
    }
    auto format = FormatFor(mm, tmpl, extra);
    const zf::chat::ToolGrammar g = zf::chat::ToolCallGrammar(*format, tools, (p.flags & ZF_CHAT_ONE_CALL) == 0,
                                                              ControlTokensIn(model, zf::chat::MarkerTexts(*format)));
    const nlohmann::ordered_json out = {
        {"grammar", g.grammar}, {"lazy_grammar", g.lazy_grammar}, {"trigger", g.trigger}, {"native", g.native}};
    return CopyOut(out.dump(), buf, cap, needed);
  } catch (const BadField& b) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, b.message);
  } catch (const zf::jinja::Error& e) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, e.what());
  }
  ZF_GUARD_END
}

}  // extern "C"

namespace zf::capi {

const std::vector<int32_t>& ChatMarkerTokens(const zf_model* model) {
  std::call_once(model->markers_once, [model] {
    const zf::model::Model& m = *model->impl;
    if (m.chat_template().empty()) return;  // the fallback templates have no control-token markers
    try {
      const auto format = FormatFor(m, m.chat_template(), "");
      for (const auto& [text, id] : ControlTokensIn(model, zf::chat::MarkerTexts(*format))) {
        if (!m.tokenizer().IsEndOfGeneration(id)) model->marker_tokens.push_back(id);
      }
      std::sort(model->marker_tokens.begin(), model->marker_tokens.end());
    } catch (const std::exception&) {
      model->marker_tokens.clear();  // a template that fails to render: no markers to show
    }
  });
  return model->marker_tokens;
}

}  // namespace zf::capi

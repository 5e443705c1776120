// C entry points for chat templates: messages and options to template variables (the way
// transformers' apply_chat_template passes them), rendered by the Jinja engine.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "chat/format.h"
#include "chat/parser.h"
#include "chat/tool_grammar.h"
#include "common/json_depth.h"
#include "common/utf8.h"
#include "jinja/jinja.h"

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

// The template a request names (rt::ChatTemplates::Pick), its text checked for UTF-8.
zf_status PickTemplate(const zf_model* model, const char* name, const char* text, std::string* out) {
  if (text != nullptr) CheckUtf8(text, "params->template_text");
  if (name != nullptr) CheckUtf8(name, "params->template_name");
  zf::Status s = model->served->chat().Pick(name, text, out);
  return s.ok() ? ZF_OK : Fail(s);
}

// The caller's zf_chat_params over the defaults, with only the `known` flag bits.
zf_status ReadChatParams(const zf_chat_params* params, uint32_t known, zf_chat_params* p) {
  zf_chat_params_init(p, sizeof *p);
  if (!zf::capi::ReadParams(params, p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  return zf::capi::CheckFlags("params->flags", p->flags, known);
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
  std::string tmpl;
  if (zf_status st = PickTemplate(model, nullptr, nullptr, &tmpl); st != ZF_OK) return st;
  zf::rt::RenderInput in;
  in.messages = list;
  in.add_generation_prompt = (flags & ZF_CHAT_ADD_ASSISTANT) != 0;
  std::string out;
  zf::Status s = model->served->chat().Render(tmpl, in, &out);
  if (!s.ok()) return Fail(s);
  return CopyOut(out, buf, cap, needed);
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
    std::string tmpl;
    if (zf_status st = PickTemplate(model, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
    zf::rt::RenderInput in;
    in.messages = list;
    in.may_normalize = may_normalize;
    if (p.extra_json) {
      Json(p.extra_json, "params->extra_json", true);  // validated before it is used
      in.extra_json = p.extra_json;
    }
    if (p.tools_json) {
      in.tools = Json(p.tools_json, "params->tools_json", false);  // UTF-8, JSON, nesting bounded
      const auto t = nlohmann::ordered_json::parse(p.tools_json, nullptr, /*allow_exceptions=*/false);
      if (std::string e = zf::chat::CheckToolParameters(t, "params->tools_json"); !e.empty()) throw BadField{e};
    }
    if (p.documents_json) in.documents = Json(p.documents_json, "params->documents_json", false);
    in.add_generation_prompt = (p.flags & ZF_CHAT_ADD_ASSISTANT) != 0;
    in.now = (p.flags & ZF_CHAT_FIXED_TIME) != 0 ? (p.time_unix < 0 ? 0 : p.time_unix) : -1;
    std::string out;
    zf::Status s = model->served->chat().Render(tmpl, in, &out);
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
    std::string tmpl;
    if (zf_status st = PickTemplate(model, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
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
    auto format = model->served->chat().Format(tmpl, extra);
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
    std::string tmpl;
    if (zf_status st = PickTemplate(model, p.template_name, p.template_text, &tmpl); st != ZF_OK) return st;
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
    auto format = model->served->chat().Format(tmpl, extra);
    const zf::chat::ToolGrammar g = zf::chat::ToolCallGrammar(*format, tools, (p.flags & ZF_CHAT_ONE_CALL) == 0,
                                                              model->served->chat().ControlTokensIn(zf::chat::MarkerTexts(*format)));
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

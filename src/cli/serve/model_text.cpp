// Tokenizing, chat templating and token text through the public C API.
#include "model_text.h"

#include <cstring>

#include "../../common/json_depth.h"
#include "../common.h"

namespace cli::serve {

std::vector<int32_t> Tokenize(const zf_model* model, const std::string& text, uint32_t flags) {
  std::vector<int32_t> toks(text.size() + 8);
  size_t n = 0;
  zf_status st = zf_tokenize(model, text.data(), text.size(), flags, toks.data(), toks.size(), &n);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    toks.resize(n);
    st = zf_tokenize(model, text.data(), text.size(), flags, toks.data(), toks.size(), &n);
  }
  if (st == ZF_ERR_INVALID_UTF8) throw BadRequest("invalid_utf8", "the text is not valid UTF-8");
  if (st != ZF_OK) throw ServerError(st);
  toks.resize(n);
  return toks;
}

namespace {

// A message field that must be a string (or absent / null).
const char* OptionalString(const json& m, const char* key, std::string* keep) {
  if (!m.contains(key) || m[key].is_null()) return nullptr;
  if (!m[key].is_string()) throw BadRequest("invalid_type", std::string("message '") + key + "' must be a string");
  *keep = m[key].get<std::string>();
  return keep->c_str();
}

// OpenAI's tool_calls with `arguments` as a JSON string, given to templates as an object where
// it parses (templates index and `tojson` it; llama-server does the same).
std::string ToolCallsJson(const json& calls) {
  if (!calls.is_array()) throw BadRequest("invalid_type", "message 'tool_calls' must be an array");
  json out = json::array();
  for (const json& c : calls) {
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() ||
        !c["function"].contains("name") || !c["function"]["name"].is_string()) {
      throw BadRequest("invalid_type", "each tool call needs a 'function' with a string 'name'");
    }
    json call = c;
    call["type"] = c.value("type", "function");
    json& args = call["function"]["arguments"];
    if (args.is_string()) {
      const std::string& text = args.get_ref<const std::string&>();
      if (zf::JsonNesting(text, zf::kMaxJsonNesting) > zf::kMaxJsonNesting) {  // as ParseObject
        throw BadRequest("invalid_value", "tool call arguments nest deeper than " +
                                              std::to_string(zf::kMaxJsonNesting) + " levels");
      }
      json parsed = json::parse(text, nullptr, false);
      if (!parsed.is_discarded()) args = parsed;
    } else if (args.is_null()) {
      args = json::object();
    }
    out.push_back(call);
  }
  return out.dump();
}

}  // namespace

std::string RenderChat(const zf_model* model, const json& messages, const ChatRender& opts) {
  if (!messages.is_array() || messages.empty()) {
    throw BadRequest("invalid_type", "'messages' must be a non-empty array");
  }
  // Every string the messages point into lives here until the template is rendered.
  struct Fields {
    std::string role, content, reasoning, tool_calls, tool_call_id, name;
    bool has_content = false;
  };
  std::vector<Fields> fields(messages.size());
  std::vector<zf_chat_message_v2> msgs(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    Fields& f = fields[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      throw BadRequest("invalid_type", "each message needs a string 'role'");
    }
    f.role = m["role"].get<std::string>();
    if (f.role != "system" && f.role != "user" && f.role != "assistant" && f.role != "developer" && f.role != "tool") {
      throw BadRequest("invalid_value", "unsupported message role '" + f.role + "'");
    }
    if (f.role == "developer") f.role = "system";
    const json c = m.value("content", json());
    if (c.is_string()) {
      f.content = c.get<std::string>();
      f.has_content = true;
    } else if (c.is_array()) {  // [{"type": "text", "text": ...}, ...]
      for (const json& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          throw BadRequest("invalid_type", "only text content parts are supported");
        }
        f.content += part["text"].get<std::string>();
      }
      f.has_content = true;
    } else if (!c.is_null()) {
      throw BadRequest("invalid_type", "message 'content' must be a string or an array of text parts");
    } else if (f.role == "system" || f.role == "user") {  // only assistant turns may have none
      throw BadRequest("invalid_type", "messages[" + std::to_string(i) + "] ('" + m["role"].get<std::string>() +
                                           "') needs a 'content' string or array of text parts");
    }
    zf_chat_message_v2& v = msgs[i];
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.role = f.role.c_str();
    // A user or system message without content is an empty one (as before); an assistant turn
    // with only tool calls has content None, as transformers passes it.
    v.content = f.has_content || f.role != "assistant" ? f.content.c_str() : nullptr;
    v.reasoning_content = OptionalString(m, "reasoning_content", &f.reasoning);
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      f.tool_calls = ToolCallsJson(m["tool_calls"]);
      v.tool_calls_json = f.tool_calls.c_str();
    }
    v.tool_call_id = OptionalString(m, "tool_call_id", &f.tool_call_id);
    v.name = OptionalString(m, "name", &f.name);
  }
  zf_chat_params p;
  zf_chat_params_init(&p, sizeof p);
  p.flags = ZF_CHAT_ADD_ASSISTANT;
  p.template_text = opts.template_text.empty() ? nullptr : opts.template_text.c_str();
  p.tools_json = opts.tools_json.empty() ? nullptr : opts.tools_json.c_str();
  p.extra_json = opts.extra_json.empty() ? nullptr : opts.extra_json.c_str();
  std::string out;
  const zf_status st = FetchString(
      [&](char* buf, size_t cap, size_t* needed) {
        return zf_chat_apply_template_v2(model, msgs.data(), msgs.size(), &p, buf, cap, needed);
      },
      true, &out);
  if (st == ZF_ERR_INVALID_UTF8 || st == ZF_ERR_INVALID_ARGUMENT) {
    throw BadRequest(st == ZF_ERR_INVALID_UTF8 ? "invalid_utf8" : "invalid_value", LibraryErrorInRequestTerms());
  }
  if (st == ZF_ERR_TEMPLATE) throw BadRequest("template_error", zf_last_error());
  if (st != ZF_OK) throw ServerError(st);
  return out;
}

std::string TokenText(const zf_model* model, int32_t token) {
  std::string text(32, '\0');
  size_t needed = 0;
  zf_status st = zf_token_to_piece(model, token, ZF_DETOKENIZE_RENDER_SPECIAL, text.data(), text.size(), &needed);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    text.resize(needed);
    st = zf_token_to_piece(model, token, ZF_DETOKENIZE_RENDER_SPECIAL, text.data(), text.size(), &needed);
  }
  if (st != ZF_OK) return std::string();
  text.resize(needed);
  return text;
}

}  // namespace cli::serve

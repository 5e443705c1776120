// Tokenizing, chat templating and token text through the public C API.
#include "model_text.h"

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

std::string RenderChat(const zf_model* model, const json& messages) {
  if (!messages.is_array() || messages.empty()) {
    throw BadRequest("invalid_type", "'messages' must be a non-empty array");
  }
  std::vector<std::string> roles, contents;
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      throw BadRequest("invalid_type", "each message needs a string 'role'");
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer") {
      throw BadRequest("invalid_value", "unsupported message role '" + role + "'");
    }
    std::string content;
    const json c = m.value("content", json());
    if (c.is_string()) {
      content = c.get<std::string>();
    } else if (c.is_array()) {  // [{"type": "text", "text": ...}, ...]
      for (const json& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          throw BadRequest("invalid_type", "only text content parts are supported");
        }
        content += part["text"].get<std::string>();
      }
    } else if (!c.is_null()) {
      throw BadRequest("invalid_type", "message 'content' must be a string or an array of text parts");
    }
    roles.push_back(role == "developer" ? "system" : role);
    contents.push_back(std::move(content));
  }
  std::vector<zf_chat_message> msgs;
  for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
  std::string out;
  const zf_status st = FetchString(
      [&](char* buf, size_t cap, size_t* needed) {
        return zf_chat_apply_template(model, msgs.data(), msgs.size(), ZF_CHAT_ADD_ASSISTANT, buf, cap, needed);
      },
      true, &out);
  if (st == ZF_ERR_INVALID_UTF8) throw BadRequest("invalid_utf8", "a message is not valid UTF-8");
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

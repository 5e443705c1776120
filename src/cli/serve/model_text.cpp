// Tokenizing and token text through the public C API.
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

std::string Meta(const zf_model* model, const char* key) {
  std::string out;
  if (FetchString([&](char* buf, size_t cap, size_t* needed) { return zf_model_meta(model, key, buf, cap, needed); },
                  true, &out) != ZF_OK) {
    return std::string();
  }
  return out;
}

}  // namespace cli::serve

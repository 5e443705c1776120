// /v1/embeddings and /v1/rerank: parsing, the library call, the answer.
#include "embeddings.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "model_text.h"

namespace cli::serve {

namespace {

// Token ids: a JSON array of integers, each inside the vocabulary.
std::vector<int32_t> TokenIds(const json& a, int32_t n_vocab, const std::string& where) {
  if (a.empty()) throw BadRequest("invalid_value", "'" + where + "' must not be empty");
  std::vector<int32_t> out;
  out.reserve(a.size());
  for (size_t j = 0; j < a.size(); ++j) {
    if (!a[j].is_number_integer()) {
      throw BadRequest("invalid_type", "'" + where + "' must be a list of token ids (integers)");
    }
    const int64_t v = a[j].get<int64_t>();
    if (v < 0 || v >= n_vocab) {
      throw BadRequest("invalid_value", "'" + where + "[" + std::to_string(j) + "]' = " + std::to_string(v) +
                                            " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
    }
    out.push_back(int32_t(v));
  }
  return out;
}

// A library failure: bad input is the client's (400), a missing head is the model's (501, as
// llama-server answers a /rerank it does not support), the rest is ours (500).
ApiError LibraryError(zf_status st) {
  if (st == ZF_ERR_INVALID_ARGUMENT || st == ZF_ERR_INVALID_UTF8) return BadRequest("invalid_value", zf_last_error());
  if (st == ZF_ERR_UNSUPPORTED) return {501, "not_supported_error", "not_supported", zf_last_error()};
  return ServerError(st);
}

// The tokens the library sees for a text (its special tokens added and parsed, as zf_embed does).
size_t CountTokens(const zf_model* model, const std::string& text, uint32_t flags) {
  return Tokenize(model, text, flags).size();
}

}  // namespace

EmbedRequest ParseEmbedRequest(const std::string& text, int32_t n_vocab) {
  const json body = ParseObject(text);
  EmbedRequest r;
  if (!body.contains("input")) throw BadRequest("missing_field", "'input' is required");
  const json& in = body["input"];
  if (in.is_string()) {
    r.texts.push_back(in.get<std::string>());
  } else if (in.is_array()) {
    if (in.empty()) throw BadRequest("invalid_value", "'input' must not be empty");
    if (in[0].is_number_integer()) {
      r.tokens.push_back(TokenIds(in, n_vocab, "input"));
    } else if (in[0].is_string()) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_string()) throw BadRequest("invalid_type", "'input' mixes strings with other types");
        r.texts.push_back(in[i].get<std::string>());
      }
    } else if (in[0].is_array()) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_array()) throw BadRequest("invalid_type", "'input' mixes token lists with other types");
        r.tokens.push_back(TokenIds(in[i], n_vocab, "input[" + std::to_string(i) + "]"));
      }
    } else {
      throw BadRequest("invalid_type",
                       "'input' must be a string, a list of strings, a list of token ids or a list of such lists");
    }
  } else {
    throw BadRequest("invalid_type",
                     "'input' must be a string, a list of strings, a list of token ids or a list of such lists");
  }
  for (size_t i = 0; i < r.texts.size(); ++i) {
    // The library rejects a text with no tokens; say which one before it does.
    if (r.texts[i].empty()) throw BadRequest("invalid_value", "'input[" + std::to_string(i) + "]' is empty");
  }
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    const json& f = body["encoding_format"];
    if (!f.is_string() || (f != "float" && f != "base64")) {
      throw BadRequest("invalid_value", "'encoding_format' must be \"float\" or \"base64\"");
    }
    r.base64 = f == "base64";
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const json& d = body["dimensions"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > INT32_MAX) {
      throw BadRequest("invalid_value", "'dimensions' must be a positive integer");
    }
    r.dimensions = int(d.get<int64_t>());
  }
  return r;
}

RerankRequest ParseRerankRequest(const std::string& text) {
  const json body = ParseObject(text);
  RerankRequest r;
  if (!body.contains("query")) throw BadRequest("missing_field", "'query' is required");
  if (!body["query"].is_string()) throw BadRequest("invalid_type", "'query' must be a string");
  r.query = body["query"].get<std::string>();
  if (!body.contains("documents")) throw BadRequest("missing_field", "'documents' is required");
  const json& docs = body["documents"];
  if (!docs.is_array() || docs.empty()) throw BadRequest("invalid_type", "'documents' must be a non-empty list of strings");
  for (size_t i = 0; i < docs.size(); ++i) {
    // Cohere and Jina also accept {"text": ...} objects.
    if (docs[i].is_string()) {
      r.documents.push_back(docs[i].get<std::string>());
    } else if (docs[i].is_object() && docs[i].contains("text") && docs[i]["text"].is_string()) {
      r.documents.push_back(docs[i]["text"].get<std::string>());
    } else {
      throw BadRequest("invalid_type", "'documents[" + std::to_string(i) + "]' must be a string");
    }
  }
  r.top_n = r.documents.size();
  if (body.contains("top_n") && !body["top_n"].is_null()) {
    const json& n = body["top_n"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1) throw BadRequest("invalid_value", "'top_n' must be a positive integer");
    r.top_n = std::min(r.documents.size(), size_t(n.get<int64_t>()));
  }
  for (const char* key : {"return_documents", "return_text"}) {  // Cohere's and llama-server's names
    if (body.contains(key) && !body[key].is_null()) {
      if (!body[key].is_boolean()) throw BadRequest("invalid_type", std::string("'") + key + "' must be a boolean");
      r.return_documents = r.return_documents || body[key].get<bool>();
    }
  }
  return r;
}

std::string Base64Floats(const float* v, size_t n) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = (u >> (8 * b)) & 0xff;  // little-endian on any host
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = bytes[i], b = i + 1 < bytes.size() ? bytes[i + 1] : 0, c = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const uint32_t t = (a << 16) | (b << 8) | c;
    out += kAlphabet[(t >> 18) & 63];
    out += kAlphabet[(t >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(t >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[t & 63] : '=';
  }
  return out;
}

json Embed(const EmbedContext& ctx, const EmbedRequest& r, uint64_t* n_tokens) {
  zf_embed_params p;
  zf_embed_params_init(&p, sizeof p);
  size_t full = 0;
  zf_status st = zf_embed_dimension(ctx.model, &p, &full);
  if (st != ZF_OK) throw LibraryError(st);
  if (r.dimensions > 0) {
    if (size_t(r.dimensions) > full) {
      throw BadRequest("invalid_value", "'dimensions' = " + std::to_string(r.dimensions) +
                                            " is larger than the model's embedding size (" + std::to_string(full) + ")");
    }
    p.dimensions = r.dimensions;
  }
  size_t dim = 0;
  st = zf_embed_dimension(ctx.model, &p, &dim);
  if (st != ZF_OK) throw LibraryError(st);

  // Lengths for usage and for a message that names the input that is too long.
  const bool by_tokens = !r.tokens.empty();
  const size_t n = by_tokens ? r.tokens.size() : r.texts.size();
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = by_tokens ? r.tokens[i].size()
                                 : CountTokens(ctx.model, r.texts[i], ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
    if (ctx.n_ctx_train > 0 && len > size_t(ctx.n_ctx_train)) {
      throw BadRequest("context_length_exceeded", "'input[" + std::to_string(i) + "]' has " + std::to_string(len) +
                                                      " tokens, more than the model's context (" +
                                                      std::to_string(ctx.n_ctx_train) + ")");
    }
    total += len;
  }

  // All inputs in one call: the library batches them.
  std::vector<float> out(n * dim);
  if (by_tokens) {
    std::vector<const int32_t*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = r.tokens[i].data();
      lens[i] = r.tokens[i].size();
    }
    st = zf_embed_tokens(ctx.model, &p, ptrs.data(), lens.data(), n, out.data(), out.size(), nullptr);
  } else {
    std::vector<const char*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = r.texts[i].data();
      lens[i] = r.texts[i].size();
    }
    st = zf_embed(ctx.model, &p, ptrs.data(), lens.data(), n, out.data(), out.size(), nullptr);
  }
  if (st != ZF_OK) throw LibraryError(st);

  json data = json::array();
  for (size_t i = 0; i < n; ++i) {
    const float* v = out.data() + i * dim;
    json e = {{"object", "embedding"}, {"index", i}};
    if (r.base64) e["embedding"] = Base64Floats(v, dim);
    else e["embedding"] = std::vector<float>(v, v + dim);
    data.push_back(std::move(e));
  }
  *n_tokens = total;
  return json{{"object", "list"},
              {"data", std::move(data)},
              {"model", ctx.alias},
              {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}};
}

json Rerank(const EmbedContext& ctx, const RerankRequest& r, uint64_t* n_tokens) {
  const size_t n = r.documents.size();
  std::vector<const char*> ptrs(n);
  std::vector<size_t> lens(n);
  for (size_t i = 0; i < n; ++i) {
    ptrs[i] = r.documents[i].data();
    lens[i] = r.documents[i].size();
  }
  std::vector<float> scores(n);
  const zf_status st = zf_rerank(ctx.model, nullptr, r.query.data(), r.query.size(), ptrs.data(), lens.data(), n,
                                 scores.data());
  if (st == ZF_ERR_UNSUPPORTED) {
    throw ApiError{501, "not_supported_error", "not_supported",
                   "model '" + ctx.alias + "' cannot rerank: it has no classification head (use a reranker such as "
                   "bge-reranker)"};
  }
  if (st != ZF_OK) throw LibraryError(st);

  // Usage: the query once per document plus each document (the pair template's few special
  // tokens are not counted).
  const uint64_t q = CountTokens(ctx.model, r.query, ZF_TOKENIZE_PARSE_SPECIAL);
  uint64_t total = 0;
  for (const std::string& d : r.documents) total += q + CountTokens(ctx.model, d, ZF_TOKENIZE_PARSE_SPECIAL);

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep the documents' order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  json results = json::array();
  for (size_t k = 0; k < r.top_n; ++k) {
    json e = {{"index", order[k]}, {"relevance_score", scores[order[k]]}};
    if (r.return_documents) e["document"] = {{"text", r.documents[order[k]]}};
    results.push_back(std::move(e));
  }
  *n_tokens = total;
  return json{{"object", "list"},
              {"model", ctx.alias},
              {"results", std::move(results)},
              {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}};
}

}  // namespace cli::serve

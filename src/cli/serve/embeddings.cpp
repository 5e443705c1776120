// /v1/embeddings and /v1/rerank: parsing, the library call, the answer.
#include "embeddings.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "../common.h"
#include "../data_url.h"
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

// How zf_rerank formats a (query, document) pair: the file's rerank template, else
// [BOS] query [EOS] [SEP] document [EOS], each special token where the vocabulary adds it.
struct PairFormat {
  std::string tmpl;      // tokenizer.chat_template.rerank, "" for none
  size_t n_special = 0;  // without a template: the special tokens around the two texts
};

PairFormat ReadPairFormat(const zf_model* model) {
  PairFormat f;
  f.tmpl = Meta(model, "tokenizer.chat_template.rerank");
  if (!f.tmpl.empty()) return f;
  // The tokenizer's own choice of BOS / EOS (which may differ from the file's flags): what it
  // adds around one text.
  zf_model_summary info{};
  info.struct_size = sizeof info;
  zf_model_info(model, &info);
  const std::vector<int32_t> plain = Tokenize(model, "a", 0);
  const std::vector<int32_t> framed = Tokenize(model, "a", ZF_TOKENIZE_ADD_SPECIAL);
  const bool bert = Meta(model, "tokenizer.ggml.model") == "bert";
  const bool add_bos = framed.size() > plain.size() && (bert || framed.front() == info.token_bos);
  const bool add_eos = !bert && framed.size() > plain.size() && info.token_eos >= 0 && framed.back() == info.token_eos;
  const std::string sep_flag = Meta(model, "tokenizer.ggml.add_sep_token");
  const bool add_sep = sep_flag.empty() ? bert : sep_flag == "true";
  const bool has_sep = bert || !Meta(model, "tokenizer.ggml.seperator_token_id").empty();
  f.n_special = size_t(add_bos) + 2 * size_t(add_eos) + size_t(add_sep && has_sep);
  return f;
}

std::string FillPair(std::string prompt, const std::string& query, const std::string& doc) {
  for (const auto& [key, value] : {std::pair<std::string, const std::string&>{"{query}", query}, {"{document}", doc}}) {
    for (size_t at = prompt.find(key); at != std::string::npos; at = prompt.find(key, at + value.size())) {
      prompt.replace(at, key.size(), value);
    }
  }
  return prompt;
}

}  // namespace

EmbedRequest ParseEmbedRequest(const std::string& text, int32_t n_vocab, size_t max_inputs) {
  const json body = ParseObject(text);
  EmbedRequest r;
  if (body.contains("input") && body["input"].is_array() && body["input"].size() > max_inputs &&
      !body["input"][0].is_number()) {
    throw BadRequest("too_many_inputs", "'input' has " + std::to_string(body["input"].size()) +
                                            " inputs; this server takes at most " + std::to_string(max_inputs) +
                                            " per request (--max-inputs)");
  }
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
  if (body.contains("truncate_prompt_tokens") && !body["truncate_prompt_tokens"].is_null()) {  // vLLM's
    const json& t = body["truncate_prompt_tokens"];
    if (!t.is_number_integer() || (t.get<int64_t>() < 1 && t.get<int64_t>() != -1)) {
      throw BadRequest("invalid_value", "'truncate_prompt_tokens' must be a positive integer or -1 (the context)");
    }
    r.keep_last = t.get<int64_t>();
  }
  if (body.contains("truncate") && !body["truncate"].is_null()) {  // Ollama's and TEI's
    if (!body["truncate"].is_boolean()) throw BadRequest("invalid_type", "'truncate' must be a boolean");
    r.keep_first = body["truncate"].get<bool>();
  }
  if (r.keep_first && r.keep_last != 0) {
    throw BadRequest("invalid_value", "'truncate' and 'truncate_prompt_tokens' both truncate; give one");
  }
  return r;
}

RerankRequest ParseRerankRequest(const std::string& text, size_t max_documents) {
  const json body = ParseObject(text);
  RerankRequest r;
  if (!body.contains("query")) throw BadRequest("missing_field", "'query' is required");
  if (!body["query"].is_string()) throw BadRequest("invalid_type", "'query' must be a string");
  r.query = body["query"].get<std::string>();
  if (r.query.empty()) throw BadRequest("invalid_value", "'query' is empty");
  if (!body.contains("documents")) throw BadRequest("missing_field", "'documents' is required");
  const json& docs = body["documents"];
  if (!docs.is_array() || docs.empty()) throw BadRequest("invalid_type", "'documents' must be a non-empty list of strings");
  if (docs.size() > max_documents) {
    throw BadRequest("too_many_documents", "'documents' has " + std::to_string(docs.size()) +
                                               " documents; this server takes at most " +
                                               std::to_string(max_documents) + " per request (--max-documents)");
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    // Cohere and Jina also accept {"text": ...} objects.
    if (docs[i].is_string()) {
      r.documents.push_back(docs[i].get<std::string>());
    } else if (docs[i].is_object() && docs[i].contains("text") && docs[i]["text"].is_string()) {
      r.documents.push_back(docs[i]["text"].get<std::string>());
    } else {
      throw BadRequest("invalid_type", "'documents[" + std::to_string(i) + "]' must be a string");
    }
    if (r.documents.back().empty()) throw BadRequest("invalid_value", "'documents[" + std::to_string(i) + "]' is empty");
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
  std::vector<unsigned char> bytes(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = (u >> (8 * b)) & 0xff;  // little-endian on any host
  }
  return Base64Encode(bytes.data(), bytes.size());
}

json Embed(const EmbedContext& ctx, const EmbedRequest& r, uint64_t* n_tokens) {
  zf_embed_params p;
  zf_embed_params_init(&p, sizeof p);
  p.pooling = ctx.pooling;
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

  // Lengths for usage and for a message that names the input that is too long. Texts are
  // tokenized here as zf_embed tokenizes them; truncated ones are embedded from their tokens.
  const bool by_tokens = !r.tokens.empty();
  const size_t n = by_tokens ? r.tokens.size() : r.texts.size();
  const size_t limit = size_t(std::max(ctx.n_ctx, 1));
  const bool truncating = r.keep_first || r.keep_last != 0;
  const size_t keep = r.keep_last > 0 ? size_t(r.keep_last) : limit;
  if (keep > limit) {
    throw BadRequest("invalid_value", "'truncate_prompt_tokens' = " + std::to_string(keep) +
                                          " is more than this server's context (" + std::to_string(limit) + " tokens)");
  }
  std::vector<std::vector<int32_t>> cut;  // the inputs' tokens when truncating
  if (truncating) cut.resize(n);
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> toks;
    if (!by_tokens) toks = Tokenize(ctx.model, r.texts[i], ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
    const std::vector<int32_t>& t = by_tokens ? r.tokens[i] : toks;
    size_t len = t.size();
    if (truncating) {
      const size_t k = r.keep_last != 0 ? keep : limit;
      if (r.keep_last != 0 && len > k) cut[i].assign(t.end() - ptrdiff_t(k), t.end());  // the last k
      else if (len > k) cut[i].assign(t.begin(), t.begin() + ptrdiff_t(k));            // the first k
      else cut[i] = t;
      len = cut[i].size();
    } else if (len > limit) {
      throw BadRequest("context_length_exceeded",
                       "'input[" + std::to_string(i) + "]' has " + std::to_string(len) +
                           " tokens, more than this server's context of " + std::to_string(limit) +
                           " tokens; shorten it or send \"truncate\": true (or \"truncate_prompt_tokens\")");
    }
    total += len;
  }

  // All inputs in one call: the library batches them.
  std::vector<float> out(n * dim);
  if (by_tokens || truncating) {
    const std::vector<std::vector<int32_t>>& inputs = truncating ? cut : r.tokens;
    std::vector<const int32_t*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = inputs[i].data();
      lens[i] = inputs[i].size();
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
  // Usage and the length check: the tokens of each formatted pair, counted as the library
  // formats it (zf_rerank's doc, runtime/embedder.cpp FormatRerankPair).
  const PairFormat format = ReadPairFormat(ctx.model);
  const size_t limit = size_t(std::max(ctx.n_ctx, 1));
  const size_t q = format.tmpl.empty() ? CountTokens(ctx.model, r.query, 0) : 0;
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = format.tmpl.empty() ? q + CountTokens(ctx.model, r.documents[i], 0) + format.n_special
                                           : CountTokens(ctx.model, FillPair(format.tmpl, r.query, r.documents[i]),
                                                         ZF_TOKENIZE_PARSE_SPECIAL);
    if (len > limit) {
      throw BadRequest("context_length_exceeded",
                       "the query with 'documents[" + std::to_string(i) + "]' has " + std::to_string(len) +
                           " tokens, more than this server's context of " + std::to_string(limit) + " tokens");
    }
    total += len;
  }
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

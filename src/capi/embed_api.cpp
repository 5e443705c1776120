// C entry points for embeddings: params, dimension, texts or token arrays to pooled vectors
// (runtime/embedder.h does the work).
#include <cstddef>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "runtime/embedder.h"

using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(sizeof(zf_embed_params) == 24, "zf_embed_params layout is part of the ABI");
static_assert(offsetof(zf_embed_params, reserved) == 20, "fields are appended, never moved");

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

// The caller's params checked and turned into options.
zf_status ReadOptions(const zf_embed_params* params, zf::rt::EmbedOptions* o) {
  zf_embed_params p;
  zf_embed_params_init(&p, sizeof p);
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags, ZF_EMBED_NO_NORMALIZE)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved", p.reserved)) return e;
  if (p.pooling < ZF_POOLING_DEFAULT || p.pooling > ZF_POOLING_RANK) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->pooling " + std::to_string(p.pooling) +
                                             " is unknown (ZF_POOLING_DEFAULT, NONE, MEAN, CLS, LAST or RANK)");
  }
  if (p.n_threads < 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->n_threads must be >= 0");
  o->pooling = static_cast<zf::model::Pooling>(p.pooling);
  o->normalize = (p.flags & ZF_EMBED_NO_NORMALIZE) == 0;
  o->dimensions = p.dimensions;
  o->n_threads = p.n_threads;
  return ZF_OK;
}

// Checks the output buffer, then runs the inputs.
zf_status Run(const zf_model* model, const zf::rt::EmbedOptions& o, const std::vector<std::vector<int32_t>>& inputs,
              float* out, size_t cap, size_t* needed) {
  int32_t dim = 0;
  zf::Status s = zf::rt::EmbedDimension(*model->impl, o, &dim);
  if (!s.ok()) return Fail(s);
  const size_t total = inputs.size() * size_t(dim);
  if (needed != nullptr) *needed = total;
  if (total > 0 && (out == nullptr || cap < total)) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, std::to_string(inputs.size()) + " vectors of " + std::to_string(dim) +
                                             " floats do not fit in a buffer of " +
                                             std::to_string(out == nullptr ? 0 : cap));
  }
  s = zf::rt::Embed(*model->impl, inputs, o, out);
  if (!s.ok()) return Fail(s);
  return Succeed();
}

}  // namespace

extern "C" {

ZF_API zf_status zf_embed_params_init(zf_embed_params* params, size_t size) {
  zf_embed_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.pooling = ZF_POOLING_DEFAULT;
  return zf::capi::InitParams(params, size, d);
}

ZF_API zf_status zf_embed_dimension(const zf_model* model, const zf_embed_params* params, size_t* dim) {
  if (dim != nullptr) *dim = 0;
  if (model == nullptr) return NullArg("model");
  if (dim == nullptr) return NullArg("dim");
  ZF_GUARD_BEGIN
  zf::rt::EmbedOptions o;
  if (zf_status e = ReadOptions(params, &o)) return e;
  int32_t d = 0;
  zf::Status s = zf::rt::EmbedDimension(*model->impl, o, &d);
  if (!s.ok()) return Fail(s);
  *dim = size_t(d);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_embed(const zf_model* model, const zf_embed_params* params, const char* const* texts,
                          const size_t* lens, size_t n, float* out, size_t cap, size_t* needed) {
  if (needed != nullptr) *needed = 0;
  if (model == nullptr) return NullArg("model");
  if (n > 0 && texts == nullptr) return NullArg("texts");
  if (n > 0 && lens == nullptr) return NullArg("lens");
  ZF_GUARD_BEGIN
  zf::rt::EmbedOptions o;
  if (zf_status e = ReadOptions(params, &o)) return e;
  std::vector<std::vector<int32_t>> inputs(n);
  for (size_t i = 0; i < n; ++i) {
    if (texts[i] == nullptr && lens[i] > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "texts[" + std::to_string(i) + "] is NULL");
    // As llama-embedding tokenizes: special tokens added, special-token text parsed.
    zf::Status s = model->impl->tokenizer().Encode(std::string_view(texts[i] == nullptr ? "" : texts[i], lens[i]), true,
                                                   true, &inputs[i]);
    if (!s.ok()) return Fail(static_cast<int32_t>(s.code()), "texts[" + std::to_string(i) + "]: " + s.message());
  }
  return Run(model, o, inputs, out, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_embed_tokens(const zf_model* model, const zf_embed_params* params, const int32_t* const* tokens,
                                 const size_t* n_tokens, size_t n, float* out, size_t cap, size_t* needed) {
  if (needed != nullptr) *needed = 0;
  if (model == nullptr) return NullArg("model");
  if (n > 0 && tokens == nullptr) return NullArg("tokens");
  if (n > 0 && n_tokens == nullptr) return NullArg("n_tokens");
  ZF_GUARD_BEGIN
  zf::rt::EmbedOptions o;
  if (zf_status e = ReadOptions(params, &o)) return e;
  std::vector<std::vector<int32_t>> inputs(n);
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] == nullptr && n_tokens[i] > 0) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "tokens[" + std::to_string(i) + "] is NULL");
    }
    if (n_tokens[i] > 0) inputs[i].assign(tokens[i], tokens[i] + n_tokens[i]);
  }
  return Run(model, o, inputs, out, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_rerank(const zf_model* model, const zf_embed_params* params, const char* query, size_t query_len,
                           const char* const* docs, const size_t* doc_lens, size_t n_docs, float* scores) {
  if (model == nullptr) return NullArg("model");
  if (query == nullptr && query_len > 0) return NullArg("query");
  if (n_docs > 0 && docs == nullptr) return NullArg("docs");
  if (n_docs > 0 && doc_lens == nullptr) return NullArg("doc_lens");
  if (n_docs > 0 && scores == nullptr) return NullArg("scores");
  ZF_GUARD_BEGIN
  zf::rt::EmbedOptions o;
  if (zf_status e = ReadOptions(params, &o)) return e;
  if (o.pooling != zf::model::Pooling::kUnspecified && o.pooling != zf::model::Pooling::kRank) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->pooling must be ZF_POOLING_DEFAULT or ZF_POOLING_RANK for zf_rerank");
  }
  if (!o.normalize || o.dimensions != 0) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->flags and params->dimensions must be 0 for zf_rerank");
  }
  o.pooling = zf::model::Pooling::kRank;
  int32_t dim = 0;
  zf::Status s = zf::rt::EmbedDimension(*model->impl, o, &dim);
  if (!s.ok()) return Fail(s);
  const std::string_view q(query == nullptr ? "" : query, query_len);
  std::vector<std::vector<int32_t>> inputs(n_docs);
  for (size_t i = 0; i < n_docs; ++i) {
    if (docs[i] == nullptr && doc_lens[i] > 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "docs[" + std::to_string(i) + "] is NULL");
    s = zf::rt::FormatRerankPair(*model->impl, q, std::string_view(docs[i] == nullptr ? "" : docs[i], doc_lens[i]),
                                 &inputs[i]);
    if (!s.ok()) return Fail(static_cast<int32_t>(s.code()), "query or docs[" + std::to_string(i) + "]: " + s.message());
  }
  if (n_docs == 0) return Succeed();
  std::vector<float> all(n_docs * size_t(dim));
  s = zf::rt::Embed(*model->impl, inputs, o, all.data());
  if (!s.ok()) return Fail(s);
  for (size_t i = 0; i < n_docs; ++i) scores[i] = all[i * size_t(dim)];
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"

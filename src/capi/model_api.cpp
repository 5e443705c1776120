// C entry points for models, metadata and the tokenizer (chat templates: chat_api.cpp).
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "model/registry.h"
#include "common/log.h"
#include "common/utf8.h"

using zf::capi::CopyOut;
using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(sizeof(zf_model_params) == 56, "zf_model_params layout is part of the ABI");
static_assert(offsetof(zf_model_params, max_batch) == 40, "fields are appended, never moved");
static_assert(offsetof(zf_model_params, prefix_cache_mib) == 48, "fields are appended, never moved");
static_assert(sizeof(zf_cache_info) == 64, "zf_cache_info layout is part of the ABI");
static_assert(sizeof(zf_model_summary) == 112, "zf_model_summary layout is part of the ABI");
static_assert(offsetof(zf_model_summary, token_fim_pre) == 88, "fields are appended, never moved");

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

// zf_model_params.prefix_cache_mib = 0: room for a 2k-token shared prompt of a 7B model (~256
// MiB of F16 rows at 128 KiB per token) or ~160k tokens of SmolLM2.
constexpr uint64_t kDefaultPrefixCacheMib = 256;

}  // namespace

extern "C" {

ZF_API zf_status zf_model_params_init(zf_model_params* params, size_t size) {
  zf_model_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.device = ZF_DEVICE_AUTO;
  return zf::capi::InitParams(params, size, d);
}

ZF_API zf_status zf_model_load(const char* path, const zf_model_params* params, zf_model** out) {
  if (out != nullptr) *out = nullptr;
  if (path == nullptr) return NullArg("path");
  if (out == nullptr) return NullArg("out");
  ZF_GUARD_BEGIN
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  if (p.device < ZF_DEVICE_AUTO || p.device > ZF_DEVICE_CUDA) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "unknown device " + std::to_string(p.device));
  }
  if (p.n_threads < 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "n_threads must be >= 0");
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags, ZF_MODEL_VOCAB_ONLY | ZF_MODEL_NO_MMAP)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved0", p.reserved0)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved1", p.reserved1)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved2", p.reserved2)) return e;
  if (p.prefix_cache_mib < -1 || p.prefix_cache_mib > (1 << 20)) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "prefix_cache_mib must be -1 (off), 0 (default) or a size up to 1048576 MiB, got " +
                                             std::to_string(p.prefix_cache_mib));
  }
  if (p.max_batch < 0 || p.max_batch > zf::rt::Batcher::kMaxBatchLimit) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "max_batch must be between 0 and " +
                                             std::to_string(zf::rt::Batcher::kMaxBatchLimit) + ", got " +
                                             std::to_string(p.max_batch));
  }
  zf::model::LoadOptions o;
  o.vocab_only = (p.flags & ZF_MODEL_VOCAB_ONLY) != 0;
  o.no_mmap = (p.flags & ZF_MODEL_NO_MMAP) != 0;
  o.device = static_cast<zf::model::Device>(p.device);
  o.gpu_index = p.gpu_index;
  o.n_threads = p.n_threads;
  o.progress = p.progress;
  o.progress_user_data = p.progress_user_data;
  std::unique_ptr<zf::model::Model> loaded;
  zf::Status s = zf::model::Model::Load(path, o, &loaded);
  if (!s.ok()) return Fail(s);
  zf::rt::ServeOptions so;
  so.max_batch = p.max_batch;
  so.n_threads = p.n_threads;
  so.prefix_cache_bytes = p.prefix_cache_mib < 0 ? 0 : (p.prefix_cache_mib == 0 ? kDefaultPrefixCacheMib : uint64_t(p.prefix_cache_mib)) << 20;
  std::unique_ptr<zf_model> m(new zf_model());
  s = zf::rt::ServedModel::Create(std::move(loaded), so, &m->served);
  if (!s.ok()) return Fail(s);
  m->impl = &m->served->model();
  *out = m.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_model_cache_info(const zf_model* model, zf_cache_info* info) {
  if (model == nullptr) return NullArg("model");
  if (info == nullptr) return NullArg("info");
  if (info->struct_size < sizeof(uint32_t) * 2) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "info->struct_size must be set to sizeof(zf_cache_info)");
  }
  zf_cache_info c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = info->struct_size < sizeof c ? info->struct_size : uint32_t(sizeof c);
  if (const zf::rt::PrefixCache* cache = model->served->prefix_cache(); cache != nullptr) {
    const zf::rt::PrefixCache::Stats st = cache->stats();
    c.block_tokens = zf::rt::PrefixCache::kBlockTokens;
    c.capacity_bytes = st.capacity_bytes;
    c.bytes = st.bytes;
    c.blocks = st.blocks;
    c.hit_tokens = st.hit_tokens;
    c.stored_blocks = st.stored_blocks;
    c.evicted_blocks = st.evicted_blocks;
    c.mapped_blocks = st.mapped_blocks;
  }
  std::memcpy(info, &c, c.struct_size);
  return Succeed();
}

ZF_API void zf_model_free(zf_model* model) { zf::capi::ReleaseModel(model); }

ZF_API zf_status zf_model_info(const zf_model* model, zf_model_summary* info) {
  if (model == nullptr) return NullArg("model");
  if (info == nullptr) return NullArg("info");
  if (info->struct_size < sizeof(uint32_t) * 2) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "info->struct_size must be set to sizeof(zf_model_summary)");
  }
  const zf::model::Model& m = *model->impl;
  const zf::model::ModelDesc& c = m.desc();
  // The first attention layer's heads (a hybrid's recurrent layers have none).
  zf::model::AttentionDesc a0;
  for (const zf::model::LayerDesc& l : c.layers) {
    if (l.attention()) {
      a0 = l.attn;
      break;
    }
  }
  const zf::tok::Tokenizer& t = m.tokenizer();
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = info->struct_size < sizeof s ? info->struct_size : static_cast<uint32_t>(sizeof s);
  s.backend = m.device() == zf::model::Device::kCuda ? ZF_DEVICE_CUDA : ZF_DEVICE_CPU;
  s.architecture = c.arch.c_str();
  s.name = m.name().c_str();
  s.quant = m.quant_name().c_str();
  s.n_params = c.n_params;
  s.file_size = m.file().file_size();
  s.n_ctx_train = c.n_ctx_train;
  s.n_vocab = c.n_vocab;
  s.n_layer = c.n_layer;
  s.n_embd = c.n_embd;
  s.n_head = a0.n_head;
  s.n_head_kv = a0.n_head_kv;
  s.token_bos = t.bos();
  s.token_eos = t.eos();
  s.token_eot = t.eot();
  s.n_tensors = static_cast<int32_t>(m.file().tensors().size());
  const zf::tok::FimTokens& fim = t.fim();
  s.token_fim_pre = fim.pre;
  s.token_fim_suf = fim.suf;
  s.token_fim_mid = fim.mid;
  s.token_fim_pad = fim.pad;
  s.token_fim_rep = fim.rep;
  s.token_fim_sep = fim.sep;
  std::memcpy(info, &s, s.struct_size);
  return Succeed();
}

ZF_API zf_status zf_architectures(char* buf, size_t cap, size_t* needed) {
  std::string list;
  for (const char* name : zf::model::SupportedArchs()) list += std::string(list.empty() ? "" : ",") + name;
  return CopyOut(list, buf, cap, needed);
}

ZF_API zf_status zf_model_meta(const zf_model* model, const char* key, char* buf, size_t cap, size_t* needed) {
  if (model == nullptr) return NullArg("model");
  if (key == nullptr) return NullArg("key");
  ZF_GUARD_BEGIN
  const zf::gguf::Value* v = model->impl->file().Find(key);
  if (v == nullptr) return Fail(ZF_ERR_NOT_FOUND, std::string("no metadata key '") + key + "'");
  return CopyOut(zf::gguf::GgufFile::ValueToString(*v), buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_tokenize(const zf_model* model, const char* text, size_t len, uint32_t flags, int32_t* tokens,
                             size_t cap, size_t* n) {
  if (n != nullptr) *n = 0;
  if (model == nullptr) return NullArg("model");
  if (text == nullptr && len > 0) return NullArg("text");
  if (n == nullptr) return NullArg("n");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL)) return e;
  ZF_GUARD_BEGIN
  std::vector<int32_t> ids;
  zf::Status s = model->impl->tokenizer().Encode(std::string_view(text == nullptr ? "" : text, len),
                                                 (flags & ZF_TOKENIZE_ADD_SPECIAL) != 0,
                                                 (flags & ZF_TOKENIZE_PARSE_SPECIAL) != 0, &ids);
  if (!s.ok()) return Fail(s);
  *n = ids.size();
  if (tokens == nullptr || cap < ids.size()) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, std::to_string(ids.size()) + " tokens do not fit in a buffer of " +
                                             std::to_string(tokens == nullptr ? 0 : cap));
  }
  std::copy(ids.begin(), ids.end(), tokens);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_detokenize(const zf_model* model, const int32_t* tokens, size_t n, uint32_t flags, char* buf,
                               size_t cap, size_t* needed) {
  if (model == nullptr) return NullArg("model");
  if (tokens == nullptr && n > 0) return NullArg("tokens");
  if (zf_status e = zf::capi::CheckFlags("flags", flags, ZF_DETOKENIZE_REMOVE_SPECIAL | ZF_DETOKENIZE_RENDER_SPECIAL)) {
    return e;
  }
  ZF_GUARD_BEGIN
  std::string text;
  zf::Status s = model->impl->tokenizer().Decode(tokens, n, (flags & ZF_DETOKENIZE_REMOVE_SPECIAL) != 0,
                                                 (flags & ZF_DETOKENIZE_RENDER_SPECIAL) != 0, &text);
  if (!s.ok()) return Fail(s);
  return CopyOut(text, buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_token_to_piece(const zf_model* model, int32_t token, uint32_t flags, char* buf, size_t cap,
                                   size_t* needed) {
  if (model == nullptr) return NullArg("model");
  // REMOVE_SPECIAL is accepted (a known detokenize bit) and has no effect on one piece.
  if (zf_status e = zf::capi::CheckFlags("flags", flags, ZF_DETOKENIZE_REMOVE_SPECIAL | ZF_DETOKENIZE_RENDER_SPECIAL)) {
    return e;
  }
  const zf::tok::Tokenizer& t = model->impl->tokenizer();
  if (token < 0 || token >= t.n_vocab()) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "token " + std::to_string(token) + " is outside the vocabulary [0, " +
                                             std::to_string(t.n_vocab()) + ")");
  }
  ZF_GUARD_BEGIN
  const std::string piece = t.TokenToPiece(token, (flags & ZF_DETOKENIZE_RENDER_SPECIAL) != 0);
  if (needed != nullptr) *needed = piece.size();
  if (cap < piece.size() || (buf == nullptr && !piece.empty())) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "piece of " + std::to_string(piece.size()) + " bytes does not fit in " +
                                             std::to_string(cap));
  }
  if (!piece.empty()) std::memcpy(buf, piece.data(), piece.size());
  return Succeed();
  ZF_GUARD_END
}

}  // extern "C"

// C entry points for sessions, evaluation and streaming generation.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "capi/handles.h"
#include "runtime/constraint.h"
#include "runtime/generator.h"

using zf::capi::Fail;
using zf::capi::InitParams;
using zf::capi::Succeed;

static_assert(sizeof(zf_session_params) == 32 && offsetof(zf_session_params, flags) == 16 &&
                  offsetof(zf_session_params, kv_type_v) == 24,
              "zf_session_params layout is part of the ABI");
static_assert(offsetof(zf_generate_params, n_logprobs) == 64, "zf_generate_params layout is part of the ABI");
static_assert(offsetof(zf_generate_params, constraint) == 72 &&
                  offsetof(zf_generate_params, constraint_kind) == 80 && offsetof(zf_generate_params, reserved2) == 84 &&
                  offsetof(zf_generate_params, constraint_trigger) == 88 &&
                  offsetof(zf_generate_params, draft_max) == 96 && sizeof(zf_generate_params) == 104,
              "zf_generate_params layout is part of the ABI");
static_assert(ZF_MAX_DRAFT + 1 == zf::rt::Session::kMaxVerify, "a draft and the token before it fit one verification");
static_assert(ZF_CONSTRAINT_JSON_SCHEMA == int32_t(zf::rt::ConstraintKind::kJsonSchema) &&
                  ZF_CONSTRAINT_REGEX == int32_t(zf::rt::ConstraintKind::kRegex) &&
                  ZF_CONSTRAINT_CHOICE == int32_t(zf::rt::ConstraintKind::kChoice) &&
                  ZF_CONSTRAINT_LARK == int32_t(zf::rt::ConstraintKind::kLark),
              "ZF_CONSTRAINT_* match the runtime");
static_assert(sizeof(zf_generate_result) == 40 && offsetof(zf_generate_result, n_drafted) == 32,
              "zf_generate_result layout is part of the ABI");
static_assert(sizeof(zf_token_logprob) == 8 && offsetof(zf_token_logprob, logprob) == 4,
              "zf_token_logprob layout is part of the ABI");
static_assert(sizeof(zf_token_logprob) == sizeof(zf::rt::TokenLogprob) &&
                  offsetof(zf::rt::TokenLogprob, logprob) == offsetof(zf_token_logprob, logprob),
              "zf_token_logprob mirrors zf::rt::TokenLogprob");
static_assert(ZF_MAX_LOGPROBS == zf::rt::kMaxLogprobs, "ZF_MAX_LOGPROBS matches the runtime");

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

zf_generate_params DefaultGenerateParams() {
  zf_generate_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.max_tokens = 256;
  d.temperature = 0.8f;
  d.top_k = 40;
  d.top_p = 0.95f;
  d.min_p = 0.05f;
  d.repeat_penalty = 1.0f;
  d.repeat_last_n = 64;
  d.seed = UINT64_MAX;
  return d;
}

struct StreamCtx {
  zf_stream_cb cb;
  void* user_data;
};

bool Stream(void* p, std::string_view piece, int32_t token) {
  StreamCtx* c = static_cast<StreamCtx*>(p);
  return c->cb(c->user_data, piece.data(), piece.size(), token) != 0;
}

}  // namespace

namespace zf::capi {

zf_status ToGenerateOptions(const zf_generate_params* params, zf::rt::GenerateOptions* out) {
  zf_generate_params p = DefaultGenerateParams();
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  if (p.n_stop > 0 && p.stop == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "n_stop > 0 but stop is NULL");
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags,
                                         ZF_GENERATE_NO_SPECIAL | ZF_GENERATE_NO_PARSE_SPECIAL | ZF_GENERATE_IGNORE_EOS)) {
    return e;
  }
  if (zf_status e = zf::capi::CheckReserved("params->reserved0", p.reserved0)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved1", p.reserved1)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved2", p.reserved2)) return e;
  if (p.constraint_kind < ZF_CONSTRAINT_NONE || p.constraint_kind > ZF_CONSTRAINT_LARK) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->constraint_kind " + std::to_string(p.constraint_kind) +
                                             " is not a ZF_CONSTRAINT_* value");
  }
  if (p.constraint_kind == ZF_CONSTRAINT_NONE && p.constraint != nullptr) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->constraint is set but params->constraint_kind is ZF_CONSTRAINT_NONE");
  }
  if (p.constraint_kind != ZF_CONSTRAINT_NONE && p.constraint == nullptr) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->constraint_kind is set but params->constraint is NULL");
  }
  if (p.constraint_trigger != nullptr && p.constraint_kind == ZF_CONSTRAINT_NONE) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->constraint_trigger is set without a constraint");
  }
  if (p.draft_max < 0 || p.draft_max > ZF_MAX_DRAFT || p.draft_min < 0 || p.draft_min > ZF_MAX_DRAFT) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->draft_max and draft_min must be within 0.." +
                                             std::to_string(ZF_MAX_DRAFT) + ", got " + std::to_string(p.draft_max) +
                                             " and " + std::to_string(p.draft_min));
  }
  if (p.n_logprobs < 0 || p.n_logprobs > ZF_MAX_LOGPROBS) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->n_logprobs " + std::to_string(p.n_logprobs) + " is outside 0.." +
                                             std::to_string(ZF_MAX_LOGPROBS));
  }
  if (!(p.temperature >= 0.0f) || !(p.top_p >= 0.0f) || !(p.min_p >= 0.0f) || !(p.repeat_penalty > 0.0f)) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "sampling parameters out of range (temperature, top_p, min_p >= 0; "
                                         "repeat_penalty > 0)");
  }
  out->max_tokens = p.max_tokens;
  out->sampler.temperature = p.temperature;
  out->sampler.top_k = p.top_k;
  out->sampler.top_p = p.top_p;
  out->sampler.min_p = p.min_p;
  out->sampler.repeat_penalty = p.repeat_penalty;
  out->sampler.repeat_last_n = p.repeat_last_n;
  out->sampler.seed = p.seed == UINT64_MAX ? (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}() : p.seed;
  for (size_t i = 0; i < p.n_stop; ++i) {
    if (p.stop[i] == nullptr) return Fail(ZF_ERR_INVALID_ARGUMENT, "stop[" + std::to_string(i) + "] is NULL");
    if (p.stop[i][0] != '\0') out->stop.emplace_back(p.stop[i]);
  }
  out->add_special = (p.flags & ZF_GENERATE_NO_SPECIAL) == 0;
  out->parse_special = (p.flags & ZF_GENERATE_NO_PARSE_SPECIAL) == 0;
  out->ignore_eos = (p.flags & ZF_GENERATE_IGNORE_EOS) != 0;
  out->n_logprobs = p.n_logprobs;
  out->constraint_kind = zf::rt::ConstraintKind(p.constraint_kind);
  if (p.constraint != nullptr) out->constraint = p.constraint;
  if (p.constraint_trigger != nullptr) out->constraint_trigger = p.constraint_trigger;
  out->draft.max = p.draft_max;
  out->draft.min = std::max(1, p.draft_min);
  return ZF_OK;
}

}  // namespace zf::capi

namespace {

zf_status Busy(const zf_session* s) {
  return Fail(ZF_ERR_INVALID_ARGUMENT, s->freed ? "session was freed"
                                                : "session has a generation in progress (zf_generate_begin); "
                                                  "finish or free it first");
}

void CopyResult(const zf::rt::GenerateResult& r, zf_generate_result* out) {
  zf_generate_result res;
  res.struct_size = out->struct_size < sizeof res ? out->struct_size : uint32_t(sizeof res);
  res.stop_reason = static_cast<int32_t>(r.stop_reason);
  res.n_prompt = r.n_prompt;
  res.n_generated = r.n_generated;
  res.prompt_ms = r.prompt_ms;
  res.decode_ms = r.decode_ms;
  res.n_drafted = r.n_drafted;
  res.n_accepted = r.n_accepted;
  std::memcpy(out, &res, res.struct_size);
}

}  // namespace

namespace zf::capi {

void ReleaseSession(zf_session* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  zf_model* model = s->model;
  zf_model* draft_model = s->draft_model;
  delete s;  // the session (which refers to the model) goes first
  zf::capi::ReleaseModel(model);
  if (draft_model != nullptr) zf::capi::ReleaseModel(draft_model);
}

}  // namespace zf::capi

static_assert(int(zf::engine::KvType::kF32) == ZF_KV_F32 && int(zf::engine::KvType::kF16) == ZF_KV_F16 &&
                  int(zf::engine::KvType::kQ8_0) == ZF_KV_Q8_0 && int(zf::engine::KvType::kQ4_0) == ZF_KV_Q4_0,
              "ZF_KV_* and engine::KvType agree");

extern "C" {

ZF_API zf_status zf_session_params_init(zf_session_params* params, size_t size) {
  zf_session_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.kv_type = ZF_KV_F16;
  d.kv_type_v = ZF_KV_SAME;
  return InitParams(params, size, d);
}

ZF_API zf_status zf_session_create(zf_model* model, const zf_session_params* params, zf_session** out) {
  if (out != nullptr) *out = nullptr;
  if (model == nullptr) return NullArg("model");
  if (out == nullptr) return NullArg("out");
  ZF_GUARD_BEGIN
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  if (p.kv_type < ZF_KV_F32 || p.kv_type > ZF_KV_Q4_0) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->kv_type: unknown KV cache type " + std::to_string(p.kv_type) +
                                             " (ZF_KV_F32, ZF_KV_F16, ZF_KV_Q8_0 or ZF_KV_Q4_0)");
  }
  if (p.kv_type_v != ZF_KV_SAME && (p.kv_type_v < ZF_KV_F32 || p.kv_type_v > ZF_KV_Q4_0)) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->kv_type_v: unknown KV cache type " + std::to_string(p.kv_type_v) +
                                             " (ZF_KV_SAME, ZF_KV_F32, ZF_KV_F16, ZF_KV_Q8_0 or ZF_KV_Q4_0)");
  }
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags, ZF_SESSION_FAST_PREFILL)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved0", p.reserved0)) return e;
  if (zf_status e = zf::capi::CheckReserved("params->reserved1", p.reserved1)) return e;
  zf::rt::SessionOptions o;
  o.exact = (p.flags & ZF_SESSION_FAST_PREFILL) == 0;
  o.n_ctx = p.n_ctx;
  o.n_threads = p.n_threads;
  // ZF_KV_* are KvType's values (static_asserts below).
  o.kv_type = zf::engine::KvType(p.kv_type);
  if (p.kv_type_v != ZF_KV_SAME) o.kv_type_v = zf::engine::KvType(p.kv_type_v);
  std::unique_ptr<zf_session> s(new zf_session());
  s->model = model;
  zf::Status st = model->served->CreateSession(o, &s->impl);
  if (!st.ok()) return Fail(st);
  model->refs.fetch_add(1, std::memory_order_relaxed);  // released by zf_session_free
  *out = s.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API void zf_session_free(zf_session* session) {
  if (session == nullptr) return;
  session->freed = true;
  zf::capi::ReleaseSession(session);
}

ZF_API zf_status zf_session_reset(zf_session* session) {
  if (session == nullptr) return NullArg("session");
  if (session->active != nullptr) return Busy(session);
  session->impl->Reset();
  return Succeed();
}

ZF_API zf_status zf_session_cancel(zf_session* session) {
  // No error-text write here: this may run on any thread, concurrently with the owner.
  if (session == nullptr) return ZF_ERR_INVALID_ARGUMENT;
  session->impl->RequestCancel();
  return ZF_OK;
}

ZF_API zf_status zf_session_n_past(const zf_session* session, int32_t* n_past) {
  if (session == nullptr) return NullArg("session");
  if (n_past == nullptr) return NullArg("n_past");
  *n_past = session->impl->n_past();
  return Succeed();
}

ZF_API zf_status zf_session_tokens(const zf_session* session, int32_t* tokens, size_t cap, size_t* n) {
  if (session == nullptr) return NullArg("session");
  if (n == nullptr) return NullArg("n");
  if (tokens == nullptr && cap > 0) return NullArg("tokens");
  ZF_GUARD_BEGIN
  const std::vector<int32_t> all = session->impl->Conversation();
  *n = all.size();
  if (cap < all.size()) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "the conversation has " + std::to_string(all.size()) + " tokens");
  }
  std::copy(all.begin(), all.end(), tokens);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_session_truncate(zf_session* session, size_t n_keep) {
  if (session == nullptr) return NullArg("session");
  if (session->active != nullptr) return Busy(session);
  zf::Status st = session->impl->Truncate(n_keep);
  return st.ok() ? Succeed() : Fail(st);
}

ZF_API zf_status zf_session_set_draft_model(zf_session* session, zf_model* draft) {
  if (session == nullptr) return NullArg("session");
  if (session->active != nullptr) return Busy(session);
  ZF_GUARD_BEGIN
  std::unique_ptr<zf::rt::Session> ds;
  if (draft != nullptr) {
    if (draft->impl->vocab_only()) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "the draft model was loaded with ZF_MODEL_VOCAB_ONLY");
    }
    zf::Status st = zf::rt::CheckDraftVocabulary(*session->model->impl, *draft->impl);
    if (!st.ok()) return Fail(st);
    // Exact like the target (not fast prefill): the draft's last bits never reach the output, but
    // with the multi-token kernels its argmax flips on near-ties (a model drafting for itself kept
    // 81% of its greedy drafts on SmolLM2 instead of 100%).
    zf::rt::SessionOptions o;
    o.n_ctx = session->impl->n_ctx();
    st = zf::rt::Session::Create(*draft->impl, o, &ds);
    if (!st.ok()) return Fail(st);
    draft->refs.fetch_add(1, std::memory_order_relaxed);  // released with the session or the next draft
  }
  zf_model* old = session->draft_model;
  session->impl->set_draft(std::move(ds));
  session->draft_model = draft;
  if (old != nullptr) zf::capi::ReleaseModel(old);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_session_state_size(const zf_session* session, size_t* size) {
  if (session == nullptr) return NullArg("session");
  if (size == nullptr) return NullArg("size");
  zf::Status st = session->impl->StateSize(size);
  return st.ok() ? Succeed() : Fail(st);
}

ZF_API zf_status zf_session_state_save(const zf_session* session, void* buf, size_t cap, size_t* written) {
  if (session == nullptr) return NullArg("session");
  if (written == nullptr) return NullArg("written");
  if (buf == nullptr && cap > 0) return NullArg("buf");
  ZF_GUARD_BEGIN
  zf::Status st = session->impl->SaveState(static_cast<uint8_t*>(buf), cap, written);
  return st.ok() ? Succeed() : Fail(st);
  ZF_GUARD_END
}

ZF_API zf_status zf_session_state_load(zf_session* session, const void* buf, size_t len) {
  if (session == nullptr) return NullArg("session");
  if (buf == nullptr) return NullArg("buf");
  if (session->active != nullptr) return Busy(session);
  ZF_GUARD_BEGIN
  zf::Status st = session->impl->LoadState(static_cast<const uint8_t*>(buf), len);
  return st.ok() ? Succeed() : Fail(st);
  ZF_GUARD_END
}

ZF_API zf_status zf_session_eval(zf_session* session, const int32_t* tokens, size_t n, float* logits, size_t cap) {
  if (session == nullptr) return NullArg("session");
  if (tokens == nullptr && n > 0) return NullArg("tokens");
  if (n == 0) return Fail(ZF_ERR_INVALID_ARGUMENT, "no tokens to evaluate");
  if (session->active != nullptr) return Busy(session);
  ZF_GUARD_BEGIN
  zf::rt::Session& s = *session->impl;
  const size_t n_vocab = size_t(s.model().desc().n_vocab);
  // Checked here, before deferred tokens are prepended, so the error names the caller's index.
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || size_t(tokens[i]) >= n_vocab) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                               " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
  }
  if (logits != nullptr && cap > 0 && cap < n_vocab) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "logits buffer holds " + std::to_string(cap) + " floats; " +
                                             std::to_string(n_vocab) + " needed");
  }
  // Tokens shown by an earlier generation but not yet evaluated come first (the session's
  // deferred tokens).
  zf::Status st = s.EvalKeepLogits(tokens, n);
  if (!st.ok()) return Fail(st);
  if (logits != nullptr && cap > 0) std::memcpy(logits, s.last_logits(), n_vocab * sizeof(float));
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_generate_params_init(zf_generate_params* params, size_t size) {
  return InitParams(params, size, DefaultGenerateParams());
}

ZF_API zf_status zf_constraint_check(const zf_model* model, int32_t kind, const char* constraint) {
  if (model == nullptr) return NullArg("model");
  if (constraint == nullptr) return NullArg("constraint");
  if (kind <= ZF_CONSTRAINT_NONE || kind > ZF_CONSTRAINT_LARK) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "kind " + std::to_string(kind) + " is not a ZF_CONSTRAINT_* kind");
  }
  ZF_GUARD_BEGIN
  std::unique_ptr<zf::rt::Constraint> c;
  zf::Status st = zf::rt::Constraint::Create(model->served->constraint_vocab(), zf::rt::ConstraintKind(kind), constraint, &c);
  if (!st.ok()) return Fail(st);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_generate(zf_session* session, const char* prompt, size_t len, const zf_generate_params* params,
                             zf_stream_cb cb, void* user_data, zf_generate_result* out) {
  if (session == nullptr) return NullArg("session");
  if (prompt == nullptr && len > 0) return NullArg("prompt");
  if (out != nullptr && out->struct_size < sizeof(uint32_t) * 2) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "out->struct_size must be set to sizeof(zf_generate_result)");
  }
  if (session->active != nullptr) return Busy(session);
  ZF_GUARD_BEGIN
  zf::rt::GenerateOptions o;
  if (zf_status st = zf::capi::ToGenerateOptions(params, &o); st != ZF_OK) return st;
  StreamCtx ctx{cb, user_data};
  zf::rt::GenerateResult r;
  zf::Status st = zf::rt::Generate(*session->impl, std::string_view(prompt == nullptr ? "" : prompt, len), o,
                                   cb != nullptr ? Stream : nullptr, &ctx, &r);
  if (!st.ok()) return Fail(st);
  if (out != nullptr) CopyResult(r, out);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_generate_begin(zf_session* session, const char* prompt, size_t len,
                                   const zf_generate_params* params, zf_generation** out) {
  if (out != nullptr) *out = nullptr;
  if (session == nullptr) return NullArg("session");
  if (out == nullptr) return NullArg("out");
  if (prompt == nullptr && len > 0) return NullArg("prompt");
  if (session->active != nullptr) return Busy(session);
  ZF_GUARD_BEGIN
  zf::rt::GenerateOptions o;
  if (zf_status st = zf::capi::ToGenerateOptions(params, &o); st != ZF_OK) return st;
  std::unique_ptr<zf_generation> g(new zf_generation());
  zf::Status st = zf::rt::Generation::Begin(*session->impl, std::string_view(prompt == nullptr ? "" : prompt, len),
                                            o, &g->impl);
  if (!st.ok()) return Fail(st);
  g->session = session;
  session->refs.fetch_add(1, std::memory_order_relaxed);
  if (!g->impl->done()) session->active = g.get();
  *out = g.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_generation_next(zf_generation* gen, char* buf, size_t cap, size_t* len, int32_t* token,
                                   int32_t* done) {
  if (gen == nullptr) return NullArg("gen");
  if (len == nullptr) return NullArg("len");
  if (done == nullptr) return NullArg("done");
  if (buf == nullptr && cap > 0) return NullArg("buf");
  *len = 0;
  *done = 0;
  if (token != nullptr) *token = -1;
  if (gen->session->freed) return Busy(gen->session);
  ZF_GUARD_BEGIN
  if (!gen->has_piece) {
    bool finished = false;
    zf::Status st = gen->impl->Next(&gen->piece, &gen->piece_token, &finished);
    if (gen->impl->done() && gen->session->active == gen) gen->session->active = nullptr;
    if (!st.ok()) return Fail(st);
    if (finished) {
      *done = 1;
      return Succeed();
    }
    gen->has_piece = true;
  }
  *len = gen->piece.size();
  if (cap < gen->piece.size()) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "piece of " + std::to_string(gen->piece.size()) + " bytes does not fit in " +
                                             std::to_string(cap));
  }
  if (!gen->piece.empty()) std::memcpy(buf, gen->piece.data(), gen->piece.size());
  if (token != nullptr) *token = gen->piece_token;
  gen->has_piece = false;
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_session_logprobs(const zf_session* session, zf_token_logprob* out, size_t cap, size_t* n,
                                     size_t* stride) {
  if (session == nullptr) return NullArg("session");
  if (n == nullptr) return NullArg("n");
  if (out == nullptr && cap > 0) return NullArg("out");
  ZF_GUARD_BEGIN
  const std::vector<zf::rt::TokenLogprob>& lp = session->impl->piece_logprobs();
  *n = lp.size();
  if (stride != nullptr) *stride = session->impl->logprob_stride();
  if (cap < lp.size()) {
    return Fail(ZF_ERR_BUFFER_TOO_SMALL, "the piece has " + std::to_string(lp.size()) + " logprob entries");
  }
  if (!lp.empty()) std::memcpy(static_cast<void*>(out), lp.data(), lp.size() * sizeof(zf_token_logprob));
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_generation_result(const zf_generation* gen, zf_generate_result* out) {
  if (gen == nullptr) return NullArg("gen");
  if (out == nullptr) return NullArg("out");
  if (out->struct_size < sizeof(uint32_t) * 2) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "out->struct_size must be set to sizeof(zf_generate_result)");
  }
  CopyResult(gen->impl->result(), out);
  return Succeed();
}

ZF_API void zf_generation_free(zf_generation* gen) {
  if (gen == nullptr) return;
  zf_session* s = gen->session;
  if (!s->freed) gen->impl->Stop();  // the token of the last piece stays pending: evaluated next
  if (s->active == gen) s->active = nullptr;
  delete gen;
  zf::capi::ReleaseSession(s);
}

}  // extern "C"

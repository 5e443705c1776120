// C entry points for chat turns: a thin layer over rt::ChatTurn (runtime/chat_turn.h).
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "capi/handles.h"
#include "capi/mmproj_handle.h"
#include "runtime/chat_turn.h"

using zf::capi::Fail;
using zf::capi::Succeed;

static_assert(sizeof(zf_turn_params) == 56 && offsetof(zf_turn_params, generate) == 32 &&
                  offsetof(zf_turn_params, mmproj) == 48,
              "zf_turn_params layout is part of the ABI");
static_assert(sizeof(zf_turn_event) == 112 && offsetof(zf_turn_event, logprobs) == 48 &&
                  offsetof(zf_turn_event, stop_reason) == 72 && offsetof(zf_turn_event, prompt_ms) == 96,
              "zf_turn_event layout is part of the ABI");
static_assert(ZF_TURN_CONTENT == zf::rt::TurnEvent::kContent && ZF_TURN_REASONING == zf::rt::TurnEvent::kReasoning &&
                  ZF_TURN_TOOL_CALL == zf::rt::TurnEvent::kToolCall && ZF_TURN_TOOL_ARGS == zf::rt::TurnEvent::kToolArgs &&
                  ZF_TURN_LOGPROBS == zf::rt::TurnEvent::kLogprobs && ZF_TURN_DONE == zf::rt::TurnEvent::kDone,
              "ZF_TURN_* match the runtime");
static_assert(ZF_FINISH_STOP == int32_t(zf::rt::FinishReason::kStop) &&
                  ZF_FINISH_LENGTH == int32_t(zf::rt::FinishReason::kLength) &&
                  ZF_FINISH_TOOL_CALLS == int32_t(zf::rt::FinishReason::kToolCalls),
              "ZF_FINISH_* match the runtime");

struct zf_turn {
  zf_session* session;
  std::unique_ptr<zf::rt::ChatTurn> impl;
  zf::rt::TurnEvent event;  // the event delivered last (its strings are borrowed by the caller)
};

namespace {

zf_status NullArg(const char* what) { return Fail(ZF_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL"); }

zf_status Busy(const zf_session* s) {
  return Fail(ZF_ERR_INVALID_ARGUMENT, s->freed ? "session was freed"
                                                : "session has a generation or turn in progress; finish or free it first");
}

// The library's view of an event (pointers into ev), within the caller's struct_size.
void Fill(const zf::rt::TurnEvent& ev, zf_turn_event* out) {
  zf_turn_event e;
  std::memset(&e, 0, sizeof e);
  e.struct_size = out->struct_size < sizeof e ? out->struct_size : uint32_t(sizeof e);
  e.kind = ev.kind;
  const bool has_text = ev.kind == zf::rt::TurnEvent::kContent || ev.kind == zf::rt::TurnEvent::kReasoning ||
                        ev.kind == zf::rt::TurnEvent::kToolArgs;
  e.text = has_text ? ev.text.data() : nullptr;
  e.text_len = has_text ? ev.text.size() : 0;
  e.tool_index = ev.index;
  e.finish_reason = int32_t(ev.finish);
  e.tool_id = ev.kind == zf::rt::TurnEvent::kToolCall ? ev.id.c_str() : nullptr;
  e.tool_name = ev.kind == zf::rt::TurnEvent::kToolCall ? ev.name.c_str() : nullptr;
  static_assert(sizeof(zf_token_logprob) == sizeof(zf::rt::TokenLogprob), "zf_token_logprob mirrors the runtime's");
  e.logprobs = ev.logprobs.empty() ? nullptr : reinterpret_cast<const zf_token_logprob*>(ev.logprobs.data());
  e.n_logprobs = ev.logprobs.size();
  e.logprob_stride = ev.logprobs.empty() ? 0 : ev.logprob_stride;
  if (ev.kind == zf::rt::TurnEvent::kDone) {
    e.stop_reason = int32_t(ev.stop);
    e.n_prompt = ev.usage.n_prompt;
    e.n_cached = ev.usage.n_cached;
    e.n_generated = ev.usage.n_generated;
    e.n_drafted = ev.usage.n_drafted;
    e.n_accepted = ev.usage.n_accepted;
    e.prompt_ms = ev.usage.prompt_ms;
    e.decode_ms = ev.usage.decode_ms;
  }
  std::memcpy(out, &e, e.struct_size);
}

// The caller's zf_turn_params as the runtime's options (zf_chat_turn_begin, zf_chat_turn_prompt);
// *mmproj: its projector (NULL: none, or a struct_size from before the field).
zf_status ReadTurnParams(const zf_turn_params* params, zf::rt::TurnOptions* o, const zf_mmproj** mmproj = nullptr) {
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  if (!zf::capi::ReadParams(params, &p)) return Fail(ZF_ERR_INVALID_ARGUMENT, "params->struct_size is too small");
  if (zf_status e = zf::capi::CheckFlags("params->flags", p.flags, ZF_CHAT_FIXED_TIME)) return e;
  if (p.request_json == nullptr) return NullArg("params->request_json");
  o->request_json = p.request_json;
  o->template_name = p.template_name;
  o->template_text = p.template_text;
  o->now = (p.flags & ZF_CHAT_FIXED_TIME) != 0 ? (p.time_unix < 0 ? 0 : p.time_unix) : -1;
  if (mmproj != nullptr) *mmproj = p.mmproj;
  if (zf_status st = zf::capi::ToGenerateOptions(p.generate, &o->generate); st != ZF_OK) return st;
  if (p.generate != nullptr && p.generate->struct_size >= offsetof(zf_generate_params, flags) + sizeof(uint32_t) &&
      (p.generate->flags & (ZF_GENERATE_NO_SPECIAL | ZF_GENERATE_NO_PARSE_SPECIAL)) != 0) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "params->generate->flags: ZF_GENERATE_NO_SPECIAL and NO_PARSE_SPECIAL do not "
                                         "apply to a chat turn (its prompt is the rendered template)");
  }
  return ZF_OK;
}

}  // namespace

extern "C" {

ZF_API zf_status zf_turn_params_init(zf_turn_params* params, size_t size) {
  zf_turn_params d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  return zf::capi::InitParams(params, size, d);
}

ZF_API zf_status zf_chat_turn_begin(zf_session* session, const zf_turn_params* params, zf_turn** out) {
  if (out != nullptr) *out = nullptr;
  if (session == nullptr) return NullArg("session");
  if (params == nullptr) return NullArg("params");
  if (out == nullptr) return NullArg("out");
  if (session->active != nullptr || session->freed) return Busy(session);
  ZF_GUARD_BEGIN
  zf::rt::TurnOptions o;
  const zf_mmproj* mmproj = nullptr;
  if (zf_status st = ReadTurnParams(params, &o, &mmproj); st != ZF_OK) return st;
  // Image parts: encoded through the projector's cache of recent images, placed as
  // zf_session_eval_image places them.
  zf::rt::TurnImages images;
  if (mmproj != nullptr) {
    if (mmproj->model->impl != session->model->impl) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "params->mmproj was loaded for another model than the session's");
    }
    images = zf::capi::TurnImagesOf(mmproj, session->model->impl->default_threads());
    o.images = &images;
  }
  std::unique_ptr<zf_turn> t(new zf_turn());
  zf::Status st = zf::rt::ChatTurn::Begin(*session->model->served, *session->impl, o, &t->impl);
  if (!st.ok()) return Fail(st);
  t->session = session;
  session->refs.fetch_add(1, std::memory_order_relaxed);
  session->active = t.get();
  *out = t.release();
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_turn_prompt(const zf_model* model, const zf_turn_params* params, char* buf, size_t cap,
                                     size_t* needed) {
  if (model == nullptr) return NullArg("model");
  if (params == nullptr) return NullArg("params");
  ZF_GUARD_BEGIN
  zf::rt::TurnOptions o;
  const zf_mmproj* mmproj = nullptr;
  if (zf_status st = ReadTurnParams(params, &o, &mmproj); st != ZF_OK) return st;
  zf::rt::TurnImages images;  // the markers only: nothing is encoded
  if (mmproj != nullptr) {
    if (mmproj->model->impl != model->impl) {
      return Fail(ZF_ERR_INVALID_ARGUMENT, "params->mmproj was loaded for another model than this one");
    }
    images = zf::capi::TurnImagesOf(mmproj, 0);
    o.images = &images;
  }
  std::string prompt;
  zf::Status s = zf::rt::RenderTurnPrompt(*model->served, o, &prompt);
  if (!s.ok()) return Fail(s);
  return zf::capi::CopyOut(prompt, buf, cap, needed);
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_turn_next(zf_turn* turn, zf_turn_event* event) {
  if (turn == nullptr) return NullArg("turn");
  if (event == nullptr) return NullArg("event");
  if (event->struct_size < sizeof(uint32_t) * 2) {
    return Fail(ZF_ERR_INVALID_ARGUMENT, "event->struct_size must be set to sizeof(zf_turn_event)");
  }
  if (turn->session->freed && !turn->impl->done()) return Busy(turn->session);
  ZF_GUARD_BEGIN
  zf::Status st = turn->impl->Next(&turn->event);
  if (turn->impl->done() && turn->session->active == turn) turn->session->active = nullptr;
  if (!st.ok()) return Fail(st);
  Fill(turn->event, event);
  return Succeed();
  ZF_GUARD_END
}

ZF_API zf_status zf_chat_turn_message(const zf_turn* turn, char* buf, size_t cap, size_t* needed) {
  if (turn == nullptr) return NullArg("turn");
  ZF_GUARD_BEGIN
  return zf::capi::CopyOut(turn->impl->Message().dump(), buf, cap, needed);
  ZF_GUARD_END
}

ZF_API void zf_chat_turn_free(zf_turn* turn) {
  if (turn == nullptr) return;
  zf_session* s = turn->session;
  if (!s->freed) turn->impl->Stop();  // what was generated stays in the session for the next turn
  if (s->active == turn) s->active = nullptr;
  delete turn;
  zf::capi::ReleaseSession(s);
}

ZF_API zf_status zf_chat_turn(zf_session* session, const zf_turn_params* params, zf_turn_cb cb, void* user_data,
                              zf_turn** out) {
  if (out != nullptr) *out = nullptr;
  zf_turn* t = nullptr;
  if (zf_status st = zf_chat_turn_begin(session, params, &t); st != ZF_OK) return st;
  std::unique_ptr<zf_turn, void (*)(zf_turn*)> turn(t, &zf_chat_turn_free);
  zf_turn_event ev;
  for (;;) {
    ev.struct_size = sizeof ev;
    if (zf_status st = zf_chat_turn_next(t, &ev); st != ZF_OK) return st;
    if (ev.kind == ZF_TURN_DONE) {
      if (cb != nullptr) cb(user_data, &ev);
      break;
    }
    if (cb != nullptr && cb(user_data, &ev) != 0) t->impl->Stop();  // the rest ends the turn as stopped
  }
  if (out != nullptr) *out = turn.release();
  return Succeed();
}

}  // extern "C"

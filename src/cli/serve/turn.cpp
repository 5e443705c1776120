#include "turn.h"

#include <memory>

namespace cli::serve {

namespace {

std::vector<TokenLogprobs> Logprobs(const zf_turn_event& e, int32_t top) {
  std::vector<TokenLogprobs> out;
  for (size_t i = 0; e.logprob_stride > 0 && i + e.logprob_stride <= e.n_logprobs; i += e.logprob_stride) {
    TokenLogprobs t{e.logprobs[i], {}};
    const size_t k = std::min(e.logprob_stride - 1, size_t(top));
    t.top.assign(e.logprobs + i + 1, e.logprobs + i + 1 + k);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

zf_status BeginTurn(Slot* slot, const Request& r, TurnPtr* out) {
  zf_session* s = slot->session.get();
  slot->chat_key.clear();  // until the turn is done
  slot->known = false;     // the session's tokens are the library's now
  std::vector<const char*> stops;
  const zf_generate_params gp = r.GenerateParams(&stops);
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = r.turn_request.c_str();
  p.template_text = r.chat_template.empty() ? nullptr : r.chat_template.c_str();
  p.generate = &gp;
  p.mmproj = r.mmproj;  // the messages' images (data: URLs by now, image_request.h)
  // Without cache_prompt the session starts empty (the model's prefix cache still serves).
  if (!r.cache_prompt) zf_session_reset(s);
  zf_turn* raw = nullptr;
  const zf_status st = zf_chat_turn_begin(s, &p, &raw);
  if (st == ZF_OK) out->reset(raw);
  return st;
}

zf_status DriveTurn(zf_turn* turn, Slot* slot, const Request& r, const TurnEmitFn& emit, Clock::time_point t_arrival,
                    ServeMetrics* metrics, TurnOutcome* out) {
  zf_session* s = slot->session.get();
  zf_status st = ZF_OK;
  Clock::time_point last = t_arrival;
  bool first = true;
  for (;;) {
    if (slot->cancel.load()) zf_session_cancel(s);
    zf_turn_event e;
    e.struct_size = sizeof e;
    st = zf_chat_turn_next(turn, &e);
    if (st != ZF_OK) return st;
    int32_t n_past = 0;
    if (zf_session_n_past(s, &n_past) == ZF_OK) slot->kv_tokens = n_past;
    TurnDelta d;
    d.kind = e.kind;
    if (e.text != nullptr) d.text.assign(e.text, e.text_len);
    d.index = e.tool_index;
    if (e.tool_id != nullptr) d.id = e.tool_id;
    if (e.tool_name != nullptr) d.name = e.tool_name;
    if (r.logprobs) d.logprobs = Logprobs(e, r.top_logprobs);
    out->logprobs.insert(out->logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    if (e.kind == ZF_TURN_DONE) {
      out->finish = e.finish_reason;
      out->stop_reason = e.stop_reason;
      out->n_prompt = e.n_prompt;
      out->n_cached = e.n_cached;
      out->n_generated = e.n_generated;
      out->prompt_ms = e.prompt_ms;
      out->decode_ms = e.decode_ms;
      metrics->n_prompt_cached += uint64_t(e.n_cached);
      metrics->n_prompt_tokens += uint64_t(e.n_prompt);
      metrics->n_gen_tokens += uint64_t(e.n_generated);
      metrics->n_drafted += uint64_t(e.n_drafted);
      metrics->n_draft_accepted += uint64_t(e.n_accepted);
    } else {
      metrics->ObserveOutput(&last, &first);
    }
    if (!emit(d)) {  // the client went away: the turn stops, what was generated stays in the session
      out->client_gone = true;
      break;
    }
    if (e.kind == ZF_TURN_DONE) break;
  }
  std::string msg;
  size_t needed = 0;
  if (zf_chat_turn_message(turn, nullptr, 0, &needed) == ZF_ERR_BUFFER_TOO_SMALL) {
    msg.resize(needed);
    if (zf_chat_turn_message(turn, msg.data(), msg.size(), &needed) == ZF_OK) msg.resize(needed - 1);
  }
  out->message = nlohmann::json::parse(msg, nullptr, false);
  if (!out->message.is_object()) out->message = {{"role", "assistant"}, {"content", ""}};
  // The conversation the session now holds, for the next request's choice of slot.
  if (!out->client_gone) {
    nlohmann::json conv = r.turn_messages;
    conv.push_back(out->message);
    slot->chat_key = conv.dump();
  }
  return ZF_OK;
}

std::string TurnPrompt(const zf_model* model, const std::string& request_json, const std::string& chat_template,
                       const zf_mmproj* mmproj) {
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = request_json.c_str();
  p.mmproj = mmproj;
  p.template_text = chat_template.empty() ? nullptr : chat_template.c_str();
  std::string out;
  size_t needed = 0;
  zf_status st = zf_chat_turn_prompt(model, &p, nullptr, 0, &needed);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    out.resize(needed);
    st = zf_chat_turn_prompt(model, &p, out.data(), out.size(), &needed);
    out.resize(needed > 0 ? needed - 1 : 0);
  }
  if (st != ZF_OK) throw TurnError(st);
  return out;
}

ApiError TurnError(zf_status st) {
  const std::string why = zf_last_error();
  switch (st) {
    case ZF_ERR_CONTEXT_FULL: return BadRequest("context_length_exceeded", why);
    case ZF_ERR_INVALID_UTF8: return BadRequest("invalid_utf8", why);
    case ZF_ERR_TEMPLATE: return BadRequest("template_error", why);
    case ZF_ERR_NOT_FOUND: return BadRequest("invalid_value", why);
    case ZF_ERR_UNSUPPORTED: return BadRequest("unsupported", why);
    case ZF_ERR_FORMAT: return BadRequest("invalid_value", why);  // a request's image the decoder refused
    case ZF_ERR_INVALID_ARGUMENT:
      // The library says "request.X must be ..." for a field of the wrong type.
      return BadRequest(why.find(" must be ") != std::string::npos && why.find(": ") == std::string::npos ? "invalid_type"
                                                                                                      : "invalid_value",
                        why);
    case ZF_ERR_CANCELLED: return {503, "server_error", "shutting_down", "the server is shutting down"};
    default: return ServerError(st);
  }
}

const char* TurnFinishReason(int32_t finish) {
  switch (finish) {
    case ZF_FINISH_LENGTH: return "length";
    case ZF_FINISH_TOOL_CALLS: return "tool_calls";
    default: return "stop";
  }
}

}  // namespace cli::serve

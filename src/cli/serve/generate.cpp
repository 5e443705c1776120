// Prefix reuse, prefill and the piece loop of one completion.
#include "generate.h"

#include <algorithm>
#include <memory>

namespace cli::serve {

zf_status Generate(Slot* slot, const Request& r, const EmitFn& emit, Clock::time_point t_arrival,
                   const GenerateLimits& limits, ServeMetrics* metrics, Outcome* out) {
  zf_session* s = slot->session.get();
  // Keep the longest prefix the slot's conversation shares with the prompt (zf_session_truncate
  // drops the rest of its KV cache) and evaluate only the remainder. At least one prompt token
  // is evaluated: its logits start the generation.
  size_t reuse = 0;
  if (r.cache_prompt && slot->known) {
    reuse = std::min(CommonPrefix(slot->history, r.prompt), r.prompt.size() - 1);
  }
  slot->known = false;  // until the session's tokens are read back below
  zf_status st = zf_session_truncate(s, reuse);  // 0: reset
  if (st != ZF_OK) return st;
  metrics->n_prompt_cached += reuse;
  std::vector<float> logits(size_t(limits.n_vocab));
  st = zf_session_eval(s, r.prompt.data() + reuse, r.prompt.size() - reuse, logits.data(), logits.size());
  if (st != ZF_OK) return st;
  slot->kv_tokens = int32_t(r.prompt.size());
  out->n_prompt = int32_t(r.prompt.size());

  std::vector<const char*> stops;
  const zf_generate_params gp = r.GenerateParams(&stops);
  zf_generation* g = nullptr;
  st = zf_generate_begin(s, nullptr, 0, &gp, &g);
  if (st != ZF_OK) return st;
  std::unique_ptr<zf_generation, void (*)(zf_generation*)> gen(g, &zf_generation_free);

  size_t n_pieces = 0;
  std::string buf(256, '\0');
  std::vector<zf_token_logprob> lp_buf(64);
  std::vector<TokenLogprobs> piece_lps;
  Clock::time_point last = t_arrival;
  bool first = true;
  for (;;) {
    if (slot->cancel.load()) zf_session_cancel(s);
    size_t len = 0;
    int32_t token = -1, done = 0;
    st = zf_generation_next(gen.get(), buf.data(), buf.size(), &len, &token, &done);
    if (st == ZF_ERR_BUFFER_TOO_SMALL) {
      buf.resize(len);
      continue;
    }
    if (st != ZF_OK) return st;
    if (done) break;
    ++n_pieces;
    slot->kv_tokens = int32_t(r.prompt.size() + n_pieces);
    metrics->ObserveOutput(&last, &first);
    const std::string piece(buf.data(), len);
    out->text += piece;
    piece_lps.clear();
    if (r.logprobs) {
      size_t n = 0, stride = 0;
      st = zf_session_logprobs(s, lp_buf.data(), lp_buf.size(), &n, &stride);
      if (st == ZF_ERR_BUFFER_TOO_SMALL) {
        lp_buf.resize(n);
        st = zf_session_logprobs(s, lp_buf.data(), lp_buf.size(), &n, &stride);
      }
      if (st != ZF_OK) return st;
      for (size_t i = 0; stride > 0 && i + stride <= n; i += stride) {
        TokenLogprobs t{lp_buf[i], {}};
        const size_t k = std::min(stride - 1, size_t(r.top_logprobs));
        t.top.assign(lp_buf.begin() + long(i + 1), lp_buf.begin() + long(i + 1 + k));
        piece_lps.push_back(std::move(t));
      }
      out->logprobs.insert(out->logprobs.end(), piece_lps.begin(), piece_lps.end());
    }
    if (!emit(piece, piece_lps)) {  // the client went away: stop now (the piece's token stays pending)
      out->client_gone = true;
      break;
    }
  }
  zf_generate_result res{};
  res.struct_size = sizeof res;
  zf_generation_result(gen.get(), &res);
  gen.reset();
  out->stop_reason = out->client_gone ? ZF_STOP_CALLBACK : res.stop_reason;
  out->n_generated = res.n_generated;
  out->prompt_ms = res.prompt_ms;
  out->decode_ms = res.decode_ms;
  metrics->n_gen_tokens += uint64_t(res.n_generated);
  metrics->n_drafted += uint64_t(res.n_drafted);
  metrics->n_draft_accepted += uint64_t(res.n_accepted);
  metrics->n_prompt_tokens += r.prompt.size();
  // What the session now holds (KV cache + a pending token), for the next request's choice.
  size_t n_hist = 0;
  std::vector<int32_t> hist(size_t(limits.n_ctx) + 1);
  if (zf_session_tokens(s, hist.data(), hist.size(), &n_hist) == ZF_OK) {
    hist.resize(n_hist);
    slot->history.swap(hist);
    slot->known = true;
  }
  return ZF_OK;
}

ApiError GenerateError(zf_status st) {
  if (st == ZF_ERR_CONTEXT_FULL) return BadRequest("context_length_exceeded", zf_last_error());
  // The request's parameters or constraint (e.g. a grammar that stops matching in the middle of
  // the output, or passes llguidance's limits there): the client's to fix.
  if (st == ZF_ERR_INVALID_ARGUMENT) return BadRequest("invalid_value", zf_last_error());
  if (st == ZF_ERR_CANCELLED) {  // the drain's grace period ended during the prefill
    return {503, "server_error", "shutting_down", "the server is shutting down"};
  }
  return ServerError(st);
}

}  // namespace cli::serve

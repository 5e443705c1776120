// The generation loop: prefill, then sample -> stream -> decode one token at a time.
#include "runtime/generator.h"

#include <chrono>

#include "runtime/text_stream.h"

namespace zf::rt {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Status Generate(Session& session, std::string_view prompt, const GenerateOptions& o, StreamFn stream, void* stream_ctx,
                GenerateResult* result) {
  *result = GenerateResult();
  const model::Model& model = session.model();
  const tok::Tokenizer& tok = model.tokenizer();

  // Special tokens (BOS) only open a conversation; later turns continue the same sequence.
  std::vector<int32_t> tokens = session.pending();
  std::vector<int32_t> prompt_tokens;
  const bool first = session.n_past() == 0 && tokens.empty();
  ZF_RETURN_IF_ERROR(tok.Encode(prompt, o.add_special && first, o.parse_special, &prompt_tokens));
  tokens.insert(tokens.end(), prompt_tokens.begin(), prompt_tokens.end());
  if (tokens.empty() && !session.has_logits() && !session.has_argmax()) {
    return InvalidArgument("empty prompt and nothing to continue from");
  }
  if (size_t(session.n_past()) + tokens.size() > size_t(session.n_ctx())) {
    return Status(Code::kContextFull, "prompt of " + std::to_string(tokens.size()) + " tokens does not fit: " +
                                          std::to_string(session.n_past()) + " of " +
                                          std::to_string(session.n_ctx()) + " context positions are used");
  }

  // Plain greedy on a device engine: only the argmax crosses to the host per token.
  const bool device_greedy = session.logits_on_device() && o.sampler.temperature <= 0.0f &&
                             (o.sampler.repeat_penalty == 1.0f || o.sampler.repeat_last_n == 0);
  const auto eval = [&](const int32_t* t, size_t n) {
    return device_greedy ? session.EvalKeepArgmax(t, n) : session.EvalKeepLogits(t, n);
  };
  if (tokens.empty() && !session.has_logits() && session.has_argmax() && !device_greedy) {
    ZF_RETURN_IF_ERROR(session.FetchLogits());  // continuing a device-greedy turn with sampling
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!tokens.empty()) {
    Status s = eval(tokens.data(), tokens.size());
    if (s.code() == Code::kCancelled) {
      session.pending().clear();
      result->stop_reason = StopReason::kCancelled;
      result->prompt_ms = MsSince(t0);
      return Status::Ok();
    }
    ZF_RETURN_IF_ERROR(s);
    session.pending().clear();
  }
  result->n_prompt = int32_t(prompt_tokens.size());
  result->prompt_ms = MsSince(t0);

  const auto t1 = std::chrono::steady_clock::now();
  Sampler sampler(o.sampler, model.desc().n_vocab);
  TextStream text(o.stop);
  std::vector<int32_t> history = session.history();
  history.reserve(size_t(session.n_ctx()) + 1);
  std::string emit;
  emit.reserve(256);
  int32_t last_token = -1;
  StopReason reason = StopReason::kMaxTokens;
  bool stopped_early = false;  // text after this point must not be emitted

  for (;;) {
    if (o.max_tokens >= 0 && result->n_generated >= o.max_tokens) {
      reason = StopReason::kMaxTokens;
      break;
    }
    if (session.ConsumeCancel()) {
      reason = StopReason::kCancelled;
      break;
    }
    const int32_t token = device_greedy && session.has_argmax()
                              ? session.last_argmax()
                              : sampler.Sample(session.last_logits(), history.data(), history.size());
    if (!o.ignore_eos && tok.IsEndOfGeneration(token)) {
      reason = StopReason::kEos;
      break;
    }
    ++result->n_generated;
    history.push_back(token);
    last_token = token;
    emit.clear();
    const bool hit_stop = text.Push(tok.TokenToPiece(token, false), &emit);
    if (!emit.empty() && stream != nullptr && stream(stream_ctx, emit, token)) {
      session.pending().push_back(token);
      reason = StopReason::kCallback;
      stopped_early = true;
      break;
    }
    if (hit_stop) {
      session.pending().push_back(token);
      reason = StopReason::kStopString;
      stopped_early = true;
      break;
    }
    if (session.n_past() + 1 > session.n_ctx()) {
      session.pending().clear();  // no room to ever evaluate it
      reason = StopReason::kContextFull;
      break;
    }
    if (o.max_tokens >= 0 && result->n_generated >= o.max_tokens) {
      session.pending().push_back(token);  // shown but not evaluated: evaluated by the next call
      reason = StopReason::kMaxTokens;
      break;
    }
    Status s = eval(&token, 1);
    if (s.code() == Code::kCancelled) {
      session.pending().push_back(token);
      reason = StopReason::kCancelled;
      break;
    }
    ZF_RETURN_IF_ERROR(s);
  }
  if (!stopped_early) {
    emit.clear();
    text.Finish(&emit);
    if (!emit.empty() && stream != nullptr) stream(stream_ctx, emit, last_token);
  }
  result->stop_reason = reason;
  result->decode_ms = MsSince(t1);
  return Status::Ok();
}

}  // namespace zf::rt

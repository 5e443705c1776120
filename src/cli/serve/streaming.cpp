// Building the answer and chunk JSON of completions.
#include "streaming.h"

#include <cmath>

#include "model_text.h"

namespace cli::serve {

const char* FinishReason(int32_t stop) {
  switch (stop) {
    case ZF_STOP_MAX_TOKENS:
    case ZF_STOP_CONTEXT_FULL: return "length";
    default: return "stop";
  }
}

json UsageJson(const Outcome& o) {
  return json{{"prompt_tokens", o.n_prompt},
              {"completion_tokens", o.n_generated},
              {"total_tokens", o.n_prompt + o.n_generated}};
}

json LogprobsJson(const zf_model* model, const Request& r, const std::vector<TokenLogprobs>& lps,
                  size_t* text_offset) {
  // -inf (a token the model rules out) has no JSON form: OpenAI clients get a very small number.
  auto num = [](float v) { return std::isfinite(v) ? double(v) : -9999.0; };
  if (r.chat) {
    auto entry = [&](const zf_token_logprob& t) {
      const std::string text = TokenText(model, t.token);
      json bytes = json::array();
      for (unsigned char c : text) bytes.push_back(int(c));
      return json{{"token", text}, {"logprob", num(t.logprob)}, {"bytes", bytes}};
    };
    json content = json::array();
    for (const TokenLogprobs& t : lps) {
      json e = entry(t.chosen);
      e["top_logprobs"] = json::array();
      for (const zf_token_logprob& a : t.top) e["top_logprobs"].push_back(entry(a));
      content.push_back(std::move(e));
    }
    return json{{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprobs& t : lps) {
    const std::string text = TokenText(model, t.chosen.token);
    tokens.push_back(text);
    token_logprobs.push_back(num(t.chosen.logprob));
    json alts = json::object();
    for (const zf_token_logprob& a : t.top) {
      const std::string at = TokenText(model, a.token);
      if (!alts.contains(at)) alts[at] = num(a.logprob);  // two ids may render alike: keep the likelier
    }
    top.push_back(std::move(alts));
    offsets.push_back(*text_offset);
    *text_offset += text.size();
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top)},
              {"text_offset", std::move(offsets)}};
}

json CompletionJson(const zf_model* model, const Request& r, const AnswerHeader& h, const Outcome& out) {
  size_t offset = 0;
  json choice = {{"index", 0},
                 {"finish_reason", FinishReason(out.stop_reason)},
                 {"text", out.text},
                 {"logprobs", r.logprobs ? LogprobsJson(model, r, out.logprobs, &offset) : json(nullptr)}};
  return json{{"id", h.id},         {"object", "text_completion"},        {"created", h.created},
              {"model", h.model},   {"choices", json::array({choice})},  {"usage", UsageJson(out)}};
}

json TurnUsageJson(const TurnOutcome& o) {
  return json{{"prompt_tokens", o.n_prompt},
              {"completion_tokens", o.n_generated},
              {"total_tokens", o.n_prompt + o.n_generated},
              {"prompt_tokens_details", {{"cached_tokens", o.n_cached}}}};
}

json ChatCompletionJson(const zf_model* model, const Request& r, const AnswerHeader& h, const TurnOutcome& out) {
  json choice = {{"index", 0}, {"finish_reason", TurnFinishReason(out.finish)}, {"message", out.message}};
  size_t offset = 0;
  if (r.logprobs) choice["logprobs"] = LogprobsJson(model, r, out.logprobs, &offset);
  return json{{"id", h.id},       {"object", "chat.completion"},       {"created", h.created},
              {"model", h.model}, {"choices", json::array({choice})}, {"usage", TurnUsageJson(out)}};
}

const char* ChunkBuilder::Object() const { return r_.chat ? "chat.completion.chunk" : "text_completion"; }

json ChunkBuilder::Chunk(const json& delta_or_text, const json& finish_reason,
                         const std::vector<TokenLogprobs>* lps) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason}};
  const json lp = lps != nullptr ? LogprobsJson(model_, r_, *lps, &text_offset_) : json(nullptr);
  if (r_.chat) {
    choice["delta"] = delta_or_text;
    if (lps != nullptr) choice["logprobs"] = lp;
  } else {
    choice["text"] = delta_or_text;
    choice["logprobs"] = lp;
  }
  json j = {{"id", h_.id}, {"object", Object()}, {"created", h_.created}, {"model", h_.model},
            {"choices", json::array({choice})}};
  // With include_usage every chunk carries "usage": null; the last one carries the numbers.
  if (r_.include_usage) j["usage"] = nullptr;
  return j;
}

json ChunkBuilder::Start() { return Chunk(json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr); }

std::vector<json> ChunkBuilder::Piece(const std::string& piece, const std::vector<TokenLogprobs>& lps) {
  return {Chunk(json(piece), nullptr, r_.logprobs ? &lps : nullptr)};
}

std::vector<json> ChunkBuilder::End(int32_t stop_reason) { return {Chunk(json(""), FinishReason(stop_reason), nullptr)}; }

// A turn's event as OpenAI streams a chat answer: reasoning_content and content fragments; a tool
// call opens with its index, id, type and name (arguments ""), its arguments follow as
// fragments; held-back text's tokens send their log-probabilities alone; done sends the finish
// reason.
json ChunkBuilder::Event(const TurnDelta& d) {
  const std::vector<TokenLogprobs>* lp = r_.logprobs && !d.logprobs.empty() ? &d.logprobs : nullptr;
  switch (d.kind) {
    case ZF_TURN_CONTENT: return Chunk(json{{"content", d.text}}, nullptr, lp);
    case ZF_TURN_REASONING: return Chunk(json{{"reasoning_content", d.text}}, nullptr, lp);
    case ZF_TURN_TOOL_CALL:
      return Chunk(json{{"tool_calls", json::array({{{"index", d.index}, {"id", d.id}, {"type", "function"},
                                                     {"function", {{"name", d.name}, {"arguments", ""}}}}})}},
                   nullptr, lp);
    case ZF_TURN_TOOL_ARGS:
      return Chunk(json{{"tool_calls", json::array({{{"index", d.index}, {"function", {{"arguments", d.text}}}}})}},
                   nullptr, lp);
    default: return Chunk(json::object(), nullptr, lp);  // ZF_TURN_LOGPROBS
  }
}

json ChunkBuilder::Finish(int32_t finish) { return Chunk(json::object(), TurnFinishReason(finish), nullptr); }

json ChunkBuilder::Usage(const json& usage) const {
  return json{{"id", h_.id}, {"object", Object()}, {"created", h_.created}, {"model", h_.model},
              {"choices", json::array()}, {"usage", usage}};
}

std::string SseEvent(const std::string& data) { return "data: " + data + "\n\n"; }

}  // namespace cli::serve

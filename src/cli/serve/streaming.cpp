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

// "tool_calls" when the answer called tools and was not cut short.
const char* ChatFinishReason(int32_t stop, const json& message) {
  const char* reason = FinishReason(stop);
  return std::string(reason) == "stop" && message.contains("tool_calls") ? "tool_calls" : reason;
}

json CompletionJson(const zf_model* model, const Request& r, const AnswerHeader& h, const Outcome& out) {
  const json message = r.chat ? AssistantStream::Message(model, r.reading, out.text) : json();
  json choice = {{"index", 0}, {"finish_reason", r.chat ? ChatFinishReason(out.stop_reason, message) : FinishReason(out.stop_reason)}};
  size_t offset = 0;
  const json lp = r.logprobs ? LogprobsJson(model, r, out.logprobs, &offset) : json(nullptr);
  if (r.chat) {
    choice["message"] = message;
    if (r.logprobs) choice["logprobs"] = lp;
  } else {
    choice["text"] = out.text;
    choice["logprobs"] = lp;
  }
  return json{{"id", h.id},
              {"object", r.chat ? "chat.completion" : "text_completion"},
              {"created", h.created},
              {"model", h.model},
              {"choices", json::array({choice})},
              {"usage", UsageJson(out)}};
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
  const std::vector<TokenLogprobs>* lp = r_.logprobs ? &lps : nullptr;
  if (!r_.chat) return {Chunk(json(piece), nullptr, lp)};
  // Chat: the turn so far read back (reasoning, content, complete tool calls); a piece whose
  // text is held back (a marker or a call still arriving) sends its log-probabilities alone.
  text_ += piece;
  std::vector<json> out;
  for (const json& delta : reader_.Update(text_)) out.push_back(Chunk(delta, nullptr, out.empty() ? lp : nullptr));
  if (out.empty() && lp != nullptr) out.push_back(Chunk(json::object(), nullptr, lp));
  return out;
}

std::vector<json> ChunkBuilder::End(int32_t stop_reason) {
  if (!r_.chat) return {Chunk(json(""), FinishReason(stop_reason), nullptr)};
  json message;
  std::vector<json> out;
  for (const json& delta : reader_.Finish(text_, &message)) out.push_back(Chunk(delta, nullptr, nullptr));
  out.push_back(Chunk(json::object(), ChatFinishReason(stop_reason, message), nullptr));
  return out;
}

json ChunkBuilder::Usage(const Outcome& out) const {
  return json{{"id", h_.id}, {"object", Object()}, {"created", h_.created}, {"model", h_.model},
              {"choices", json::array()}, {"usage", UsageJson(out)}};
}

std::string SseEvent(const std::string& data) { return "data: " + data + "\n\n"; }

}  // namespace cli::serve

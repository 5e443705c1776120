// What the chat-turn tests collect from zf_chat_turn's events: the text, every token's logprobs
// (the token and its alternatives, in order) and DONE's prompt counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace zf::capitest {

struct Outcome {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  int32_t n_prompt = -1, n_cached = -1;
};

// A zf_turn_event callback filling the Outcome at `user`.
inline int32_t Collect(void* user, const zf_turn_event* e) {
  Outcome& o = *static_cast<Outcome*>(user);
  if (e->kind == ZF_TURN_CONTENT) o.text.append(e->text, e->text_len);
  for (size_t i = 0; i < e->n_logprobs; ++i) {
    o.ids.push_back(e->logprobs[i].token);
    o.logprobs.push_back(e->logprobs[i].logprob);
  }
  if (e->kind == ZF_TURN_DONE) {
    o.n_prompt = e->n_prompt;
    o.n_cached = e->n_cached;
  }
  return 0;
}

}  // namespace zf::capitest

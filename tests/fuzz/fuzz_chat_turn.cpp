// Chat turns (zf_chat_turn_*, issue #42) fuzzed through the C API on the tiny llama model: byte 0
// holds options (bit 0: ask for logprobs; bit 1: the session already holds a turn, so the prompt
// is partly reused; bit 2: sample instead of greedy, bits 3-7 the seed), then the request JSON, then optionally a NUL and the template: one byte picks
// a template of the corpus (tests/data/chat_templates), more bytes are the template's text, none
// (no NUL) is the model's fallback (ChatML). The turn is rendered (zf_chat_turn_prompt), begun
// and drained (greedy or seeded sampling, at most kMaxTokens tokens). Invariants: every call ends in
// a status the API documents, errors with a message; the prompt's errors are begin's; the
// events concatenated per kind are zf_chat_turn_message's JSON; DONE comes last and repeats with
// a consistent usage (n_prompt = the prompt's tokens, n_generated <= max_tokens); and the
// session runs a fixed, valid turn afterwards.
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/tiny_model.h"
#include "common/utf8.h"
#include "fuzz_common.h"

namespace {

using Json = nlohmann::ordered_json;
using zf::fuzz::Check;

constexpr int32_t kMaxTokens = 8;
constexpr int32_t kCtx = 1024;
constexpr int32_t kLogprobs = 2;

// Templates with tool calls, reasoning opened by the prompt, documents, harmony channels.
const char* const kTemplates[] = {
    "Qwen-Qwen2.5-7B-Instruct",         "Qwen-Qwen3-0.6B",
    "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "openai-gpt-oss-120b",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "google-gemma-2-2b-it",
    "meetkai-functionary-medium-v3.2",  "ibm-granite-granite-3.3-2B-Instruct",
};
constexpr size_t kNTemplates = sizeof kTemplates / sizeof kTemplates[0];

const std::vector<std::string>& CorpusTemplates() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> out;
    for (const char* stem : kTemplates) {
      std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/templates/" + stem + ".jinja", std::ios::binary);
      std::stringstream s;
      s << f.rdbuf();
      Check(!s.str().empty(), "a corpus template is readable");
      out.push_back(s.str());
    }
    return out;
  }();
  return texts;
}

// The default tiny model (Q8_0, n_embd 256): its greedy output is text ("abab..."), where the
// n_embd 32 variant of the other fuzzers only writes control tokens and gives the parser nothing.
zf_model* Model() {
  static zf_model* model = zf::fuzz::LoadOnce(zf::testutil::TinyLlamaGguf());
  return model;
}

// A failed call names its failure.
void CheckFailure(zf_status st, const char* what) {
  zf::fuzz::CheckStatus(st, what);
  Check(st == ZF_OK || std::strlen(zf_last_error()) > 0, "an error comes with a message");
}

std::string Message(const zf_turn* t) {
  size_t needed = 0;
  Check(zf_chat_turn_message(t, nullptr, 0, &needed) == ZF_ERR_BUFFER_TOO_SMALL && needed > 1, "message size");
  std::string out(needed, '\0');
  size_t again = 0;
  Check(zf_chat_turn_message(t, out.data(), out.size(), &again) == ZF_OK && again == needed, "message copied");
  Check(out.back() == '\0', "message NUL-terminated");
  out.pop_back();
  return out;
}

struct Collected {
  std::string content, reasoning;
  struct Call {
    std::string id, name, args;
  };
  std::vector<Call> calls;
  zf_turn_event done{};
  bool failed = false;  // an evaluation error ended the turn (its DONE carries no usage)
};

void Add(const zf_turn_event& e, bool want_logprobs, Collected* c) {
  Check(e.kind >= ZF_TURN_CONTENT && e.kind <= ZF_TURN_DONE, "a known event kind");
  Check(want_logprobs || (e.logprobs == nullptr && e.n_logprobs == 0), "no logprobs unless asked");
  Check(e.n_logprobs == 0 || (e.logprob_stride == 1 + kLogprobs && e.n_logprobs % e.logprob_stride == 0),
        "logprobs in whole tokens");
  Check(e.kind != ZF_TURN_LOGPROBS || e.n_logprobs > 0, "a LOGPROBS event carries some");
  const bool has_text = e.kind == ZF_TURN_CONTENT || e.kind == ZF_TURN_REASONING || e.kind == ZF_TURN_TOOL_ARGS;
  Check(has_text == (e.text != nullptr) && (has_text || e.text_len == 0), "text exactly on text events");
  const std::string text = has_text ? std::string(e.text, e.text_len) : std::string();
  Check(zf::IsValidUtf8(text), "event text is whole UTF-8 characters");
  switch (e.kind) {
    case ZF_TURN_CONTENT: c->content += text; break;
    case ZF_TURN_REASONING: c->reasoning += text; break;
    case ZF_TURN_TOOL_CALL:
      Check(e.tool_index >= 0 && size_t(e.tool_index) == c->calls.size(), "calls begin in index order");
      Check(e.tool_id != nullptr && e.tool_name != nullptr, "a call has an id and a name");
      c->calls.push_back({e.tool_id, e.tool_name, ""});
      break;
    case ZF_TURN_TOOL_ARGS:
      Check(e.tool_index >= 0 && size_t(e.tool_index) < c->calls.size(), "arguments of a begun call");
      c->calls[size_t(e.tool_index)].args += text;
      break;
    case ZF_TURN_DONE: c->done = e; break;
    default: break;
  }
}

// The events put together are the message zf_chat_turn_message writes.
void CheckMessage(const Collected& c, const std::string& text) {
  const Json m = Json::parse(text, nullptr, false);
  Check(!m.is_discarded() && m.is_object() && m.value("role", "") == "assistant", "the message is assistant JSON");
  const Json content = m.value("content", Json());
  Check(content.is_null() ? c.content.empty() && !c.calls.empty() : content.is_string() && content == c.content,
        "CONTENT events are the content");
  const Json reasoning = m.value("reasoning_content", Json(""));
  Check(reasoning.is_string() && reasoning == c.reasoning, "REASONING events are reasoning_content");
  const Json calls = m.value("tool_calls", Json::array());
  Check(calls.is_array() && calls.size() == c.calls.size() && (m.contains("tool_calls") == !c.calls.empty()),
        "TOOL_CALL events are the tool calls");
  for (size_t i = 0; i < c.calls.size(); ++i) {
    const Json& call = calls[i];
    Check(call.is_object() && call.value("id", Json()) == c.calls[i].id && call.contains("function") &&
              call["function"].value("name", Json()) == c.calls[i].name &&
              call["function"].value("arguments", Json()) == c.calls[i].args,
          "each call's id, name and arguments are its events'");
  }
}

// Drains a begun turn; the turn's status goes to the caller only through the invariants.
Collected Drain(zf_turn* t, bool want_logprobs) {
  Collected c;
  for (int i = 0;; ++i) {
    Check(i < 64 * kMaxTokens, "a turn ends");
    zf_turn_event e;
    std::memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    const zf_status st = zf_chat_turn_next(t, &e);
    CheckFailure(st, "zf_chat_turn_next");
    if (st != ZF_OK) {  // an evaluation error ends the turn: DONE follows
      e.struct_size = sizeof e;
      Check(zf_chat_turn_next(t, &e) == ZF_OK && e.kind == ZF_TURN_DONE, "a failed turn is done");
      c.done = e;
      c.failed = true;
      return c;
    }
    Add(e, want_logprobs, &c);
    if (e.kind == ZF_TURN_DONE) break;
  }
  for (int k = 0; k < 2; ++k) {
    zf_turn_event e;
    e.struct_size = sizeof e;
    Check(zf_chat_turn_next(t, &e) == ZF_OK && e.kind == ZF_TURN_DONE && e.n_generated == c.done.n_generated &&
              e.finish_reason == c.done.finish_reason && e.stop_reason == c.done.stop_reason,
          "DONE repeats");
  }
  const zf_turn_event& d = c.done;
  Check(d.n_generated >= 0 && d.n_generated <= kMaxTokens, "n_generated <= max_tokens");
  Check(d.n_cached >= 0 && d.n_cached < d.n_prompt, "at least one prompt token is evaluated");
  Check(d.finish_reason >= ZF_FINISH_STOP && d.finish_reason <= ZF_FINISH_TOOL_CALLS, "a known finish reason");
  Check((d.finish_reason == ZF_FINISH_LENGTH) ==
            (d.stop_reason == ZF_STOP_MAX_TOKENS || d.stop_reason == ZF_STOP_CONTEXT_FULL),
        "finish 'length' exactly when cut");
  Check(d.finish_reason != ZF_FINISH_TOOL_CALLS || !c.calls.empty(), "finish 'tool_calls' with calls");
  CheckMessage(c, Message(t));
  return c;
}

// Greedy, or sampled (seeded: other texts, EOS at other places).
zf_generate_params Sampling(bool logprobs, bool sampled, uint64_t seed) {
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = kMaxTokens;
  g.temperature = sampled ? 1.5f : 0.0f;
  g.top_k = 0;
  g.seed = seed;
  g.n_logprobs = logprobs ? kLogprobs : 0;
  return g;
}

// A fixed, valid turn: it must run on any session the fuzzed turn leaves behind.
void FixedTurn(zf_session* s) {
  const zf_generate_params g = Sampling(false, false, 7);
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.request_json = R"({"messages": [{"role": "user", "content": "ab a"}]})";
  p.generate = &g;
  zf_turn* t = nullptr;
  const zf_status st = zf_chat_turn_begin(s, &p, &t);
  Check(st == ZF_OK && t != nullptr, "the session runs a valid turn");
  const Collected c = Drain(t, false);
  Check(!c.failed && c.done.n_prompt > 0 && c.calls.empty(), "the valid turn's usage");
  zf_chat_turn_free(t);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  zf::fuzz::QuietLogs();
  Model();
  CorpusTemplates();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t options = data[0];
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string request = rest.substr(0, nul);
  std::string tmpl;
  const char* template_text = nullptr;
  if (nul != std::string::npos) {
    tmpl = rest.substr(nul + 1);
    if (tmpl.size() <= 1) {
      tmpl = CorpusTemplates()[tmpl.empty() ? 0 : uint8_t(tmpl[0]) % kNTemplates];
    } else if (tmpl.find('\0') != std::string::npos) {
      return 0;  // a C string ends at its NUL
    }
    template_text = tmpl.c_str();
  }
  const bool want_logprobs = (options & 1) != 0;
  const zf_generate_params g = Sampling(want_logprobs, (options & 4) != 0, options >> 3);
  zf_turn_params p;
  zf_turn_params_init(&p, sizeof p);
  p.flags = ZF_CHAT_FIXED_TIME;  // the prompt and the turn render alike
  p.time_unix = 1700000000;
  p.request_json = request.c_str();
  p.template_text = template_text;
  p.generate = &g;

  zf_model* model = Model();
  size_t needed = 0;
  const zf_status prompt_st = zf_chat_turn_prompt(model, &p, nullptr, 0, &needed);
  CheckFailure(prompt_st, "zf_chat_turn_prompt");
  std::string prompt;
  if (prompt_st == ZF_ERR_BUFFER_TOO_SMALL) {
    prompt.resize(needed);
    size_t again = 0;
    Check(zf_chat_turn_prompt(model, &p, prompt.data(), prompt.size(), &again) == ZF_OK && again == needed &&
              prompt.back() == '\0',
          "the prompt is copied out at the size it asked for");
    prompt.pop_back();
  } else {
    Check(prompt_st != ZF_OK, "an empty buffer cannot hold the prompt");
  }

  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  sp.n_ctx = kCtx;
  sp.n_threads = 1;
  zf_session* s = nullptr;
  Check(zf_session_create(model, &sp, &s) == ZF_OK, "session on the tiny model");
  if ((options & 2) != 0) FixedTurn(s);

  zf_turn* t = nullptr;
  const zf_status st = zf_chat_turn_begin(s, &p, &t);
  CheckFailure(st, "zf_chat_turn_begin");
  Check((st == ZF_OK) == (t != nullptr), "a turn exactly when begun");
  if (prompt_st != ZF_ERR_BUFFER_TOO_SMALL) {
    Check(st == prompt_st, "begin fails as the prompt did");
  } else if (st == ZF_OK) {
    const Collected c = Drain(t, want_logprobs);
    size_t n = 0;
    const zf_status tok = zf_tokenize(model, prompt.data(), prompt.size(),
                                      ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL, nullptr, 0, &n);
    Check(c.failed || ((tok == ZF_OK || tok == ZF_ERR_BUFFER_TOO_SMALL) && int64_t(n) == c.done.n_prompt),
          "n_prompt counts zf_chat_turn_prompt's tokens");
    zf_chat_turn_free(t);
  } else {
    Check(st == ZF_ERR_INVALID_ARGUMENT || st == ZF_ERR_CONTEXT_FULL || st == ZF_ERR_UNSUPPORTED ||
              st == ZF_ERR_OUT_OF_MEMORY,
          "begin refuses a rendered prompt only for its constraint or its length");
  }
  FixedTurn(s);
  zf_session_free(s);
  return 0;
}

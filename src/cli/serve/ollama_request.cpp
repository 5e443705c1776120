// Ollama's request bodies translated into the generation path's: the chat fields into the chat
// turn's OpenAI-shaped request JSON, `options` into OpenAI's sampling names, which then go
// through ParseCompletion so that ranges and defaults are checked by the same rules as
// /v1/chat/completions (its messages renamed back to Ollama's fields).
#include "ollama_request.h"

#include <utility>
#include <vector>

namespace cli::serve {

namespace {

constexpr size_t kMaxEmbedInputs = 2048;  // --max-inputs' default (the module cannot see the flag)

// A problem with a field: a 400 naming it.
[[noreturn]] void Bad(const std::string& field, const std::string& what) {
  throw BadRequest("invalid_value", "'" + field + "' " + what);
}

const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string StringField(const json& obj, const char* key, const std::string& name) {
  const json* v = Field(obj, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) Bad(name, "must be a string");
  return v->get<std::string>();
}

bool BoolField(const json& obj, const char* key, bool def) {
  const json* v = Field(obj, key);
  if (v == nullptr) return def;
  if (!v->is_boolean()) Bad(key, "must be a boolean");
  return v->get<bool>();
}

// `images` (a list of base64 images) as OpenAI image parts, before the text as Ollama places
// them; an empty list is no input.
json ImageParts(const json& obj, const std::string& name, const RequestContext& ctx) {
  json parts = json::array();
  const json* v = Field(obj, "images");
  if (v == nullptr) return parts;
  if (!v->is_array()) Bad(name, "must be a list of base64-encoded images");
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string at = name + "[" + std::to_string(i) + "]";
    if (!(*v)[i].is_string()) Bad(at, "must be a base64-encoded image");
    parts.push_back(ImagePart((*v)[i].get<std::string>(), at, ctx.alias, ctx.images));
  }
  return parts;
}

// A message's content: the text alone, or the images and then the text.
json Content(const std::string& text, json images) {
  if (images.empty()) return text;
  if (!text.empty()) images.push_back({{"type", "text"}, {"text", text}});
  return images;
}

std::string ModelOf(const json& body, const RequestContext& /*ctx*/, const char* alt_key = nullptr) {
  std::string name = StringField(body, "model", "model");
  if (name.empty() && alt_key != nullptr) name = StringField(body, alt_key, alt_key);
  if (name.empty()) throw BadRequest("missing_field", "model is required");
  // Which model the name picks is the server's decision (FrontDoor::Admit, OllamaNameMatches).
  return name;
}

// A duration ("5m", "-1") or seconds: the server applies it (FrontDoor::Admit); checked here too.
void CheckKeepAlive(const json& body) {
  const json* v = Field(body, "keep_alive");
  if (v != nullptr && !v->is_string() && !v->is_number()) Bad("keep_alive", "must be a duration string or a number");
}

// Ollama's `format`: "json" or a JSON schema, as OpenAI's response_format.
void TranslateFormat(const json& body, json* oa) {
  const json* f = Field(body, "format");
  if (f == nullptr || (f->is_string() && f->get<std::string>().empty())) return;
  if (f->is_string() && f->get<std::string>() == "json") {
    (*oa)["response_format"] = {{"type", "json_object"}};
  } else if (f->is_object()) {
    (*oa)["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *f}}}};
  } else {
    Bad("format", "must be \"json\" or a JSON schema object");
  }
}

// `think`: true / false, or an effort ("low", "medium", "high", which turn it on) -> the
// template's enable_thinking (and reasoning_effort, which gpt-oss-style templates read).
void TranslateThink(const json& body, json* oa) {
  const json* t = Field(body, "think");
  if (t == nullptr) return;
  json kw = json::object();
  if (t->is_boolean()) {
    kw["enable_thinking"] = t->get<bool>();
  } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
    kw["enable_thinking"] = true;
    kw["reasoning_effort"] = *t;
  } else {
    Bad("think", "must be true, false, \"low\", \"medium\" or \"high\"");
  }
  (*oa)["chat_template_kwargs"] = kw;
}

// The sampling `options` under OpenAI's / llama-server's names; the rest of Ollama's options
// (num_ctx, num_batch, mirostat, ...) are accepted and ignored, as Ollama ignores unknown ones.
void TranslateOptions(const json& body, json* oa) {
  const json* o = Field(body, "options");
  if (o == nullptr) return;
  if (!o->is_object()) Bad("options", "must be an object");
  for (const char* key : {"temperature", "top_k", "top_p", "min_p", "seed", "stop", "repeat_penalty", "repeat_last_n",
                          "frequency_penalty", "presence_penalty"}) {
    if (const json* v = Field(*o, key)) (*oa)[key] = *v;
  }
  if (const json* n = Field(*o, "num_predict")) {
    if (!n->is_number_integer()) Bad("options.num_predict", "must be an integer");
    const int64_t v = n->get<int64_t>();
    // -1: no limit, -2: until the context is full; both end at the context here.
    if (v >= 1) {
      (*oa)["max_tokens"] = v;
    } else if (v != -1 && v != -2) {
      Bad("options.num_predict", "must be -1 (no limit), -2 (fill the context) or at least 1");
    }
  }
  if (const json* n = Field(*o, "num_ctx")) {
    // Accepted; the server's context (--ctx-size) is what applies, and a longer prompt is a 400.
    if (!n->is_number_integer() || n->get<int64_t>() < 1) Bad("options.num_ctx", "must be a positive integer");
  }
}

// ParseCompletion's messages name OpenAI's fields; say them as the Ollama request has them.
ApiError InOllamaTerms(ApiError e) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"'max_tokens'", "'options.num_predict'"},     {"'temperature'", "'options.temperature'"},
      {"'top_p'", "'options.top_p'"},                {"'top_k'", "'options.top_k'"},
      {"'min_p'", "'options.min_p'"},                {"'seed'", "'options.seed'"},
      {"'stop'", "'options.stop'"},                  {"'repeat_penalty'", "'options.repeat_penalty'"},
      {"'repeat_last_n'", "'options.repeat_last_n'"}, {"'frequency_penalty'", "'options.frequency_penalty'"},
      {"'presence_penalty'", "'options.presence_penalty'"}, {"'response_format'", "'format'"},
      {"'response_format.json_schema.schema'", "'format'"}};
  for (const auto& [from, to] : kNames) {
    const std::string f = from;
    for (size_t at = e.message.find(f); at != std::string::npos; at = e.message.find(f, at + 1)) {
      e.message.replace(at, f.size(), to);
    }
  }
  return e;
}

// Ollama's messages as OpenAI's: tool calls' arguments are objects (OpenAI: a JSON string), a
// tool result names its tool (tool_name; OpenAI: the call's id, matched here to the earliest
// unanswered call of that name), assistant `thinking` is reasoning_content.
json TranslateMessages(const json& msgs, const RequestContext& ctx) {
  if (!msgs.is_array()) Bad("messages", "must be a list of messages");
  json out = json::array();
  std::vector<std::pair<std::string, std::string>> open;  // (name, id) of calls not yet answered
  int n_calls = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& m = msgs[i];
    if (!m.is_object()) Bad(at, "must be an object");
    const std::string role = StringField(m, "role", at + ".role");
    if (role.empty()) throw BadRequest("missing_field", "'" + at + ".role' is required");
    json o = {{"role", role},
              {"content", Content(StringField(m, "content", at + ".content"), ImageParts(m, at + ".images", ctx))}};
    const std::string thinking = StringField(m, "thinking", at + ".thinking");
    if (!thinking.empty()) o["reasoning_content"] = thinking;
    if (const json* calls = Field(m, "tool_calls")) {
      if (!calls->is_array()) Bad(at + ".tool_calls", "must be a list");
      json oc = json::array();
      for (size_t j = 0; j < calls->size(); ++j) {
        const std::string ca = at + ".tool_calls[" + std::to_string(j) + "]";
        const json& c = (*calls)[j];
        if (!c.is_object()) Bad(ca, "must be an object");
        const json* fn = Field(c, "function");
        if (fn == nullptr || !fn->is_object()) Bad(ca + ".function", "must be an object with a name and arguments");
        const std::string name = StringField(*fn, "name", ca + ".function.name");
        if (name.empty()) throw BadRequest("missing_field", "'" + ca + ".function.name' is required");
        std::string args = "{}";
        if (const json* a = Field(*fn, "arguments")) {
          if (a->is_object()) args = a->dump();
          else if (a->is_string()) args = a->get<std::string>();  // OpenAI's form, taken as well
          else Bad(ca + ".function.arguments", "must be an object");
        }
        std::string id = StringField(c, "id", ca + ".id");
        if (id.empty()) id = "call_" + std::to_string(++n_calls);
        open.emplace_back(name, id);
        oc.push_back({{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
      }
      if (!oc.empty()) o["tool_calls"] = oc;
    }
    if (role == "tool") {
      std::string name = StringField(m, "tool_name", at + ".tool_name");
      if (name.empty()) name = StringField(m, "name", at + ".name");
      std::string id = StringField(m, "tool_call_id", at + ".tool_call_id");
      if (id.empty()) {
        for (auto it = open.begin(); it != open.end(); ++it) {
          if (name.empty() || it->first == name) {
            id = it->second;
            if (name.empty()) name = it->first;
            open.erase(it);
            break;
          }
        }
      }
      if (!id.empty()) o["tool_call_id"] = id;
      if (!name.empty()) o["name"] = name;
    }
    out.push_back(std::move(o));
  }
  return out;
}

// The fields every generating request shares: stream (default true), format, options,
// keep_alive; a request for log-probabilities is refused rather than ignored.
json CommonFields(const json& body) {
  json oa = json::object();
  oa["stream"] = BoolField(body, "stream", true);
  TranslateFormat(body, &oa);
  TranslateOptions(body, &oa);
  CheckKeepAlive(body);
  if (BoolField(body, "logprobs", false)) {
    throw BadRequest("unsupported", "'logprobs' is not supported on Ollama's API here (use /v1/chat/completions)");
  }
  return oa;
}

Request Parse(const json& oa, bool chat, const RequestContext& ctx) {
  try {
    return ParseCompletion(oa.dump(), chat, ctx);
  } catch (const ApiError& e) {
    throw InOllamaTerms(e);
  }
}

OllamaRequest ParseChat(const json& body, const RequestContext& ctx) {
  OllamaRequest q;
  q.model = ModelOf(body, ctx);
  json oa = CommonFields(body);
  const json* msgs = Field(body, "messages");
  json translated = msgs == nullptr ? json::array() : TranslateMessages(*msgs, ctx);
  if (const json* tools = Field(body, "tools")) {
    if (!tools->is_array()) Bad("tools", "must be a list of tools");
    if (!tools->empty()) oa["tools"] = *tools;
  }
  TranslateThink(body, &oa);
  if (translated.empty()) {  // no messages: load the model, as Ollama answers it
    q.load_only = true;
    q.r.stream = oa["stream"].get<bool>();
    return q;
  }
  oa["messages"] = std::move(translated);
  q.r = Parse(oa, true, ctx);
  return q;
}

OllamaRequest ParseGenerate(const json& body, const RequestContext& ctx) {
  OllamaRequest q;
  q.model = ModelOf(body, ctx);
  json oa = CommonFields(body);
  const std::string prompt = StringField(body, "prompt", "prompt");
  const std::string system = StringField(body, "system", "system");
  const std::string suffix = StringField(body, "suffix", "suffix");
  if (!StringField(body, "template", "template").empty()) {
    throw BadRequest("unsupported",
                     "'template' is not supported: prompts are rendered with the model's chat template "
                     "(or --chat-template-file); send 'raw': true to give the prompt as it is");
  }
  json images = ImageParts(body, "images", ctx);
  const bool raw = BoolField(body, "raw", false);
  if (!images.empty() && (raw || !suffix.empty())) {
    throw BadRequest("unsupported", std::string("'images' with ") + (raw ? "'raw': true" : "'suffix'") +
                                        " are not supported: images are placed by the chat template");
  }
  TranslateThink(body, &oa);
  // `context` (the deprecated token list of an earlier answer) is ignored.
  if (prompt.empty() && suffix.empty() && (raw || system.empty())) {  // Ollama's "load the model" probe
    q.load_only = true;
    q.r.stream = oa["stream"].get<bool>();
    return q;
  }
  if (!suffix.empty()) {
    // Fill-in-the-middle: the model's FIM sequence around the prompt (before) and the suffix
    // (after), as /v1/completions builds it (infill_request.h); a model without FIM tokens is a
    // 400. No template renders it, so `system` and `think` do not apply.
    oa.erase("chat_template_kwargs");
    oa["prompt"] = prompt;
    oa["suffix"] = suffix;
    q.r = Parse(oa, false, ctx);
  } else if (raw) {
    oa.erase("chat_template_kwargs");  // no template renders a raw prompt
    oa["prompt"] = prompt;
    q.r = Parse(oa, false, ctx);
  } else {
    json msgs = json::array();
    if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
    msgs.push_back({{"role", "user"}, {"content", Content(prompt, std::move(images))}});
    oa["messages"] = std::move(msgs);
    q.r = Parse(oa, true, ctx);
  }
  return q;
}

OllamaRequest ParseEmbedding(const json& body, const RequestContext& ctx, bool legacy) {
  OllamaRequest q;
  q.model = ModelOf(body, ctx);
  CheckKeepAlive(body);
  if (const json* o = Field(body, "options"); o != nullptr && !o->is_object()) Bad("options", "must be an object");
  json oa = json::object();
  if (legacy) {  // /api/embeddings: one prompt, no truncation
    const std::string prompt = StringField(body, "prompt", "prompt");
    if (prompt.empty()) {
      q.empty_legacy_embedding = true;
      return q;
    }
    oa["input"] = prompt;
  } else {
    const json* in = Field(body, "input");
    if (in == nullptr) throw BadRequest("missing_field", "'input' is required");
    const bool strings = in->is_array() && [&] {
      for (const json& e : *in) {
        if (!e.is_string()) return false;
      }
      return true;
    }();
    if (!in->is_string() && !strings) Bad("input", "must be a string or a list of strings");
    oa["input"] = *in;
    oa["truncate"] = BoolField(body, "truncate", true);  // Ollama's default: cut to the context
    if (const json* d = Field(body, "dimensions")) oa["dimensions"] = *d;
  }
  q.embed = ParseEmbedRequest(oa.dump(), ctx.n_vocab, kMaxEmbedInputs);
  return q;
}

}  // namespace

std::string OllamaModelName(const std::string& alias) {
  return alias.find(':') == std::string::npos ? alias + ":latest" : alias;
}

bool OllamaNameMatches(const std::string& name, const std::string& alias) {
  return name == alias || name == OllamaModelName(alias);
}

OllamaRequest ParseOllama(OllamaEndpoint endpoint, const std::string& text, const RequestContext& ctx) {
  const json body = ParseObject(text);
  try {
    switch (endpoint) {
      case OllamaEndpoint::kChat: return ParseChat(body, ctx);
      case OllamaEndpoint::kGenerate: return ParseGenerate(body, ctx);
      case OllamaEndpoint::kEmbed: return ParseEmbedding(body, ctx, false);
      case OllamaEndpoint::kEmbeddings: return ParseEmbedding(body, ctx, true);
      case OllamaEndpoint::kShow: {
        OllamaRequest q;
        q.model = ModelOf(body, ctx, "name");
        return q;
      }
    }
  } catch (const json::exception& e) {  // a type this code did not check: still the request's fault
    throw BadRequest("invalid_type", std::string("request body: ") + e.what());
  }
  throw BadRequest("invalid_value", "unknown endpoint");
}

}  // namespace cli::serve

// Parsing and validating completion and chat completion bodies.
#include "request.h"

#include <algorithm>
#include <cmath>

#include "../common.h"
#include "api_error.h"
#include "audio_part.h"
#include "infill_request.h"
#include "model_text.h"

namespace cli::serve {

std::string TurnRequestJson(const json& body) {
  if (!body.contains("messages")) throw BadRequest("missing_field", "'messages' is required");
  json turn = json::object();
  for (const char* key : {"messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
                          "reasoning_format", "chat_template_kwargs", "documents"}) {
    if (body.contains(key)) turn[key] = body[key];
  }
  return turn.dump();
}

namespace {

// The output constraint of a body, if any: OpenAI's response_format (json_object, json_schema),
// vLLM's structured_outputs {json|regex|choice|grammar} (also at the top level, and its older
// guided_* names), llama-server's json_schema and grammar (Lark: llguidance's dialect; GBNF is
// not supported). At most one. A chat turn reads response_format itself and compiles its
// constraint once when it begins; completions compile theirs here, before a slot is taken.
void ParseConstraint(const json& body, const zf_model* model, bool chat, Request* r) {
  struct Found {
    std::string field;
    int32_t kind;
    std::string text;
  };
  std::vector<Found> found;
  auto text_of = [](const json& v, const std::string& field) {
    if (!v.is_string()) throw BadRequest("invalid_type", "'" + field + "' must be a string");
    return v.get<std::string>();
  };
  auto schema_of = [](const json& v, const std::string& field) {
    if (!v.is_object() && !v.is_boolean()) throw BadRequest("invalid_type", "'" + field + "' must be a JSON schema object");
    return v.dump();
  };
  auto choice_of = [](const json& v, const std::string& field) {
    if (!v.is_array() || v.empty() || !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); })) {
      throw BadRequest("invalid_type", "'" + field + "' must be a non-empty list of strings");
    }
    return v.dump();
  };
  auto take = [&](const json& holder, const std::string& prefix, const char* key, int32_t kind) {
    if (!holder.contains(key) || holder[key].is_null()) return;
    const std::string field = prefix + key;
    const json& v = holder[key];
    std::string text = kind == ZF_CONSTRAINT_JSON_SCHEMA ? schema_of(v, field)
                       : kind == ZF_CONSTRAINT_CHOICE  ? choice_of(v, field)
                                                       : text_of(v, field);
    if (kind == ZF_CONSTRAINT_LARK && text.rfind("%llguidance", 0) == 0) {
      text = text.substr(text.find('\n') == std::string::npos ? text.size() : text.find('\n') + 1);
    }
    found.push_back({field, kind, std::move(text)});
  };
  if (!chat && body.contains("response_format") && !body["response_format"].is_null()) {
    const json& rf = body["response_format"];
    const std::string type = rf.is_object() ? rf.value("type", std::string()) : std::string();
    if (type == "json_object") {
      found.push_back({"response_format", ZF_CONSTRAINT_JSON_SCHEMA, R"({"type": "object"})"});
    } else if (type == "json_schema") {
      const json js = rf.value("json_schema", json());
      if (!js.is_object() || !js.contains("schema")) {
        throw BadRequest("invalid_value", "'response_format.json_schema' needs a 'schema'");
      }
      found.push_back({"response_format", ZF_CONSTRAINT_JSON_SCHEMA, schema_of(js["schema"], "response_format.json_schema.schema")});
    } else if (type != "text") {
      throw BadRequest("invalid_value", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"");
    }
  }
  // vLLM's names inside structured_outputs; at the top level also llama-server's json_schema
  // and grammar, and vLLM's older guided_* names.
  static const std::pair<const char*, int32_t> kFields[] = {
      {"json", ZF_CONSTRAINT_JSON_SCHEMA}, {"regex", ZF_CONSTRAINT_REGEX}, {"choice", ZF_CONSTRAINT_CHOICE},
      {"grammar", ZF_CONSTRAINT_LARK}};
  if (body.contains("structured_outputs") && !body["structured_outputs"].is_null()) {
    const json& so = body["structured_outputs"];
    if (!so.is_object()) throw BadRequest("invalid_type", "'structured_outputs' must be an object");
    for (const auto& [key, kind] : kFields) take(so, "structured_outputs.", key, kind);
  }
  for (const auto& [key, kind] : kFields) {
    const std::string name = key;
    take(body, "", name == "json" ? "json_schema" : key, kind);
    take(body, "", ("guided_" + name).c_str(), kind);
  }
  if (found.size() > 1) {
    throw BadRequest("invalid_value", "'" + found[0].field + "' and '" + found[1].field + "' both constrain the output; give one");
  }
  if (found.empty()) return;
  r->constraint = std::move(found[0].text);
  r->constraint_kind = found[0].kind;
  if (chat) return;
  // Compiled once here so that a bad one is a 400 before a slot is taken (generation compiles
  // it again; a schema compiles in about a millisecond).
  if (zf_constraint_check(model, r->constraint_kind, r->constraint.c_str()) != ZF_OK) {
    const std::string why = zf_last_error();
    if (why.find("without constraints") != std::string::npos) {
      throw BadRequest("unsupported", "'" + found[0].field + "': " + why);
    }
    throw BadRequest("invalid_value", "'" + found[0].field + "': " + why);
  }
}


}  // namespace

zf_generate_params Request::GenerateParams(std::vector<const char*>* stops) const {
  stops->clear();
  for (const std::string& x : stop) stops->push_back(x.c_str());
  zf_generate_params p = gp;
  p.stop = stops->empty() ? nullptr : stops->data();
  p.n_stop = stops->size();
  p.constraint = constraint_kind != ZF_CONSTRAINT_NONE ? constraint.c_str() : nullptr;
  p.constraint_kind = constraint_kind;
  return p;
}

Request ParseCompletion(const std::string& text, bool chat, const RequestContext& ctx) {
  json body = ParseObject(text);
  Request r;
  r.chat = chat;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) throw BadRequest("invalid_type", "'model' must be a string");
    // Which model it names is the server's decision (FrontDoor::Admit), made before parsing.
    r.model_name = body["model"].get<std::string>();
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) throw BadRequest("invalid_type", "'stream' must be a boolean");
    r.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) throw BadRequest("invalid_type", "'stream_options' must be an object");
    if (so.contains("include_usage")) {
      if (!so["include_usage"].is_boolean()) throw BadRequest("invalid_type", "'include_usage' must be a boolean");
      r.include_usage = so["include_usage"].get<bool>();
    }
  }

  zf_generate_params_init(&r.gp, sizeof r.gp);
  r.gp.max_tokens = -1;  // OpenAI: up to the context unless max_tokens says otherwise
  int64_t max_tokens = 0;
  if (GetNumber(body, "max_completion_tokens", &max_tokens) || GetNumber(body, "max_tokens", &max_tokens) ||
      GetNumber(body, "n_predict", &max_tokens)) {
    if (max_tokens < 1) throw BadRequest("invalid_value", "'max_tokens' must be at least 1");
    if (max_tokens > INT32_MAX) {
      throw BadRequest("invalid_value", "'max_tokens' = " + std::to_string(max_tokens) + " is too large (at most " +
                                            std::to_string(INT32_MAX) + "; omit it to generate up to the context)");
    }
    r.gp.max_tokens = int32_t(max_tokens);
  }
  double f = 0;
  if (GetNumber(body, "temperature", &f)) {
    if (f < 0 || f > 100) throw BadRequest("invalid_value", "'temperature' must be in [0, 100]");
    r.gp.temperature = float(f);
  }
  if (GetNumber(body, "top_p", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'top_p' must be in [0, 1]");
    r.gp.top_p = float(f);
  }
  if (GetNumber(body, "min_p", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'min_p' must be in [0, 1]");
    r.gp.min_p = float(f);
  }
  if (GetNumber(body, "repeat_penalty", &f)) {
    if (!(f > 0) || f > 100) throw BadRequest("invalid_value", "'repeat_penalty' must be in (0, 100] (1 = off)");
    r.gp.repeat_penalty = float(f);
  }
  // OpenAI's penalties: checked, but only 0 (off) is served (repeat_penalty is llama-server's
  // multiplicative one).
  for (const char* key : {"frequency_penalty", "presence_penalty"}) {
    if (!GetNumber(body, key, &f)) continue;
    if (f < -2 || f > 2) throw BadRequest("invalid_value", std::string("'") + key + "' must be in [-2, 2]");
    if (f != 0) {
      throw BadRequest("unsupported", std::string("'") + key + "' is not supported (only 0); use 'repeat_penalty'");
    }
  }
  // logit_bias {"token id": bias in [-100, 100]}: checked; the generation ABI has no bias, so a
  // non-empty one is refused rather than ignored.
  if (body.contains("logit_bias") && !body["logit_bias"].is_null()) {
    const json& lb = body["logit_bias"];
    if (!lb.is_object()) throw BadRequest("invalid_type", "'logit_bias' must be an object of token id -> bias");
    for (const auto& [key, bias] : lb.items()) {
      size_t used = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != key.size() || id < 0 || id >= ctx.n_vocab) {
        throw BadRequest("invalid_value", "'logit_bias' key '" + key + "' is not a token id of the vocabulary");
      }
      if (!bias.is_number() || bias.get<double>() < -100 || bias.get<double>() > 100) {
        throw BadRequest("invalid_value", "'logit_bias[\"" + key + "\"]' must be a number in [-100, 100]");
      }
    }
    if (!lb.empty()) throw BadRequest("unsupported", "logit_bias is not supported");
  }
  if (body.contains("user") && !body["user"].is_null() && !body["user"].is_string()) {
    throw BadRequest("invalid_type", "'user' must be a string");
  }
  int64_t k = 0;
  if (GetNumber(body, "top_k", &k)) {
    if (k < 0 || k > INT32_MAX) throw BadRequest("invalid_value", "'top_k' must be >= 0");
    r.gp.top_k = int32_t(k);
  }
  if (GetNumber(body, "repeat_last_n", &k)) {  // llama-server's: the penalty's window, -1 = all
    if (k < -1 || k > INT32_MAX) throw BadRequest("invalid_value", "'repeat_last_n' must be -1 (the context) or >= 0");
    r.gp.repeat_last_n = int32_t(k);
  }
  if (GetNumber(body, "seed", &k)) r.gp.seed = uint64_t(k);
  if (body.contains("ignore_eos") && !body["ignore_eos"].is_null()) {  // llama-server's extension
    if (!body["ignore_eos"].is_boolean()) throw BadRequest("invalid_type", "'ignore_eos' must be a boolean");
    if (body["ignore_eos"].get<bool>()) r.gp.flags |= ZF_GENERATE_IGNORE_EOS;
  }
  // Speculative decoding (--lookup): llama-server's per-request "speculative.n_max" / ".n_min"
  // override the server's draft length (0 opts out); the output is the same either way.
  r.gp.draft_max = ctx.draft_max;
  for (const char* key : {"speculative.n_max", "speculative.n_min"}) {
    if (!GetNumber(body, key, &k)) continue;
    if (k < 0 || k > ZF_MAX_DRAFT) {
      throw BadRequest("invalid_value", std::string("'") + key + "' must be in [0, " + std::to_string(ZF_MAX_DRAFT) + "]");
    }
    (std::string(key) == "speculative.n_max" ? r.gp.draft_max : r.gp.draft_min) = int32_t(k);
  }
  // llama-server's per-request LoRA scales: [{"id": adapter index, "scale": number}].
  if (body.contains("lora") && !body["lora"].is_null()) {
    const json& l = body["lora"];
    if (!l.is_array()) throw BadRequest("invalid_type", "'lora' must be an array of {\"id\", \"scale\"}");
    r.lora_set = true;
    for (size_t i = 0; i < l.size(); ++i) {
      const std::string at = "lora[" + std::to_string(i) + "]";
      if (!l[i].is_object() || !l[i].contains("id") || !l[i]["id"].is_number_integer() ||
          (l[i].contains("scale") && !l[i]["scale"].is_number())) {
        throw BadRequest("invalid_type", "'" + at + "' must be {\"id\": integer, \"scale\": number}");
      }
      const int64_t id = l[i]["id"].get<int64_t>();
      if (id < 0 || id >= ctx.n_lora) {
        throw BadRequest("invalid_value", "'" + at + ".id' = " + std::to_string(id) + " is not an adapter of this model (it has " +
                                              std::to_string(ctx.n_lora) + "; GET /lora-adapters lists them)");
      }
      const double scale = l[i].value("scale", 0.0);
      if (!std::isfinite(scale) || std::fabs(scale) > 1e6) {
        throw BadRequest("invalid_value", "'" + at + ".scale' must be a finite number");
      }
      r.lora.emplace_back(int32_t(id), float(scale));
    }
  }
  r.cache_prompt = ctx.cache_prompt;
  if (body.contains("cache_prompt") && !body["cache_prompt"].is_null()) {  // llama-server's extension
    if (!body["cache_prompt"].is_boolean()) throw BadRequest("invalid_type", "'cache_prompt' must be a boolean");
    r.cache_prompt = body["cache_prompt"].get<bool>();
  }
  if (chat) {
    if (body.contains("logprobs") && !body["logprobs"].is_null()) {
      if (!body["logprobs"].is_boolean()) throw BadRequest("invalid_type", "'logprobs' must be a boolean");
      r.logprobs = body["logprobs"].get<bool>();
    }
    if (GetNumber(body, "top_logprobs", &k)) {
      if (k < 0 || k > ZF_MAX_LOGPROBS) {
        throw BadRequest("invalid_value", "'top_logprobs' must be in [0, " + std::to_string(ZF_MAX_LOGPROBS) + "]");
      }
      if (!r.logprobs && k > 0) throw BadRequest("invalid_value", "'top_logprobs' requires 'logprobs': true");
      r.top_logprobs = int32_t(k);
    }
  } else if (GetNumber(body, "logprobs", &k)) {  // legacy completions: the number of alternatives
    if (k < 0 || k > ZF_MAX_LOGPROBS) {
      throw BadRequest("invalid_value", "'logprobs' must be in [0, " + std::to_string(ZF_MAX_LOGPROBS) + "]");
    }
    r.logprobs = true;
    r.top_logprobs = int32_t(k);
  }
  if (r.logprobs) r.gp.n_logprobs = std::max<int32_t>(1, r.top_logprobs);
  if (body.contains("n") && !body["n"].is_null() && body["n"] != 1) {
    throw BadRequest("invalid_value", "only n = 1 is supported");
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      for (const json& e : s) {
        if (!e.is_string()) throw BadRequest("invalid_type", "'stop' must be a string or a list of strings");
        r.stop.push_back(e.get<std::string>());
      }
    } else {
      throw BadRequest("invalid_type", "'stop' must be a string or a list of strings");
    }
    r.stop.erase(std::remove(r.stop.begin(), r.stop.end(), std::string()), r.stop.end());
  }

  ParseConstraint(body, ctx.model, chat, &r);

  // The prompt, tokenized as `zerfoo generate` does (BOS per the model, special-token text as
  // tokens), so greedy outputs equal the CLI's.
  const uint32_t tflags = ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL;
  if (chat) {
    // The chat fields go to the library's chat turn as they are (it checks them, renders the
    // messages, applies the tool-choice policy and reads the answer back).
    if (body.contains("messages")) {
      r.n_images = ResolveImages(&body["messages"], ctx.alias, ctx.images);
      const int n_audio = ResolveAudio(&body["messages"], ctx.alias, ctx.images);
      if (r.n_images > 0 || n_audio > 0) r.mmproj = ctx.images.mmproj;
    }
    r.turn_request = TurnRequestJson(body);
    r.turn_messages = body["messages"];
    r.chat_template = ctx.chat_template;
    return r;
  } else {
    if (!body.contains("prompt")) throw BadRequest("missing_field", "'prompt' is required");
    const json& p = body["prompt"];
    if (CompletionSuffixPrompt(body, ctx, r.gp.max_tokens, &r.prompt)) {
      // OpenAI's `suffix`: a fill-in-the-middle prompt (infill_request.h).
    } else if (p.is_string()) {
      r.prompt = Tokenize(ctx.model, p.get<std::string>(), tflags);
    } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
      r.prompt = Tokenize(ctx.model, p[0].get<std::string>(), tflags);
    } else if (p.is_array() && !p.empty() && std::all_of(p.begin(), p.end(), [](const json& e) {
                 return e.is_number_integer();
               })) {
      for (const json& e : p) {
        const int64_t t = e.get<int64_t>();
        if (t < 0 || t >= ctx.n_vocab) throw BadRequest("invalid_value", "token id outside the vocabulary");
        r.prompt.push_back(int32_t(t));
      }
    } else {
      throw BadRequest("invalid_type", "'prompt' must be a string or an array of token ids");
    }
  }
  if (r.prompt.empty()) throw BadRequest("invalid_value", "the prompt is empty");
  if (int64_t(r.prompt.size()) + 1 > ctx.n_ctx) {
    throw BadRequest("context_length_exceeded", "the prompt has " + std::to_string(r.prompt.size()) +
                                                    " tokens; this server's context is " + std::to_string(ctx.n_ctx) +
                                                    " tokens per request");
  }
  return r;
}

}  // namespace cli::serve

// Anthropic Messages bodies into the chat turn's OpenAI-shaped request (see anthropic_request.h).
#include "anthropic_request.h"

#include <algorithm>
#include <cstdint>

namespace cli::serve {

namespace {

// A present, non-null field of an object; nullptr otherwise.
const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const json& v, const std::string& field) {
  if (!v.is_string()) throw BadRequest("invalid_type", "'" + field + "' must be a string");
  return v.get<std::string>();
}

const json& Obj(const json& v, const std::string& field) {
  if (!v.is_object()) throw BadRequest("invalid_type", "'" + field + "' must be an object");
  return v;
}

const json& Arr(const json& v, const std::string& field) {
  if (!v.is_array()) throw BadRequest("invalid_type", "'" + field + "' must be an array");
  return v;
}

bool Bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) throw BadRequest("invalid_type", "'" + field + "' must be a boolean");
  return v.get<bool>();
}

// A block's "type" (required string).
std::string TypeOf(const json& block, const std::string& field) {
  Obj(block, field);
  const json* t = Field(block, "type");
  if (t == nullptr) throw BadRequest("missing_field", "'" + field + ".type' is required");
  return Str(*t, field + ".type");
}

// Image and document blocks where only text is taken (system, tool results).
ApiError TextOnly(const std::string& field, const std::string& type) {
  return BadRequest("unsupported", "'" + field + "': " + type +
                                       " blocks are not supported here (only text; send images in a user message)");
}

// An image block's source ({"type": "base64", "media_type", "data"} or {"type": "url", "url"})
// as an OpenAI image part (image_request.h).
json ImageBlock(const json& b, const std::string& field, const RequestContext& ctx) {
  const json* src = Field(b, "source");
  if (src == nullptr) throw BadRequest("missing_field", "'" + field + ".source' is required");
  Obj(*src, field + ".source");
  const json* t = Field(*src, "type");
  if (t == nullptr) throw BadRequest("missing_field", "'" + field + ".source.type' is required");
  const std::string type = Str(*t, field + ".source.type");
  auto need = [&](const char* key) {
    const json* v = Field(*src, key);
    if (v == nullptr) throw BadRequest("missing_field", "'" + field + ".source." + key + "' is required");
    return Str(*v, field + ".source." + key);
  };
  if (type == "base64") {
    // The bytes' own type is what the decoder goes by (image_request.h sniffs it); media_type
    // is checked to be one.
    const std::string media = need("media_type");
    if (media.compare(0, 6, "image/") != 0) {
      throw BadRequest("invalid_value", "'" + field + ".source.media_type' must be an image type (got "" + media + "")");
    }
    return ImagePart(need("data"), field + ".source.data", ctx.alias, ctx.images);
  }
  if (type == "url") return ImagePart(need("url"), field + ".source.url", ctx.alias, ctx.images);
  throw BadRequest("invalid_value", "'" + field + ".source.type' must be \"base64\" or \"url\" (got \"" + type + "\")");
}

// A text block's text (block `f` where only text is taken).
std::string BlockText(const json& block, const std::string& f) {
  const std::string type = TypeOf(block, f);
  if (type == "image" || type == "document") throw TextOnly(f, type);
  if (type != "text") throw BadRequest("invalid_value", "'" + f + ".type' must be \"text\" here (got \"" + type + "\")");
  const json* t = Field(block, "text");
  if (t == nullptr) throw BadRequest("missing_field", "'" + f + ".text' is required");
  return Str(*t, f + ".text");
}

// Text blocks (system, tool_result content) joined with newlines; a string as it is.
std::string TextBlocks(const json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  Arr(v, field);
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string text = BlockText(v[i], field + "[" + std::to_string(i) + "]");
    if (!out.empty()) out += "\n";
    out += text;
  }
  return out;
}

// A tool_result's content: its text (text blocks joined with newlines, after `prefix`), or with
// image blocks (a screenshot tool's) the text and image parts in order.
json ToolResultContent(const json& v, const std::string& field, const std::string& prefix, const RequestContext& ctx) {
  const bool images = v.is_array() && std::any_of(v.begin(), v.end(), [](const json& b) {
    return b.is_object() && b.contains("type") && b["type"] == "image";
  });
  if (!images) return prefix + TextBlocks(v, field);
  json parts = json::array();
  if (!prefix.empty()) parts.push_back({{"type", "text"}, {"text", prefix}});
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    if (TypeOf(v[i], f) == "image") {
      parts.push_back(ImageBlock(v[i], f, ctx));
    } else {
      parts.push_back({{"type", "text"}, {"text", BlockText(v[i], f)}});
    }
  }
  return parts;
}

// Claude Code's first system block, "x-anthropic-billing-header: cc_version=...; ...", differs
// between conversations a few characters in: rendered, it would end every conversation's shared
// prefix (the tools and the long system prompt after it) at the first tokens. It is billing
// metadata, not an instruction: left out.
bool BillingHeader(const json& block) {
  static const std::string kPrefix = "x-anthropic-billing-header:";
  auto t = block.find("text");
  return t != block.end() && t->is_string() && t->get<std::string>().compare(0, kPrefix.size(), kPrefix) == 0;
}

// The system prompt: a string, or text blocks (joined with newlines; the billing header left out).
std::string SystemText(const json& v, const std::string& field) {
  if (!v.is_array()) return TextBlocks(v, field);
  json kept = json::array();
  for (const json& b : v) {
    if (!b.is_object() || !BillingHeader(b)) kept.push_back(b);
  }
  return TextBlocks(kept, field);
}

void AppendSystem(std::string* system, const std::string& text) {
  if (text.empty()) return;
  if (!system->empty()) *system += "\n";  // as the system blocks are joined
  *system += text;
}

// One Anthropic message as OpenAI messages: an assistant message (content, reasoning_content,
// tool_calls), or a user message's tool results (one "tool" message each, first, so that they
// follow the assistant's calls as OpenAI templates expect) and then its text. A system message
// in the conversation (Claude Code sends one second, beta "mid-conversation-system") is added to
// the system prompt: every template takes a leading system message, not all a later one, and it
// stays the same for the whole conversation, so the prefix stays shared.
void TranslateMessage(const json& m, size_t i, const RequestContext& ctx, json* out, std::string* system) {
  const std::string field = "messages[" + std::to_string(i) + "]";
  Obj(m, field);
  const json* role_v = Field(m, "role");
  if (role_v == nullptr) throw BadRequest("missing_field", "'" + field + ".role' is required");
  const std::string role = Str(*role_v, field + ".role");
  if (role != "user" && role != "assistant" && role != "system") {
    throw BadRequest("invalid_value", "'" + field + ".role' must be \"user\", \"assistant\" or \"system\" (got \"" +
                                          role + "\")");
  }
  const json* content = Field(m, "content");
  if (content == nullptr) throw BadRequest("missing_field", "'" + field + ".content' is required");
  if (role == "system") {
    AppendSystem(system, SystemText(*content, field + ".content"));
    return;
  }
  if (content->is_string()) {
    out->push_back({{"role", role}, {"content", content->get<std::string>()}});
    return;
  }
  if (!content->is_array()) {
    throw BadRequest("invalid_type", "'" + field + ".content' must be a string or an array of content blocks");
  }
  const bool assistant = role == "assistant";
  std::string text, reasoning;
  bool has_text = false, has_reasoning = false;
  json calls = json::array(), results = json::array();
  json parts = json::array();  // a user message's text and images in order, when it has images
  bool has_image = false;
  for (size_t j = 0; j < content->size(); ++j) {
    const json& b = (*content)[j];
    const std::string f = field + ".content[" + std::to_string(j) + "]";
    const std::string type = TypeOf(b, f);
    auto need = [&](const char* key) -> const json& {
      const json* v = Field(b, key);
      if (v == nullptr) throw BadRequest("missing_field", "'" + f + "." + key + "' is required");
      return *v;
    };
    auto only = [&](bool ok, const char* who) {
      if (!ok) throw BadRequest("invalid_value", "'" + f + "': a " + type + " block belongs in " + who + " message");
    };
    if (type == "text") {
      if (has_text) text += "\n";
      text += Str(need("text"), f + ".text");
      has_text = true;
      parts.push_back({{"type", "text"}, {"text", Str(need("text"), f + ".text")}});
    } else if (type == "image") {
      only(!assistant, "a user");
      parts.push_back(ImageBlock(b, f, ctx));
      has_image = true;
    } else if (type == "document") {
      throw BadRequest("unsupported", "'" + f + "': document blocks are not supported (send the text as a text block)");
    } else if (type == "tool_use") {
      only(assistant, "an assistant");
      const std::string id = Str(need("id"), f + ".id");
      const std::string name = Str(need("name"), f + ".name");
      const json* input = Field(b, "input");
      if (input != nullptr) Obj(*input, f + ".input");
      calls.push_back({{"id", id},
                       {"type", "function"},
                       {"function", {{"name", name}, {"arguments", input != nullptr ? Dump(*input) : "{}"}}}});
    } else if (type == "tool_result") {
      only(!assistant, "a user");
      const std::string id = Str(need("tool_use_id"), f + ".tool_use_id");
      const json* c = Field(b, "content");
      const json* err = Field(b, "is_error");
      // OpenAI's tool messages have no error flag: the model reads it in the text.
      const std::string prefix = err != nullptr && Bool(*err, f + ".is_error") ? "Error: " : "";
      results.push_back({{"role", "tool"}, {"tool_call_id", id},
                         {"content", c != nullptr ? ToolResultContent(*c, f + ".content", prefix, ctx) : json(prefix)}});
    } else if (type == "thinking") {
      only(assistant, "an assistant");
      reasoning += Str(need("thinking"), f + ".thinking");
      has_reasoning = true;
    } else if (type == "redacted_thinking") {
      only(assistant, "an assistant");  // encrypted by another server: nothing a template can show
    } else {
      throw BadRequest("invalid_value", "'" + f + ".type': \"" + type +
                                            "\" blocks are not supported (text, tool_use, tool_result, thinking, "
                                            "redacted_thinking)");
    }
  }
  if (assistant) {
    json msg = {{"role", "assistant"}};
    msg["content"] = has_text || calls.empty() ? json(text) : json(nullptr);
    if (has_reasoning) msg["reasoning_content"] = reasoning;
    if (!calls.empty()) msg["tool_calls"] = calls;
    out->push_back(std::move(msg));
    return;
  }
  for (json& r : results) out->push_back(std::move(r));
  if (has_image) {
    out->push_back({{"role", "user"}, {"content", std::move(parts)}});
  } else if (has_text || results.empty()) {
    out->push_back({{"role", "user"}, {"content", text}});
  }
}

// tools: client tools as OpenAI function tools; server tools (a type other than "custom":
// web_search_*, bash_*, text_editor_*, ...) are not served here and are left out.
json TranslateTools(const json& v, std::vector<std::string>* ignored) {
  Arr(v, "tools");
  json tools = json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = "tools[" + std::to_string(i) + "]";
    Obj(v[i], f);
    const json* type = Field(v[i], "type");
    const json* name = Field(v[i], "name");
    if (type != nullptr && Str(*type, f + ".type") != "custom") {
      ignored->push_back(name != nullptr && name->is_string() ? name->get<std::string>() : type->get<std::string>());
      continue;
    }
    if (name == nullptr) throw BadRequest("missing_field", "'" + f + ".name' is required");
    const std::string n = Str(*name, f + ".name");
    if (n.empty()) throw BadRequest("invalid_value", "'" + f + ".name' must not be empty");
    const json* schema = Field(v[i], "input_schema");
    if (schema == nullptr) throw BadRequest("missing_field", "'" + f + ".input_schema' is required");
    json fn = {{"name", n}, {"parameters", Obj(*schema, f + ".input_schema")}};
    if (const json* d = Field(v[i], "description")) fn["description"] = Str(*d, f + ".description");
    tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return tools;
}

// tool_choice {type: auto|any|tool|none, name, disable_parallel_tool_use} into turn.
void TranslateToolChoice(const json& v, json* turn) {
  Obj(v, "tool_choice");
  const json* t = Field(v, "type");
  if (t == nullptr) throw BadRequest("missing_field", "'tool_choice.type' is required");
  const std::string type = Str(*t, "tool_choice.type");
  if (type == "auto" || type == "none") {
    (*turn)["tool_choice"] = type;
  } else if (type == "any") {
    (*turn)["tool_choice"] = "required";
  } else if (type == "tool") {
    const json* name = Field(v, "name");
    if (name == nullptr) throw BadRequest("missing_field", "'tool_choice.name' is required with type \"tool\"");
    (*turn)["tool_choice"] = {{"type", "function"}, {"function", {{"name", Str(*name, "tool_choice.name")}}}};
  } else {
    throw BadRequest("invalid_value", "'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\"");
  }
  if (const json* d = Field(v, "disable_parallel_tool_use")) {
    if (Bool(*d, "tool_choice.disable_parallel_tool_use")) (*turn)["parallel_tool_calls"] = false;
  }
}

// output_config.format / output_format: {"type": "json_schema", "schema": {...}} as OpenAI's
// response_format (the turn's constrained decoding).
json OutputFormat(const json& v, const std::string& field) {
  Obj(v, field);
  const json* t = Field(v, "type");
  if (t == nullptr) throw BadRequest("missing_field", "'" + field + ".type' is required");
  if (Str(*t, field + ".type") != "json_schema") {
    throw BadRequest("invalid_value", "'" + field + ".type' must be \"json_schema\"");
  }
  const json* schema = Field(v, "schema");
  if (schema == nullptr) throw BadRequest("missing_field", "'" + field + ".schema' is required");
  Obj(*schema, field + ".schema");
  return {{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", *schema}}}};
}

}  // namespace

AnthropicRequest ParseAnthropic(const std::string& text, const RequestContext& ctx, bool count_only) {
  const json body = ParseObject(text);
  AnthropicRequest a;
  Request& r = a.r;
  r.chat = true;
  if (const json* m = Field(body, "model")) a.model = Str(*m, "model");
  r.model_name = a.model;
  if (!count_only) {
    if (const json* s = Field(body, "stream")) r.stream = Bool(*s, "stream");
  }

  zf_generate_params_init(&r.gp, sizeof r.gp);
  int64_t max_tokens = 0;
  if (GetNumber(body, "max_tokens", &max_tokens)) {
    if (max_tokens < 1) throw BadRequest("invalid_value", "'max_tokens' must be at least 1");
    // More than the context is fine: the context ends the answer (stop_reason "max_tokens").
    r.gp.max_tokens = int32_t(std::min<int64_t>(max_tokens, INT32_MAX));
  } else if (!count_only) {
    throw BadRequest("missing_field", "'max_tokens' is required");
  }
  double f = 0;
  if (GetNumber(body, "temperature", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'temperature' must be in [0, 1]");
    r.gp.temperature = float(f);
  }
  if (GetNumber(body, "top_p", &f)) {
    if (f < 0 || f > 1) throw BadRequest("invalid_value", "'top_p' must be in [0, 1]");
    r.gp.top_p = float(f);
  }
  int64_t k = 0;
  if (GetNumber(body, "top_k", &k)) {
    if (k < 0 || k > INT32_MAX) throw BadRequest("invalid_value", "'top_k' must be >= 0");
    r.gp.top_k = int32_t(k);
  }
  if (const json* s = Field(body, "stop_sequences")) {
    Arr(*s, "stop_sequences");
    for (size_t i = 0; i < s->size(); ++i) {
      const std::string x = Str((*s)[i], "stop_sequences[" + std::to_string(i) + "]");
      if (!x.empty()) r.stop.push_back(x);
    }
  }
  // Accepted and not needed here: metadata (user_id), service_tier, container,
  // context_management, mcp_servers, diagnostics, speed, inference_geo; cache_control anywhere
  // (the prefix cache is automatic). Checked only where a wrong type is surely a client bug.
  if (const json* m = Field(body, "metadata")) Obj(*m, "metadata");
  if (const json* s = Field(body, "service_tier")) Str(*s, "service_tier");

  json turn = json::object();
  json messages = json::array();
  std::string system;
  if (const json* sys = Field(body, "system")) system = SystemText(*sys, "system");
  const json* msgs = Field(body, "messages");
  if (msgs == nullptr) throw BadRequest("missing_field", "'messages' is required");
  Arr(*msgs, "messages");
  if (msgs->empty()) throw BadRequest("invalid_value", "'messages' must hold at least one message");
  for (size_t i = 0; i < msgs->size(); ++i) TranslateMessage((*msgs)[i], i, ctx, &messages, &system);
  if (!system.empty()) messages.insert(messages.begin(), json{{"role", "system"}, {"content", system}});
  turn["messages"] = messages;

  if (const json* t = Field(body, "tools")) {
    json tools = TranslateTools(*t, &a.ignored_tools);
    if (!tools.empty()) turn["tools"] = std::move(tools);
  }
  if (const json* tc = Field(body, "tool_choice")) TranslateToolChoice(*tc, &turn);

  if (const json* th = Field(body, "thinking")) {
    Obj(*th, "thinking");
    const json* t = Field(*th, "type");
    if (t == nullptr) throw BadRequest("missing_field", "'thinking.type' is required");
    const std::string type = Str(*t, "thinking.type");
    if (type != "enabled" && type != "disabled" && type != "adaptive") {
      throw BadRequest("invalid_value", "'thinking.type' must be \"enabled\", \"disabled\" or \"adaptive\"");
    }
    if (GetNumber(*th, "budget_tokens", &k) && k < 1) {
      throw BadRequest("invalid_value", "'thinking.budget_tokens' must be at least 1");
    }
    // The template's switch (Qwen3, DeepSeek, ...: enable_thinking); the budget is not enforced
    // (max_tokens bounds reasoning and answer together).
    turn["chat_template_kwargs"] = {{"enable_thinking", type != "disabled"}};
  }

  json format;
  if (const json* oc = Field(body, "output_config")) {
    Obj(*oc, "output_config");
    if (const json* e = Field(*oc, "effort")) Str(*e, "output_config.effort");
    if (const json* fm = Field(*oc, "format")) format = OutputFormat(*fm, "output_config.format");
  }
  if (const json* of = Field(body, "output_format")) {
    if (!format.is_null()) {
      throw BadRequest("invalid_value", "'output_config.format' and 'output_format' both give the output format; give one");
    }
    format = OutputFormat(*of, "output_format");
  }
  if (!format.is_null()) turn["response_format"] = std::move(format);

  r.cache_prompt = ctx.cache_prompt;
  r.gp.draft_max = ctx.draft_max;
  r.turn_request = Dump(turn);
  r.turn_messages = std::move(messages);
  r.chat_template = ctx.chat_template;
  for (const json& m : r.turn_messages) {
    if (!m["content"].is_array()) continue;
    for (const json& p : m["content"]) r.n_images += p.value("type", "") == "image_url" ? 1 : 0;
  }
  if (r.n_images > 0) r.mmproj = ctx.images.mmproj;
  return a;
}

}  // namespace cli::serve

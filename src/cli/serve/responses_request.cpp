// Responses bodies into chat turns: input items become chat messages (consecutive assistant-side
// items, i.e. reasoning, an assistant message and function calls, become one assistant message),
// flat function tools become chat tools, text.format becomes response_format; the sampling fields
// go through ParseCompletion so that their ranges are the chat endpoint's.
#include "responses_request.h"

#include <set>

namespace cli::serve {

namespace {

std::string Str(const json& v) { return v.get<std::string>(); }

bool Has(const json& o, const char* key) { return o.contains(key) && !o[key].is_null(); }

// An optional string field; "" when absent.
std::string OptString(const json& o, const char* key, const std::string& at) {
  if (!Has(o, key)) return "";
  if (!o[key].is_string()) throw BadRequest("invalid_type", "'" + at + key + "' must be a string");
  return Str(o[key]);
}

std::string NeedString(const json& o, const char* key, const std::string& at) {
  if (!Has(o, key)) throw BadRequest("missing_field", "'" + at + key + "' is required");
  return OptString(o, key, at);
}

bool OptBool(const json& o, const char* key, bool dflt) {
  if (!Has(o, key)) return dflt;
  if (!o[key].is_boolean()) throw BadRequest("invalid_type", std::string("'") + key + "' must be a boolean");
  return o[key].get<bool>();
}

// One content part's text (input_text / output_text / text / refusal); media parts are refused
// here (UserContent takes a user message's images).
std::string PartText(const json& p, const std::string& here) {
  if (!p.is_object()) throw BadRequest("invalid_type", "'" + here + "' must be a content part object");
  const std::string type = OptString(p, "type", here + ".");
  if (type == "input_text" || type == "output_text" || type == "text" || type == "summary_text" ||
      type == "reasoning_text") {
    return NeedString(p, "text", here + ".");
  }
  if (type == "refusal") return NeedString(p, "refusal", here + ".");
  if (type == "input_image") {
    throw BadRequest("unsupported", "'" + here + "': images are taken in user messages only");
  }
  if (type == "input_file" || type == "input_audio") {
    throw BadRequest("unsupported", "'" + here + "': " + type + " is not supported; send the text as input_text");
  }
  throw BadRequest("invalid_value", "'" + here + ".type' must be \"input_text\", \"output_text\" or \"refusal\"" +
                                        (type.empty() ? std::string() : " (got \"" + type + "\")"));
}

// The text of a content array's parts.
std::string PartsText(const json& parts, const std::string& at) {
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) text += PartText(parts[j], at + "[" + std::to_string(j) + "]");
  return text;
}

// A message's or a call output's content: a string or an array of parts.
std::string ContentText(const json& c, const std::string& at) {
  if (c.is_string()) return Str(c);
  if (c.is_array()) return PartsText(c, at);
  throw BadRequest("invalid_type", "'" + at + "' must be a string or an array of content parts");
}

// A user message's content: its text, or (with input_image parts) OpenAI chat parts in order.
json UserContent(const json& c, const std::string& at, const RequestContext& ctx) {
  if (!c.is_array()) return ContentText(c, at);
  json parts = json::array();
  bool image = false;
  for (size_t j = 0; j < c.size(); ++j) {
    const json& p = c[j];
    const std::string here = at + "[" + std::to_string(j) + "]";
    if (!p.is_object() || OptString(p, "type", here + ".") != "input_image") {
      parts.push_back({{"type", "text"}, {"text", PartText(p, here)}});
      continue;
    }
    if (Has(p, "file_id")) {
      throw BadRequest("unsupported", "'" + here + ".file_id': uploaded files are not supported; send image_url");
    }
    // image_url: a string here (the chat API's {"url"} object is taken too).
    std::string url;
    if (Has(p, "image_url") && p["image_url"].is_object()) url = NeedString(p["image_url"], "url", here + ".image_url.");
    else url = NeedString(p, "image_url", here + ".");
    parts.push_back(ImagePart(url, here + ".image_url", ctx.alias, ctx.images));
    image = true;
  }
  return image ? parts : json(ContentText(c, at));
}

// Input items → chat messages.
class History {
 public:
  History(json* out, const RequestContext& ctx) : out_(out), ctx_(ctx) {}

  void Item(const json& it, const std::string& at, std::vector<std::string>* ignored) {
    if (!it.is_object()) throw BadRequest("invalid_type", "'" + at + "' must be an input item object");
    std::string type = OptString(it, "type", at + ".");
    if (type.empty() && it.contains("role")) type = "message";  // EasyInputMessage: no type
    if (type == "message") {
      Message(it, at);
    } else if (type == "function_call") {
      const std::string call_id = NeedString(it, "call_id", at + ".");
      const std::string name = NeedString(it, "name", at + ".");
      const std::string args = Has(it, "arguments") ? NeedString(it, "arguments", at + ".") : "{}";
      if (name.empty()) throw BadRequest("invalid_value", "'" + at + ".name' must not be empty");
      json& a = Assistant();
      if (!a.contains("tool_calls")) a["tool_calls"] = json::array();
      a["tool_calls"].push_back({{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
      names_[call_id] = name;
    } else if (type == "function_call_output") {
      Flush();
      const std::string call_id = NeedString(it, "call_id", at + ".");
      if (!Has(it, "output")) throw BadRequest("missing_field", "'" + at + ".output' is required");
      json m = {{"role", "tool"}, {"tool_call_id", call_id}, {"content", ContentText(it["output"], at + ".output")}};
      if (names_.count(call_id)) m["name"] = names_[call_id];
      out_->push_back(std::move(m));
    } else if (type == "reasoning") {
      std::string text;
      if (Has(it, "content")) {
        if (!it["content"].is_array()) throw BadRequest("invalid_type", "'" + at + ".content' must be an array");
        text = PartsText(it["content"], at + ".content");
      }
      if (text.empty() && Has(it, "summary")) {
        if (!it["summary"].is_array()) throw BadRequest("invalid_type", "'" + at + ".summary' must be an array");
        text = PartsText(it["summary"], at + ".summary");
      }
      // Reasoning opens an assistant turn: one already holding an answer is finished.
      if (pending_.contains("content") || pending_.contains("tool_calls")) Flush();
      json& a = Assistant();
      a["reasoning_content"] = a.value("reasoning_content", std::string()) + text;
    } else if (type == "item_reference") {
      throw BadRequest("unsupported", "'" + at + "': item_reference is not supported; send the item itself or use "
                                      "previous_response_id");
    } else if (type.empty()) {
      throw BadRequest("missing_field", "'" + at + ".type' is required");
    } else {
      // Tool types not served here (web_search_call, local_shell_call, custom_tool_call, ...):
      // they cannot come from this server's answers; skipped.
      ignored->push_back(type);
    }
  }

  void Flush() {
    if (pending_.is_null()) return;
    if (!pending_.contains("content")) pending_["content"] = pending_.contains("tool_calls") ? json() : json("");
    out_->push_back(std::move(pending_));
    pending_ = json();
  }

  void Message(const json& it, const std::string& at) {
    const std::string role = NeedString(it, "role", at + ".");
    if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
      throw BadRequest("invalid_value", "'" + at + ".role' must be \"user\", \"system\", \"developer\" or \"assistant\"");
    }
    if (!it.contains("content")) throw BadRequest("missing_field", "'" + at + ".content' is required");
    if (role == "assistant") {
      std::string text = ContentText(it["content"], at + ".content");
      // A second answer, or one after calls: a new assistant message.
      if (pending_.contains("content") || pending_.contains("tool_calls")) Flush();
      Assistant()["content"] = std::move(text);
      return;
    }
    Flush();
    json content = role == "user" ? UserContent(it["content"], at + ".content", ctx_)
                                  : json(ContentText(it["content"], at + ".content"));
    out_->push_back({{"role", role == "developer" ? "system" : role}, {"content", std::move(content)}});
  }

 private:
  json& Assistant() {
    if (pending_.is_null()) pending_ = {{"role", "assistant"}};
    return pending_;
  }

  json* out_;
  const RequestContext& ctx_;
  json pending_;
  std::map<std::string, std::string> names_;  // call_id → function name (templates show it)
};

// `tools`: flat function tools → chat tools; namespace tools flattened; other types skipped.
json Tools(const json& tools, ResponsesRequest* rr, json* echo) {
  if (!tools.is_array()) throw BadRequest("invalid_type", "'tools' must be an array");
  json out = json::array();
  std::set<std::string> seen;
  auto function = [&](const json& t, const std::string& at, const std::string& ns) {
    const std::string name = NeedString(t, "name", at + ".");
    if (name.empty()) throw BadRequest("invalid_value", "'" + at + ".name' must not be empty");
    json fn = {{"name", name}};
    const std::string desc = OptString(t, "description", at + ".");
    if (!desc.empty()) fn["description"] = desc;
    if (Has(t, "parameters")) {
      if (!t["parameters"].is_object()) throw BadRequest("invalid_type", "'" + at + ".parameters' must be a JSON schema object");
      fn["parameters"] = t["parameters"];
    }
    if (Has(t, "strict")) {
      if (!t["strict"].is_boolean()) throw BadRequest("invalid_type", "'" + at + ".strict' must be a boolean");
      fn["strict"] = t["strict"];
    }
    if (!seen.insert(name).second) {
      if (ns.empty()) throw BadRequest("invalid_value", "'tools': two functions are named '" + name + "'");
      return;  // a namespaced duplicate of an offered name: the first stays
    }
    if (!ns.empty()) rr->namespace_of[name] = ns;
    out.push_back({{"type", "function"}, {"function", fn}});
    json e = {{"type", "function"}, {"name", name}, {"description", desc.empty() ? json() : json(desc)},
              {"parameters", fn.value("parameters", json())}, {"strict", fn.value("strict", json(true))}};
    echo->push_back(std::move(e));
  };
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw BadRequest("invalid_type", "'" + at + "' must be a tool object");
    const std::string type = NeedString(t, "type", at + ".");
    if (type == "function") {
      function(t, at, "");
    } else if (type == "namespace") {  // Codex: a group of functions
      const std::string ns = OptString(t, "name", at + ".");
      if (!Has(t, "tools")) continue;
      if (!t["tools"].is_array()) throw BadRequest("invalid_type", "'" + at + ".tools' must be an array");
      for (size_t j = 0; j < t["tools"].size(); ++j) {
        const json& f = t["tools"][j];
        const std::string fat = at + ".tools[" + std::to_string(j) + "]";
        if (!f.is_object()) throw BadRequest("invalid_type", "'" + fat + "' must be a tool object");
        if (OptString(f, "type", fat + ".") == "function") function(f, fat, ns);
        else rr->ignored_tools.push_back(OptString(f, "type", fat + "."));
      }
    } else {
      rr->ignored_tools.push_back(type);  // hosted or custom tools: not served here
    }
  }
  return out;
}

// tool_choice → the chat form.
json ToolChoice(const json& tc) {
  if (tc.is_string()) {
    const std::string s = Str(tc);
    if (s != "auto" && s != "none" && s != "required") {
      throw BadRequest("invalid_value", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}");
    }
    return tc;
  }
  if (!tc.is_object()) throw BadRequest("invalid_type", "'tool_choice' must be a string or an object");
  const std::string type = OptString(tc, "type", "tool_choice.");
  if (type != "function") {
    throw BadRequest("unsupported", "'tool_choice.type' \"" + type + "\" is not supported here; use \"function\" with a name, "
                                    "or \"auto\" / \"none\" / \"required\"");
  }
  const std::string name = NeedString(tc, "name", "tool_choice.");
  return {{"type", "function"}, {"function", {{"name", name}}}};
}

// text.format → response_format.
json TextFormat(const json& text) {
  if (!text.is_object()) throw BadRequest("invalid_type", "'text' must be an object");
  if (Has(text, "verbosity") && !text["verbosity"].is_string()) {
    throw BadRequest("invalid_type", "'text.verbosity' must be a string");
  }
  if (!Has(text, "format")) return json();
  const json& f = text["format"];
  if (!f.is_object()) throw BadRequest("invalid_type", "'text.format' must be an object");
  const std::string type = NeedString(f, "type", "text.format.");
  if (type == "text") return json();
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema") {
    throw BadRequest("invalid_value", "'text.format.type' must be \"text\", \"json_object\" or \"json_schema\"");
  }
  if (!Has(f, "schema")) throw BadRequest("missing_field", "'text.format.schema' is required");
  if (!f["schema"].is_object() && !f["schema"].is_boolean()) {
    throw BadRequest("invalid_type", "'text.format.schema' must be a JSON schema object");
  }
  json js = {{"name", OptString(f, "name", "text.format.")}, {"schema", f["schema"]}};
  if (Has(f, "strict")) {
    if (!f["strict"].is_boolean()) throw BadRequest("invalid_type", "'text.format.strict' must be a boolean");
    js["strict"] = f["strict"];
  }
  return {{"type", "json_schema"}, {"json_schema", js}};
}

}  // namespace

ResponsesRequest ParseResponses(const std::string& text, const RequestContext& ctx, const ResponseHistoryFn& history) {
  const json body = ParseObject(text);
  ResponsesRequest rr;
  json& echo = rr.echo;

  if (OptBool(body, "background", false)) {
    throw BadRequest("unsupported", "'background': true is not supported; this server answers while you wait");
  }
  for (const char* key : {"conversation", "prompt"}) {
    if (Has(body, key)) throw BadRequest("unsupported", std::string("'") + key + "' is not supported by this server");
  }
  rr.store = OptBool(body, "store", true);
  echo["store"] = rr.store;
  // Accepted and echoed; nothing here acts on them.
  for (const char* key : {"user", "prompt_cache_key", "service_tier", "safety_identifier"}) {
    echo[key] = Has(body, key) ? json(OptString(body, key, "")) : json();
  }
  if (Has(body, "truncation")) {
    const std::string t = OptString(body, "truncation", "");
    if (t != "auto" && t != "disabled") throw BadRequest("invalid_value", "'truncation' must be \"auto\" or \"disabled\"");
    echo["truncation"] = t;
  } else {
    echo["truncation"] = "disabled";
  }
  if (Has(body, "metadata")) {
    const json& m = body["metadata"];
    if (!m.is_object()) throw BadRequest("invalid_type", "'metadata' must be an object of strings");
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string()) throw BadRequest("invalid_type", "'metadata." + k + "' must be a string");
    }
    echo["metadata"] = m;
  } else {
    echo["metadata"] = json::object();
  }
  if (Has(body, "include")) {
    const json& inc = body["include"];
    if (!inc.is_array()) throw BadRequest("invalid_type", "'include' must be an array of strings");
    for (const json& e : inc) {
      if (!e.is_string()) throw BadRequest("invalid_type", "'include' must be an array of strings");
    }
  }
  if (Has(body, "stream_options") && !body["stream_options"].is_object()) {
    throw BadRequest("invalid_type", "'stream_options' must be an object");
  }
  int64_t n = 0;
  if (GetNumber(body, "top_logprobs", &n) && n != 0) {
    throw BadRequest("unsupported", "'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)");
  }
  if (GetNumber(body, "max_tool_calls", &n) && n < 1) throw BadRequest("invalid_value", "'max_tool_calls' must be at least 1");

  // The conversation: the previous response's, then this input.
  json messages = json::array();
  rr.previous_response_id = OptString(body, "previous_response_id", "");
  echo["previous_response_id"] = rr.previous_response_id.empty() ? json() : json(rr.previous_response_id);
  if (!rr.previous_response_id.empty()) {
    if (!history || !history(rr.previous_response_id, &messages)) {
      throw ApiError{404, "invalid_request_error", "previous_response_not_found",
                     "'previous_response_id': no stored response '" + rr.previous_response_id +
                         "' (unknown, stored with store: false, or evicted: this server keeps the latest responses in "
                         "memory only)"};
    }
  }
  if (!body.contains("input") || body["input"].is_null()) throw BadRequest("missing_field", "'input' is required");
  const json& input = body["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    History h(&messages, ctx);
    for (size_t i = 0; i < input.size(); ++i) h.Item(input[i], "input[" + std::to_string(i) + "]", &rr.ignored_items);
    h.Flush();
  } else {
    throw BadRequest("invalid_type", "'input' must be a string or an array of input items");
  }
  if (messages.empty()) throw BadRequest("invalid_value", "'input' holds no message");
  rr.history = messages;
  const std::string instructions = OptString(body, "instructions", "");
  echo["instructions"] = Has(body, "instructions") ? json(instructions) : json();
  if (!instructions.empty()) messages.insert(messages.begin(), json{{"role", "system"}, {"content", instructions}});

  // The chat completion body the turn runs.
  json chat = {{"messages", std::move(messages)}};
  json tools_echo = json::array();
  if (Has(body, "tools")) {
    json tools = Tools(body["tools"], &rr, &tools_echo);
    if (!tools.empty()) chat["tools"] = std::move(tools);
  }
  echo["tools"] = tools_echo;
  echo["tool_choice"] = "auto";
  if (Has(body, "tool_choice")) {
    chat["tool_choice"] = ToolChoice(body["tool_choice"]);
    echo["tool_choice"] = body["tool_choice"];
    // A choice that needs tools, when every offered tool was of a type not served here.
    if (chat["tool_choice"] != "auto" && chat["tool_choice"] != "none" && !chat.contains("tools")) {
      throw BadRequest("invalid_value", "'tool_choice' needs at least one function in 'tools'");
    }
  }
  const bool parallel = OptBool(body, "parallel_tool_calls", true);
  chat["parallel_tool_calls"] = parallel;
  echo["parallel_tool_calls"] = parallel;
  echo["text"] = {{"format", {{"type", "text"}}}};
  if (Has(body, "text")) {
    const json rf = TextFormat(body["text"]);
    if (!rf.is_null()) chat["response_format"] = rf;
    echo["text"] = body["text"];
  }
  echo["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  if (Has(body, "reasoning")) {
    const json& r = body["reasoning"];
    if (!r.is_object()) throw BadRequest("invalid_type", "'reasoning' must be an object");
    const std::string effort = OptString(r, "effort", "reasoning.");
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high", "xhigh"};
    if (!effort.empty() && !kEfforts.count(effort)) {
      throw BadRequest("invalid_value", "'reasoning.effort' must be \"none\", \"minimal\", \"low\", \"medium\" or \"high\"");
    }
    const std::string summary = Has(r, "summary") ? OptString(r, "summary", "reasoning.")
                                                  : OptString(r, "generate_summary", "reasoning.");
    // Reasoning off or on for templates with a thinking switch; without an effort the
    // template's default stands.
    if (effort == "none" || effort == "minimal") {
      chat["chat_template_kwargs"] = {{"enable_thinking", false}};
    } else if (!effort.empty()) {
      chat["chat_template_kwargs"] = {{"enable_thinking", true}};
    }
    echo["reasoning"] = {{"effort", effort.empty() ? json() : json(effort)}, {"summary", summary.empty() ? json() : json(summary)}};
  }
  // Sampling: ParseCompletion's ranges (its field names are the same, except max_output_tokens).
  if (GetNumber(body, "max_output_tokens", &n)) {
    if (n < 1) throw BadRequest("invalid_value", "'max_output_tokens' must be at least 1");
    if (n > INT32_MAX) throw BadRequest("invalid_value", "'max_output_tokens' is too large (omit it to generate up to the context)");
    chat["max_completion_tokens"] = n;
  }
  echo["max_output_tokens"] = Has(body, "max_output_tokens") ? json(n) : json();
  // zerfoo's sampling extensions pass through as on chat completions.
  for (const char* key : {"model", "stream", "temperature", "top_p", "top_k", "min_p", "seed", "repeat_penalty",
                          "repeat_last_n", "cache_prompt"}) {
    if (body.contains(key)) chat[key] = body[key];
  }
  rr.req = ParseCompletion(chat.dump(), true, ctx);
  echo["temperature"] = Has(body, "temperature") ? body["temperature"] : json(1.0);
  echo["top_p"] = Has(body, "top_p") ? body["top_p"] : json(1.0);
  return rr;
}

}  // namespace cli::serve

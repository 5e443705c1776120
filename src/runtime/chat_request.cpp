#include "runtime/chat_request.h"

#include "common/json_depth.h"
#include "common/utf8.h"
#include "runtime/data_url.h"

namespace zf::rt {

using Json = nlohmann::ordered_json;

namespace {

struct Bad {
  std::string message;
};

[[noreturn]] void Fail(const std::string& message) { throw Bad{message}; }

// OpenAI's tool_calls with `arguments` as a JSON string, given to templates as an object where
// it parses (templates index and `tojson` it).
Json ToolCalls(const Json& calls, const std::string& at) {
  if (!calls.is_array()) Fail(at + " must be an array");
  Json out = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const Json& c = calls[k];
    const std::string here = at + "[" + std::to_string(k) + "]";
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string()) {
      Fail(here + " must be an object with a 'function' that has a string 'name'");
    }
    Json call = c;
    call["type"] = c.value("type", "function");
    Json& args = call["function"]["arguments"];
    if (args.is_string()) {
      // A JSON string inside the request: its own nesting is bounded before it is parsed
      // (nlohmann recurses), as the request's was.
      const std::string& text = args.get_ref<const std::string&>();
      if (JsonNesting(text, kMaxJsonNesting) > kMaxJsonNesting) {
        Fail(here + ".function.arguments: nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
      }
      Json parsed = Json::parse(text, nullptr, false);
      if (!parsed.is_discarded()) args = parsed;
    } else if (args.is_null()) {
      args = Json::object();
    }
    out.push_back(std::move(call));
  }
  return out;
}

// A message's content parts: text parts joined (no separator, as before), or with an image
// part among them llama-server's rule for media (text parts joined by "\n", nothing next to an
// image), each image becoming `marker` and its bytes appended to *images.
std::string ContentParts(const Json& parts, const std::string& at, const std::string& marker,
                         std::vector<ChatRequest::Image>* images) {
  bool media = false;
  for (const Json& part : parts) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    media = media || type == "image_url" || type == "input_audio";
  }
  std::string text;
  bool last_was_image = false;
  for (size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string here = at + ".content[" + std::to_string(j) + "]";
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "image_url") {
      const Json& iu = part.contains("image_url") ? part["image_url"] : Json();
      const Json& url = iu.is_object() ? iu.value("url", Json()) : iu;
      if (!url.is_string()) Fail(here + ".image_url.url must be a string (a data URL)");
      ChatRequest::Image im;
      im.field = here;
      Status s = DecodeImageDataUrl(url.get_ref<const std::string&>(), here + ".image_url.url", &im.bytes);
      if (!s.ok()) Fail(s.message());
      images->push_back(std::move(im));
      text += marker;
      last_was_image = true;
      continue;
    }
    if (type == "input_audio") {  // OpenAI: {"data": base64, "format": "wav" | "mp3"}; WAV decoded here
      const Json& ia = part.contains("input_audio") ? part["input_audio"] : Json();
      if (!ia.is_object() || !ia.contains("data") || !ia["data"].is_string()) {
        Fail(here + ".input_audio.data must be a string (base64 audio)");
      }
      const Json fmt = ia.value("format", Json());
      if (!fmt.is_string() || fmt.get<std::string>() != "wav") {
        Fail(here + ".input_audio.format is " + (fmt.is_string() ? "'" + fmt.get<std::string>() + "'" : "missing") +
             ": the library decodes WAV only (decode it first, e.g. to 16 kHz WAV, and send format 'wav')");
      }
      ChatRequest::Image au;
      au.field = here;
      au.audio = true;
      Status s = DecodeBase64(ia["data"].get_ref<const std::string&>(), here + ".input_audio.data", &au.bytes);
      if (!s.ok()) Fail(s.message());
      images->push_back(std::move(au));
      text += marker;
      last_was_image = true;
      continue;
    }
    if (type != "text" || !part.contains("text") || !part["text"].is_string()) {
      Fail(here + ": must be a text, image_url or input_audio part (other part types are not supported)");
    }
    if (media && !last_was_image && !text.empty()) text += '\n';
    text += part["text"].get<std::string>();
    last_was_image = false;
  }
  return text;
}

// The shortest "<__image_N__>" found nowhere in the request's text (a text that spells one out
// with JSON escapes is caught when the rendered prompt has more of them than there are images).
std::string PickMarker(std::string_view request) {
  for (int n = 0;; ++n) {
    std::string m = "<__image_" + std::to_string(n) + "__>";
    if (request.find(m) == std::string_view::npos) return m;
  }
}

Json Messages(const Json& messages, bool* may_normalize, const std::string& marker,
              std::vector<ChatRequest::Image>* images) {
  if (!messages.is_array() || messages.empty()) Fail("request.messages must be a non-empty array");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "request.messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) Fail(at + ".role must be a string");
    std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool") {
      Fail(at + ".role: unsupported role '" + role + "'");
    }
    if (role == "developer") role = "system";
    Json msg = {{"role", role}};
    const Json c = m.value("content", Json());
    if (c.is_string()) {
      msg["content"] = c;
    } else if (c.is_array()) {  // [{"type": "text", "text": ...}, {"type": "image_url", ...}, ...]
      msg["content"] = ContentParts(c, at, marker, images);
    } else if (!c.is_null()) {
      Fail(at + ".content must be a string or an array of content parts");
    } else if (role == "system" || role == "user") {
      Fail(at + ".content must be a string or an array of content parts ('" + role + "' messages need content)");
    } else if (role == "assistant") {
      msg["content"] = nullptr;  // only tool calls: None, as transformers passes it
      *may_normalize = true;
    } else {
      msg["content"] = "";
    }
    for (const char* key : {"reasoning_content", "tool_call_id", "name"}) {
      if (!m.contains(key) || m[key].is_null()) continue;
      if (!m[key].is_string()) Fail(at + "." + key + " must be a string");
      msg[key] = m[key];
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      msg["tool_calls"] = ToolCalls(m["tool_calls"], at + ".tool_calls");
      *may_normalize = true;
    }
    if (role == "tool") *may_normalize = true;
    out.push_back(std::move(msg));
  }
  return out;
}

// `tools` checked: functions with unique, non-empty names and object parameters.
Json Tools(const Json& body) {
  Json tools = body.value("tools", Json());
  if (tools.is_null()) return tools;
  if (!tools.is_array()) Fail("request.tools must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string at = "request.tools[" + std::to_string(i) + "]";
    if (!t.is_object() || t.value("type", "function") != "function" || !t.contains("function") ||
        !t["function"].is_object() || !t["function"].contains("name") || !t["function"]["name"].is_string() ||
        t["function"]["name"].get<std::string>().empty()) {
      Fail(at + ": each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    const Json& fn = t["function"];
    if (fn.contains("parameters") && !fn["parameters"].is_object()) {
      Fail(at + ".function.parameters must be an object (tool '" + fn["name"].get<std::string>() + "')");
    }
    for (size_t j = 0; j < i; ++j) {  // a call names its tool: two of one name are ambiguous
      if (tools[j]["function"]["name"] == fn["name"]) {
        Fail("request.tools: two tools are named '" + fn["name"].get<std::string>() + "'");
      }
    }
  }
  if (tools.empty()) tools = Json();
  return tools;
}

void ResponseFormat(const Json& body, ChatRequest* r) {
  if (!body.contains("response_format") || body["response_format"].is_null()) return;
  const Json& rf = body["response_format"];
  if (!rf.is_object()) Fail("request.response_format must be an object");
  const std::string type = rf.value("type", std::string());
  if (type == "json_object") {
    r->format_kind = ConstraintKind::kJsonSchema;
    r->format_constraint = R"({"type": "object"})";
  } else if (type == "json_schema") {
    const Json js = rf.value("json_schema", Json());
    if (!js.is_object() || !js.contains("schema")) Fail("request.response_format.json_schema: needs a 'schema'");
    if (!js["schema"].is_object() && !js["schema"].is_boolean()) {
      Fail("request.response_format.json_schema.schema must be a JSON schema object");
    }
    r->format_kind = ConstraintKind::kJsonSchema;
    r->format_constraint = js["schema"].dump();
  } else if (type != "text") {
    Fail("request.response_format.type: must be \"text\", \"json_object\" or \"json_schema\"");
  }
}

// A final assistant message is continued (llama-server: its prefill_assistant default, and
// continue_final_message true / "content" / "reasoning_content"); continue_final_message false
// asks for a new turn after it instead. Auto: the reasoning is continued when the message has
// reasoning and no content, else the content.
void Continuation(const Json& body, ChatRequest* r) {
  const Json cf = body.value("continue_final_message", Json());
  using C = ChatRequest::Continue;
  C mode = C::kNone;
  bool asked = false;
  if (cf.is_boolean()) {
    if (!cf.get<bool>()) return;
    asked = true;
  } else if (cf.is_string()) {
    if (cf != "content" && cf != "reasoning_content") {
      Fail("request.continue_final_message: must be true, false, \"content\" or \"reasoning_content\"");
    }
    asked = true;
    mode = cf == "content" ? C::kContent : C::kReasoning;
  } else if (!cf.is_null()) {
    Fail("request.continue_final_message must be a boolean or a string");
  }
  Json& msgs = r->messages;
  const bool last_assistant = !msgs.empty() && msgs.back()["role"] == "assistant";
  if (!last_assistant) {
    if (asked) Fail("request.continue_final_message: the last message is not an assistant message");
    return;
  }
  const size_t n = msgs.size();
  if (!asked && n >= 2 && msgs[n - 2]["role"] == "assistant") {
    Fail("request.messages: two assistant messages at the end (the last one would be continued)");
  }
  const Json last = msgs.back();
  if (last.contains("tool_calls")) {
    Fail("request.messages[" + std::to_string(n - 1) + "]: an assistant message with tool calls cannot be continued");
  }
  r->continue_content = last.value("content", Json()).is_string() ? last["content"].get<std::string>() : std::string();
  r->continue_reasoning = last.value("reasoning_content", std::string());
  if (mode == C::kNone) {
    mode = !r->continue_reasoning.empty() && r->continue_content.empty() ? C::kReasoning : C::kContent;
  }
  r->continue_final = mode;
  msgs.erase(msgs.end() - 1);
}

void Parse(std::string_view text, ChatRequest* r) {
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) Fail("request: invalid UTF-8 at byte " + std::to_string(bad));
  if (JsonNesting(text, kMaxJsonNesting) > kMaxJsonNesting) {
    Fail("request: nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  const Json body = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) Fail("request: malformed JSON");
  if (!body.is_object()) Fail("request must be a JSON object");
  if (!body.contains("messages")) Fail("request.messages: missing (the conversation is required)");
  r->image_marker = PickMarker(text);
  r->messages = Messages(body["messages"], &r->may_normalize, r->image_marker, &r->images);
  Continuation(body, r);
  Json tools = Tools(body);
  std::string choice = "auto";
  const Json tc = body.value("tool_choice", Json());
  if (tc.is_string()) {
    choice = tc.get<std::string>();
    if (choice != "auto" && choice != "none" && choice != "required") {
      Fail("request.tool_choice: must be \"auto\", \"none\", \"required\" or a named function");
    }
  } else if (tc.is_object()) {
    if (!tc.contains("function") || !tc["function"].is_object() || !tc["function"].contains("name") ||
        !tc["function"]["name"].is_string()) {
      Fail("request.tool_choice: must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    const std::string name = tc["function"]["name"].get<std::string>();
    Json picked = Json::array();
    for (const Json& t : tools.is_array() ? tools : Json::array()) {
      if (t["function"]["name"] == name) picked.push_back(t);
    }
    if (picked.empty()) Fail("request.tool_choice: names '" + name + "', which is not in 'tools'");
    tools = picked;  // the model is offered the named function only
    choice = "required";
  } else if (!tc.is_null()) {
    Fail("request.tool_choice must be a string or an object");
  }
  if (choice != "auto" && choice != "none" && tools.is_null()) {
    Fail("request.tool_choice: \"" + choice + "\" needs 'tools'");
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null() &&
      !body["parallel_tool_calls"].is_boolean()) {
    Fail("request.parallel_tool_calls must be a boolean");
  }
  const Json rf = body.value("reasoning_format", Json("auto"));
  if (!rf.is_null() && (!rf.is_string() || (rf != "auto" && rf != "none" && rf != "deepseek"))) {
    Fail("request.reasoning_format: must be \"auto\", \"deepseek\" or \"none\"");
  }
  const Json kwargs = body.value("chat_template_kwargs", Json());
  if (!kwargs.is_null() && !kwargs.is_object()) Fail("request.chat_template_kwargs must be an object");
  const Json docs = body.value("documents", Json());
  if (!docs.is_null() && !docs.is_array()) Fail("request.documents must be an array");
  ResponseFormat(body, r);
  // tool_choice "none" still shows the tools to the template (the conversation may hold calls)
  // but nothing is read back as a call.
  r->tools = tools;
  r->documents = docs;
  if (kwargs.is_object() && !kwargs.empty()) r->extra_json = kwargs.dump();
  r->parse_tools = !tools.is_null() && choice != "none";
  r->require_call = choice == "required";
  r->parallel = body.value("parallel_tool_calls", Json(true)).is_boolean() ? body.value("parallel_tool_calls", true) : true;
  r->split_reasoning = !(rf.is_string() && rf == "none");
}

}  // namespace

Status ParseChatRequest(std::string_view request_json, ChatRequest* out) {
  try {
    Parse(request_json, out);
    return Status::Ok();
  } catch (const Bad& b) {
    return InvalidArgument(b.message);
  }
}

}  // namespace zf::rt

// Ollama's API on the shared generation path: /api/chat and /api/generate (NDJSON streams by
// default), /api/embed and /api/embeddings, and the listings clients probe (/api/tags,
// /api/show, /api/ps, /api/version, GET /). Requests are translated in ollama_request.cpp;
// here the turn's events and a completion's pieces become Ollama's lines.
#include "ollama_api.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

#include "../common.h"
#include "ollama_request.h"
#include "streaming.h"

namespace cli::serve {

namespace {

// Ollama's error body: {"error": "..."}.
std::string OllamaError(const ApiError& e) { return Dump(json{{"error", e.message}}); }

// Ollama's names: "alias" or "alias:latest" (or "name" on /api/show), and keep_alive.
const ModelPick kOllamaPick{&OllamaNameMatches, false, true};

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

// RFC 3339 in UTC with nanoseconds, as Ollama writes created_at.
std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const time_t secs = time_t(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char day[32], out[48];
  std::strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(out, sizeof out, "%s.%09lldZ", day, static_cast<long long>(ns % 1000000000));
  return out;
}

std::string Now() { return Rfc3339(std::chrono::system_clock::now()); }

int64_t Ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

std::string Line(const json& j) { return Dump(j) + "\n"; }

// A request's timing from its arrival; the prompt's and the generation's durations are the
// library's own (the answer's prefill and decode wall times).
class Timing {
 public:
  explicit Timing(Clock::time_point t0) : t0_(t0) {}
  // The final line's statistics (durations in nanoseconds; the model is loaded at startup).
  json Stats(int64_t n_prompt, int64_t n_generated, double prompt_ms, double decode_ms) const {
    auto ns = [](double ms) { return int64_t(ms * 1e6); };
    return {{"total_duration", Ns(Clock::now() - t0_)}, {"load_duration", 0},
            {"prompt_eval_count", n_prompt},            {"prompt_eval_duration", ns(prompt_ms)},
            {"eval_count", n_generated},                {"eval_duration", ns(decode_ms)}};
  }

 private:
  Clock::time_point t0_;
};

// A tool call's arguments as the object Ollama sends; null when they are not a JSON object.
json ArgumentsObject(const std::string& text) {
  json a = json::parse(text, nullptr, false);
  return a.is_object() ? a : json();
}

json ToolCallJson(int index, const std::string& id, const std::string& name, const json& args) {
  return {{"id", id}, {"function", {{"index", index}, {"name", name}, {"arguments", args}}}};
}

// The final message's tool calls (OpenAI's shape: arguments a JSON string) in Ollama's shape.
json ToolCallsOf(const json& message) {
  json out = json::array();
  const auto it = message.find("tool_calls");
  if (it == message.end() || !it->is_array()) return out;
  int i = 0;
  for (const json& c : *it) {
    const json fn = c.value("function", json::object());
    json args = ArgumentsObject(fn.value("arguments", std::string("{}")));
    // The library closes a call cut short; one whose text is still no object has no arguments.
    if (args.is_null()) args = json::object();
    out.push_back(ToolCallJson(i++, c.value("id", std::string()), fn.value("name", std::string()), args));
  }
  return out;
}

std::string TextOf(const json& message, const char* key) {
  const auto it = message.find(key);
  return it != message.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const char* DoneReason(int32_t finish) { return finish == ZF_FINISH_LENGTH ? "length" : "stop"; }

// A chat turn as /api/chat's message lines, or (generate) as /api/generate's response lines.
class OllamaTurnWriter : public TurnWriter {
 public:
  OllamaTurnWriter(std::string model, Clock::time_point t0, bool generate)
      : model_(std::move(model)), timing_(t0), generate_(generate) {}
  const char* StreamType() const override { return "application/x-ndjson"; }

  json Whole(const TurnOutcome& out) override {
    json j = Head();
    const std::string content = TextOf(out.message, "content");
    const std::string thinking = TextOf(out.message, "reasoning_content");
    if (generate_) {
      j["response"] = content;
      if (!thinking.empty()) j["thinking"] = thinking;
    } else {
      json m = {{"role", "assistant"}, {"content", content}};
      if (!thinking.empty()) m["thinking"] = thinking;
      const json calls = ToolCallsOf(out.message);
      if (!calls.empty()) m["tool_calls"] = calls;
      j["message"] = m;
    }
    return Done(j, out);
  }
  std::string Open() override { return ""; }
  std::string Event(const TurnDelta& d) override {
    switch (d.kind) {
      case ZF_TURN_CONTENT: return Piece("content", d.text);
      case ZF_TURN_REASONING: return Piece("thinking", d.text);
      case ZF_TURN_TOOL_CALL: {
        // Ollama sends each call whole: the calls before this one are complete.
        std::string s = Flush(d.index, nullptr);
        pending_[d.index] = Call{d.id, d.name, ""};
        return s;
      }
      case ZF_TURN_TOOL_ARGS:
        if (auto it = pending_.find(d.index); it != pending_.end()) it->second.args += d.text;
        return "";
      default: return "";  // log-probabilities are not asked for; DONE: the calls go out in Close
    }
  }
  std::string Close(const TurnOutcome& out) override {
    std::string s = Flush(-1, &out.message);
    json j = Head();
    if (generate_) j["response"] = "";
    else j["message"] = {{"role", "assistant"}, {"content", ""}};
    return s + Line(Done(j, out));
  }
  std::string Fail(const ApiError& e) override { return Line(json{{"error", e.message}}); }

 private:
  struct Call {
    std::string id, name, args;
  };
  json Head() const { return {{"model", model_}, {"created_at", Now()}}; }
  json Done(json j, const TurnOutcome& out) const {
    j["done"] = true;
    j["done_reason"] = DoneReason(out.finish);
    j.update(timing_.Stats(out.n_prompt, out.n_generated, out.prompt_ms, out.decode_ms));
    return j;
  }
  std::string Piece(const char* key, const std::string& text) {
    if (text.empty()) return "";
    json j = Head();
    if (generate_) {
      j["response"] = std::string(key) == "content" ? text : "";
      if (std::string(key) == "thinking") j["thinking"] = text;
    } else {
      json m = {{"role", "assistant"}, {"content", std::string(key) == "content" ? text : ""}};
      if (std::string(key) == "thinking") m["thinking"] = text;
      j["message"] = m;
    }
    j["done"] = false;
    return Line(j);
  }
  // Writes the pending calls other than `keep` (-1: all), each as one line; a call whose
  // fragments are not yet an object waits for the final message (`final`), which has them all.
  std::string Flush(int32_t keep, const json* final) {
    std::string s;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->first == keep) {
        ++it;
        continue;
      }
      json args = ArgumentsObject(it->second.args);
      if (final != nullptr) {
        const json calls = ToolCallsOf(*final);
        if (it->first >= 0 && size_t(it->first) < calls.size()) args = calls[size_t(it->first)]["function"]["arguments"];
        if (args.is_null()) args = json::object();
      } else if (args.is_null()) {
        ++it;
        continue;
      }
      json j = Head();
      j["message"] = {{"role", "assistant"},
                      {"content", ""},
                      {"tool_calls", json::array({ToolCallJson(it->first, it->second.id, it->second.name, args)})}};
      j["done"] = false;
      s += Line(j);
      it = pending_.erase(it);
    }
    return s;
  }

  std::string model_;
  Timing timing_;
  bool generate_;
  std::map<int32_t, Call> pending_;
};

// /api/generate with raw: a text completion of the prompt as it is.
class OllamaTextWriter : public TextWriter {
 public:
  OllamaTextWriter(std::string model, Clock::time_point t0) : model_(std::move(model)), timing_(t0) {}
  const char* StreamType() const override { return "application/x-ndjson"; }
  json Whole(const Outcome& out) override {
    json j = {{"model", model_}, {"created_at", Now()}, {"response", out.text}};
    return Done(j, out);
  }
  std::string Open() override { return ""; }
  std::string Piece(const std::string& text, const std::vector<TokenLogprobs>&) override {
    if (text.empty()) return "";
    return Line(json{{"model", model_}, {"created_at", Now()}, {"response", text}, {"done", false}});
  }
  std::string Close(const Outcome& out) override {
    return Line(Done(json{{"model", model_}, {"created_at", Now()}, {"response", ""}}, out));
  }
  std::string Fail(const ApiError& e) override { return Line(json{{"error", e.message}}); }

 private:
  json Done(json j, const Outcome& out) const {
    j["done"] = true;
    j["done_reason"] = FinishReason(out.stop_reason);
    j.update(timing_.Stats(out.n_prompt, out.n_generated, out.prompt_ms, out.decode_ms));
    return j;
  }
  std::string model_;
  Timing timing_;
};

// ---- The served model, described as Ollama describes its models. ----

// 64 hex digits that identify the served file: FNV-1a (64-bit) of "path:size" under four seeds.
// Not a SHA-256 of the contents (hashing a multi-GB file at each listing is too slow); stable
// for the same file at the same path.
std::string Digest(const ServedInfo& i) {
  const std::string key = i.path + ":" + std::to_string(FileSize(i.path));
  std::string out;
  for (uint64_t seed : {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull, 0x100000001b3ull}) {
    uint64_t h = seed;
    for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    out += buf;
  }
  return out;
}

// "135M", "1.24B": three significant digits, as Ollama's parameter_size.
std::string ParameterSize(uint64_t n) {
  const char* unit = "";
  double v = double(n);
  if (v >= 1e9) v /= 1e9, unit = "B";
  else if (v >= 1e6) v /= 1e6, unit = "M";
  else if (v >= 1e3) v /= 1e3, unit = "K";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%s", v >= 100 ? 0 : v >= 10 ? 1 : 2, v, unit);
  std::string s = buf;
  // "7.00B" -> "7B", "1.50B" -> "1.5B"
  const size_t dot = s.find('.');
  if (dot != std::string::npos) {
    size_t end = s.size() - std::string(unit).size();
    size_t last = end;
    while (last > dot + 1 && s[last - 1] == '0') --last;
    if (last == dot + 1) last = dot;
    s.erase(last, end - last);
  }
  return s;
}

std::string ModifiedAt(const ServedInfo& i) {
  struct stat st {};
  if (stat(i.path.c_str(), &st) != 0) return Now();
  return Rfc3339(std::chrono::system_clock::from_time_t(st.st_mtime));
}

json Details(const ServedInfo& i) {
  const std::string arch = i.summary.architecture != nullptr ? i.summary.architecture : "";
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", arch},
          {"families", json::array({arch})},
          {"parameter_size", ParameterSize(i.summary.n_params)},
          {"quantization_level", i.summary.quant != nullptr ? i.summary.quant : ""}};
}

json ModelEntry(const ServedInfo& i) {
  const std::string name = OllamaModelName(i.alias);
  return {{"name", name},
          {"model", name},
          {"modified_at", ModifiedAt(i)},
          {"size", i.loaded ? i.summary.file_size : FileSize(i.path)},
          {"digest", Digest(i)},
          {"details", Details(i)}};
}

// What the template does with tools and with enable_thinking, found by rendering it.
json Capabilities(const ServedInfo& i, const RequestContext& ctx) {
  if (i.embed_only) return json::array({"embedding"});
  json caps = json::array({"completion", "embedding"});
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  auto render = [&](const json& request) {
    try {
      return TurnPrompt(ctx.model, request.dump(), ctx.chat_template);
    } catch (const ApiError&) {
      return std::string();
    }
  };
  const json tool = {{"type", "function"},
                     {"function", {{"name", "zerfoo_probe_tool"}, {"parameters", {{"type", "object"}}}}}};
  if (render({{"messages", user}, {"tools", json::array({tool})}}).find("zerfoo_probe_tool") != std::string::npos) {
    caps.push_back("tools");
  }
  const std::string on = render({{"messages", user}, {"chat_template_kwargs", {{"enable_thinking", true}}}});
  const std::string off = render({{"messages", user}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  if (!on.empty() && on != off) caps.push_back("thinking");
  // A vision projector: images (Ollama's word; Ollama names no audio capability).
  if (ctx.images.mmproj != nullptr && (ctx.images.modalities & ZF_MODALITY_IMAGE) != 0) caps.push_back("vision");
  return caps;
}

json Show(const ServedInfo& i, const RequestContext& ctx) {
  const zf_model_summary& s = i.summary;
  const std::string arch = s.architecture != nullptr ? s.architecture : "";
  json info = {{"general.architecture", arch},
               {"general.parameter_count", s.n_params},
               {"general.file_type", s.quant != nullptr ? s.quant : ""},
               {arch + ".context_length", s.n_ctx_train},
               {arch + ".embedding_length", s.n_embd},
               {arch + ".block_count", s.n_layer},
               {arch + ".attention.head_count", s.n_head},
               {arch + ".attention.head_count_kv", s.n_head_kv},
               {"tokenizer.ggml.bos_token_id", s.token_bos},
               {"tokenizer.ggml.eos_token_id", s.token_eos}};
  if (s.name != nullptr && *s.name != '\0') info["general.name"] = s.name;
  const std::string tmpl = !ctx.chat_template.empty() ? ctx.chat_template : Meta(ctx.model, "tokenizer.chat_template");
  return {{"modelfile", ""},
          {"parameters", "num_ctx " + std::to_string(i.n_ctx)},
          {"template", tmpl},
          {"details", Details(i)},
          {"model_info", info},
          {"capabilities", Capabilities(i, ctx)},
          {"modified_at", ModifiedAt(i)}};
}

// ---- Routes. ----

// Parses the body, or answers the error (and returns false).
bool Parsed(FrontDoor& door, const ModelRef& m, OllamaEndpoint ep, const httplib::Request& req,
            httplib::Response& res, OllamaRequest* q) {
  try {
    *q = ParseOllama(ep, req.body, door.Context(m));
    return true;
  } catch (const ApiError& e) {
    door.CountError(m);
    SendError(res, e, OllamaError);
    return false;
  }
}

// Ollama's answer to a request without messages / prompt: the model is loaded.
void AnswerLoad(const OllamaRequest& q, bool chat, httplib::Response& res) {
  json j = {{"model", q.model}, {"created_at", Now()}};
  if (chat) j["message"] = {{"role", "assistant"}, {"content", ""}};
  else j["response"] = "";
  j["done_reason"] = "load";
  j["done"] = true;
  res.set_content(Line(j), q.r.stream ? "application/x-ndjson" : "application/json");
}

void HandleGenerating(FrontDoor& door, const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, OllamaError, true, kOllamaPick);
  if (m == nullptr) return;
  OllamaRequest q;
  if (!Parsed(door, m, chat ? OllamaEndpoint::kChat : OllamaEndpoint::kGenerate, req, res, &q)) return;
  if (q.load_only) return AnswerLoad(q, chat, res);
  auto r = std::make_shared<Request>(std::move(q.r));
  if (r->chat) {
    door.AnswerTurn(m, r, std::make_shared<OllamaTurnWriter>(q.model, t0, !chat), OllamaError, t0, res);
  } else {
    door.AnswerText(m, r, std::make_shared<OllamaTextWriter>(q.model, t0), OllamaError, t0, res);
  }
}

void HandleEmbed(FrontDoor& door, const httplib::Request& req, httplib::Response& res, bool legacy) {
  const Clock::time_point t0 = Clock::now();
  const ModelRef m = door.Admit(req, res, OllamaError, false, kOllamaPick);
  if (m == nullptr) return;
  OllamaRequest q;
  if (!Parsed(door, m, legacy ? OllamaEndpoint::kEmbeddings : OllamaEndpoint::kEmbed, req, res, &q)) return;
  if (q.empty_legacy_embedding) {
    res.set_content(Dump(json{{"embedding", json::array()}}), "application/json");
    return;
  }
  json answer;
  try {
    answer = door.Embed(m, q.embed);
  } catch (const ApiError& e) {
    door.CountError(m);
    SendError(res, e, OllamaError);
    return;
  }
  json vectors = json::array();
  for (const json& d : answer["data"]) vectors.push_back(d["embedding"]);
  if (legacy) {
    res.set_content(Dump(json{{"embedding", vectors.empty() ? json::array() : vectors[0]}}), "application/json");
    return;
  }
  const int64_t n_tokens = answer.contains("usage") ? answer["usage"].value("prompt_tokens", int64_t(0)) : 0;
  res.set_content(Dump(json{{"model", q.model},
                            {"embeddings", vectors},
                            {"total_duration", Ns(Clock::now() - t0)},
                            {"load_duration", 0},
                            {"prompt_eval_count", n_tokens}}),
                  "application/json");
}

}  // namespace

void AddOllamaRoutes(FrontDoor& door) {
  door.Post("/api/chat", OllamaError, [&door](const httplib::Request& req, httplib::Response& res) {
    HandleGenerating(door, req, res, true);
  });
  door.Post("/api/generate", OllamaError, [&door](const httplib::Request& req, httplib::Response& res) {
    HandleGenerating(door, req, res, false);
  });
  door.Post("/api/embed", OllamaError, [&door](const httplib::Request& req, httplib::Response& res) {
    HandleEmbed(door, req, res, false);
  });
  door.Post("/api/embeddings", OllamaError, [&door](const httplib::Request& req, httplib::Response& res) {
    HandleEmbed(door, req, res, true);
  });
  door.Post("/api/show", OllamaError, [&door](const httplib::Request& req, httplib::Response& res) {
    const ModelRef m = door.Admit(req, res, OllamaError, false, kOllamaPick);
    if (m == nullptr) return;
    OllamaRequest q;
    if (!Parsed(door, m, OllamaEndpoint::kShow, req, res, &q)) return;
    res.set_content(Dump(Show(door.Info(m), door.Context(m))), "application/json");
  });
  door.Get("/api/tags", [&door](const httplib::Request& req, httplib::Response& res) {
    if (!door.Authorized(req, res, OllamaError)) return;
    json models = json::array();
    for (const ServedInfo& i : door.Models()) models.push_back(ModelEntry(i));
    res.set_content(Dump(json{{"models", models}}), "application/json");
  });
  door.Get("/api/ps", [&door](const httplib::Request& req, httplib::Response& res) {
    if (!door.Authorized(req, res, OllamaError)) return;
    json models = json::array();
    const auto now = std::chrono::system_clock::now();
    for (const ServedInfo& i : door.Models()) {
      if (!i.loaded) continue;
      json m = ModelEntry(i);
      m.erase("modified_at");
      // The expiry: keep_alive (or --sleep-idle-seconds) after its last request; a model kept
      // for good shows a far one, as Ollama shows keep_alive -1 (no GPU offload is counted:
      // size_vram 0).
      const auto keep = std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(i.keep_alive));
      m["expires_at"] = Rfc3339(i.keep_alive < 0 ? now + std::chrono::hours(24 * 365 * 100)
                                                 : (i.running ? now : i.idle_since) + keep);
      m["size_vram"] = 0;
      m["context_length"] = i.n_ctx;
      models.push_back(m);
    }
    res.set_content(Dump(json{{"models", models}}), "application/json");
  });
  // The Ollama version this API follows (its /api/chat think, tools streaming, structured
  // outputs and /api/embed are all in 0.12), for clients that check it.
  door.Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(Dump(json{{"version", "0.12.0"}}), "application/json");
  });
  door.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("Ollama is running", "text/plain; charset=utf-8");
  });
}

}  // namespace cli::serve

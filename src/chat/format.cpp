// Deriving a template's reasoning and tool-call markers from what it renders (see format.h).
// Each probe is the conversation [user, assistant(...)] rendered without the generation prompt;
// the assistant turn is what follows the rendering of [user] with it. Names in the probes are
// unlikely strings so that finding them in the output locates each slot.
#include "chat/format.h"

#include <algorithm>

#include "chat/harmony.h"
#include "chat/parser.h"
#include "chat/python_tag.h"

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char kContent[] = "zfprobe_content";
constexpr const char kThink[] = "zfprobe_think";
constexpr const char kFn1[] = "zfprobe_fn";
constexpr const char kFn2[] = "zfprobe_gn";
constexpr const char kKey1[] = "zfprobe_arg";
constexpr const char kKey2[] = "zfprobe_brg";
constexpr const char kId1[] = "zfcallid1";  // nine characters: Mistral's templates require it
constexpr const char kId2[] = "zfcallid2";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `n` moved back to the `open` of a bracket pair ("<...>", "[...]") that s[0, n) would cut in
// two: a split between two renderings never falls inside a marker.
size_t Unsplit(const std::string& s, size_t n, char open = '<', char close = '>') {
  const size_t at = n == 0 ? std::string::npos : s.rfind(open, n - 1);
  return at != std::string::npos && s.find(close, at) >= n ? at : n;
}

// Digits compare equal: templates number their calls ("tool_call_id": "0", "1", ...).
size_t CommonSuffix(const std::string& a, const std::string& b, size_t limit) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && n < limit) {
    const char x = a[a.size() - 1 - n], y = b[b.size() - 1 - n];
    if (x != y && !(IsDigit(x) && IsDigit(y))) break;
    ++n;
  }
  return n;
}

// The end of the JSON object that starts at s[start] ('{'), or npos.
size_t ObjectEnd(const std::string& s, size_t start) {
  int depth = 0;
  bool in_str = false;
  for (size_t k = start; k < s.size(); ++k) {
    const char ch = s[k];
    if (in_str) {
      if (ch == '\\') ++k;
      else if (ch == '"') in_str = false;
    } else if (ch == '"') in_str = true;
    else if (ch == '{') ++depth;
    else if (ch == '}' && --depth == 0) return k + 1;
  }
  return std::string::npos;
}

Json User() { return {{"role", "user"}, {"content", "zfprobe_user"}}; }

Json Call(const char* id, const char* name, const char* v1, const char* v2) {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", {{kKey1, v1}, {kKey2, v2}}}}}};
}

// The assistant turn of [user, assistant]: the text after the prompt [user] + generation prompt.
// `trailer`: what the template writes after the last message whatever it is (Command R+'s
// closing system instructions), not part of the turn.
bool Turn(const Renderer& render, const std::string& prompt, const Json& assistant, std::string* turn,
          const std::string& trailer) {
  std::string full;
  if (!render(Json::array({User(), assistant}), false, &full)) return false;
  if (!trailer.empty()) {
    // The longest end of `full` that ends the trailer too (the trailer as rendered also holds
    // the end of the message before it).
    size_t n = 0;
    while (n < full.size() && n < trailer.size() && full[full.size() - 1 - n] == trailer[trailer.size() - 1 - n]) ++n;
    full.resize(full.size() - n);
  }
  if (full.compare(0, prompt.size(), prompt) != 0) {
    // The generation prompt is not a prefix of the history (e.g. it opens reasoning the history
    // does not show): the turn starts where the two differ.
    *turn = full.substr(Unsplit(full, CommonPrefix(full, prompt)));
    return true;
  }
  *turn = full.substr(prompt.size());
  return true;
}

// `n` moved forward past the close of a bracket pair ("<...>") that s[0, n) would cut in two.
size_t UnsplitForward(const std::string& s, size_t n) {
  const size_t at = n == 0 ? std::string::npos : s.rfind('<', n - 1);
  if (at == std::string::npos) return n;
  const size_t gt = s.find('>', at);
  return gt != std::string::npos && gt >= n ? gt + 1 : n;
}

// An assistant message with reasoning `kThink` in the field templates read it from
// (reasoning_content; Solar Open's `reasoning`).
Json WithReasoning(Json msg, const char* field) {
  msg[field] = kThink;
  return msg;
}

ReasoningFormat DeriveReasoning(const Renderer& render, const std::string& prompt, const std::string& source,
                                const std::string& trailer) {
  ReasoningFormat r;
  std::string turn;
  std::string after;  // what the content probe writes after the reasoning
  const Json plain = {{"role", "assistant"}, {"content", kContent}};
  const char* field = "reasoning_content";
  for (const char* f : {"reasoning_content", "reasoning"}) {
    if (!Turn(render, prompt, WithReasoning(plain, f), &turn, trailer)) continue;
    const size_t t = turn.find(kThink), c = turn.find(kContent);
    if (t != std::string::npos && c != std::string::npos && t < c) {
      field = f;
      r.open = Trim(turn.substr(0, t));
      r.close = Trim(turn.substr(t + sizeof kThink - 1, c - t - (sizeof kThink - 1)));
      after = turn.substr(t + sizeof kThink - 1);
      // Reasoning right after the generation prompt: the prompt opened it.
      if (r.open.empty() && !r.close.empty()) r.forced_open = true;
      break;
    }
  }
  // Reasoning before a tool call: templates that write it only there (Gemma 4's thought
  // channel), and the close marker where the content probe's runs into a content header
  // (Command A's <|END_THINKING|><|START_TEXT|>). The call turn with and without the reasoning
  // differ by the reasoning block.
  const Json call = {{"id", kId1},
                     {"type", "function"},
                     {"function", {{"name", kFn1}, {"arguments", {{kKey1, "zfprobe_val"}, {kKey2, "zfprobe_wal"}}}}}};
  for (const bool string_args : {false, true}) {
    Json c = call;
    if (string_args) c["function"]["arguments"] = c["function"]["arguments"].dump();
    const Json msg = {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({c})}};
    std::string with, without;
    if (!render(Json::array({User(), WithReasoning(msg, field)}), false, &with) ||
        !render(Json::array({User(), msg}), false, &without) || with.find(kFn1) == std::string::npos) {
      continue;
    }
    const size_t t = with.find(kThink);
    if (t == std::string::npos) break;
    const size_t te = t + sizeof kThink - 1;
    if (r.open.empty()) {
      // The open marker the content probe could not show (the generation prompt wrote it, or
      // an empty block: Solar Open's reasoning_effort low).
      const size_t b = Unsplit(with, std::min(CommonPrefix(with, without), t));
      r.open = Trim(with.substr(b, t - b));
    }
    if (!r.close.empty()) {
      // The close is what follows the reasoning in both probes.
      const std::string after2 = with.substr(te);
      size_t n = Unsplit(after, CommonPrefix(after, after2));
      // Whole words: not the start of what names the next message (muse-glimmer's
      // "assistant to=user" / "assistant to=NAME").
      while (n > 0 && n < after.size() && !IsSpace(after[n]) && after[n] != '<' && after[n] != '[' &&
             after[n - 1] != '>' && after[n - 1] != ']') {
        --n;
      }
      const std::string close = Trim(after.substr(0, n));
      if (!close.empty() && close.size() < r.close.size() && r.close.compare(0, close.size(), close) == 0) r.close = close;
      break;
    }
    const size_t b = Unsplit(with, std::min(CommonPrefix(with, without), t));
    const size_t s = CommonSuffix(with, without, std::min(without.size(), with.size() - te));
    const size_t e = UnsplitForward(with, with.size() - s);
    if (e < te) break;
    r.open = Trim(with.substr(b, t - b));
    r.close = Trim(with.substr(te, e - te));
    break;
  }
  if (r.close.empty()) {
    // Templates that drop past reasoning (DeepSeek-R1 distills) still name the markers.
    for (const char* close : {"</think>", "</thinking>", "[/THINK]", "<|END_THINKING|>", "</seed:think>"}) {
      if (source.find(close) != std::string::npos) {
        r.close = close;
        break;
      }
    }
    if (r.close == "[/THINK]") r.open = "[THINK]";
    else if (r.close == "<|END_THINKING|>") r.open = "<|START_THINKING|>";
    else if (!r.close.empty()) r.open = "<" + r.close.substr(2);
  }
  if (r.close.empty()) return ReasoningFormat();
  // A generation prompt ending in the open marker starts the output inside the reasoning.
  if (r.open.empty()) {
    if (r.close.compare(0, 2, "</") == 0) r.open = "<" + r.close.substr(2);
  }
  auto ends_with = [](const std::string& p, const std::string& m) {
    return !m.empty() && p.size() >= m.size() && p.compare(p.size() - m.size(), m.size(), m) == 0;
  };
  const std::string p = Trim(prompt);
  r.forced_open = r.forced_open || ends_with(p, r.open);
  // A prompt ending in an empty reasoning block (thinking turned off: Hy3's no_think, Nemotron's
  // enable_thinking=false) leaves the output outside it.
  if (ends_with(p, r.close) && ends_with(Trim(p.substr(0, p.size() - r.close.size())), r.open)) {
    r.forced_open = false;
    r.prompt_closed = true;
  }
  return r;
}

// Appends `s` as literal pieces, with a kId slot wherever the probe's call id (kId1) appears and
// a kName slot wherever its name appears again (templates that write it twice).
void AppendWithIds(const std::string& s, std::vector<Piece>* out) {
  auto lit = [&](const std::string& t) {
    if (t.empty()) return;
    if (!out->empty() && out->back().kind == Piece::kLiteral) out->back().text += t;
    else out->push_back({Piece::kLiteral, t});
  };
  // Digit runs are call counters (kIndex).
  auto lit_or_index = [&](const std::string& t) {
    size_t at = 0;
    for (size_t k = 0; k < t.size();) {
      if (!IsDigit(t[k])) {
        ++k;
        continue;
      }
      lit(t.substr(at, k - at));
      while (k < t.size() && IsDigit(t[k])) ++k;
      out->push_back({Piece::kIndex, ""});
      at = k;
    }
    lit(t.substr(at));
  };
  auto with_ids = [&](const std::string& t) {
    size_t at = 0;
    for (size_t p = t.find(kId1); p != std::string::npos; p = t.find(kId1, at)) {
      lit_or_index(t.substr(at, p - at));
      out->push_back({Piece::kId, ""});
      at = p + sizeof kId1 - 1;
    }
    lit_or_index(t.substr(at));
  };
  size_t at = 0;
  for (size_t p = s.find(kFn1); p != std::string::npos; p = s.find(kFn1, at)) {
    with_ids(s.substr(at, p - at));
    out->push_back({Piece::kName, ""});
    at = p + sizeof kFn1 - 1;
  }
  with_ids(s.substr(at));
}

// Tool calls: one call and two calls rendered, diffed around the function names.
ToolCallFormat DeriveToolCalls(const Renderer& render, const std::string& prompt, const std::string& pre_content,
                               const std::string& end_of_turn, const ReasoningFormat& reasoning,
                               const std::string& trailer) {
  ToolCallFormat f;
  // Templates differ in what they accept: arguments as an object (transformers) or as a JSON
  // string (OpenAI's wire format), content "" or null, one call or several. The first variant
  // that renders the call is used.
  Json c1, c2;
  std::string t1, t2;
  bool one = false, two = false;
  for (int variant = 0; variant < 4 && !one; ++variant) {
    const bool string_args = (variant & 1) != 0;
    const Json content = (variant & 2) != 0 ? Json(nullptr) : Json("");
    c1 = Call(kId1, kFn1, "zfprobe_val", "zfprobe_wal");
    c2 = Call(kId2, kFn2, "zfprobe_xal", "zfprobe_yal");
    if (string_args) {
      for (Json* c : {&c1, &c2}) (*c)["function"]["arguments"] = (*c)["function"]["arguments"].dump();
    }
    one = Turn(render, prompt, {{"role", "assistant"}, {"content", content}, {"tool_calls", Json::array({c1})}}, &t1, trailer) &&
          t1.find(kFn1) != std::string::npos;
    two = one &&
          Turn(render, prompt, {{"role", "assistant"}, {"content", content}, {"tool_calls", Json::array({c1, c2})}}, &t2, trailer) &&
          t2.find(kFn2) != std::string::npos;
  }
  if (!one) return f;
  const size_t len = sizeof kFn1 - 1;
  const size_t n1 = t1.find(kFn1);
  const std::string before1 = t1.substr(0, n1);  // open, start of call 1
  const std::string after1 = t1.substr(n1 + len);  // rest of call 1, close, end of turn
  std::string call_head, call_tail;
  size_t b = 0;
  const size_t m2 = two ? t2.find(kFn2) : std::string::npos;
  const bool used_two = two && t2.compare(0, n1 + len, t1, 0, n1 + len) == 0 && m2 >= n1 + len;
  if (used_two) {
    const std::string between = t2.substr(n1 + len, m2 - n1 - len);  // rest of call 1, sep, start of call 2
    // The rest of call 1 does not end inside a marker that only the next call or the close opens.
    const size_t a = Unsplit(after1, Unsplit(after1, CommonPrefix(after1, between)), '[', ']');
    const std::string rest = between.substr(a);
    b = CommonSuffix(before1, rest, rest.size());
    call_head = before1.substr(before1.size() - b);
    call_tail = after1.substr(0, a);
    f.call_sep = rest.substr(0, rest.size() - b);
  } else {
    // One call only (Llama 3.x refuses two): the call is the JSON object holding the name.
    const size_t brace = before1.rfind('{');
    if (brace == std::string::npos || before1.find('}', brace) != std::string::npos) return ToolCallFormat();
    const size_t end = ObjectEnd(t1, brace);
    if (end == std::string::npos || end < n1 + len) return ToolCallFormat();
    b = before1.size() - brace;
    call_head = before1.substr(brace);
    call_tail = t1.substr(n1 + len, end - n1 - len);
  }
  std::string open = before1.substr(0, before1.size() - b);
  // What the template writes before any assistant text (an empty reasoning block, a header) is
  // not part of the calls.
  open = open.substr(Unsplit(open, CommonPrefix(open, pre_content)));
  if (!reasoning.close.empty()) {
    const size_t rc = open.find(reasoning.close);
    if (rc != std::string::npos) open = open.substr(rc + reasoning.close.size());
  }
  f.block_open = open;
  std::string close = after1.substr(call_tail.size());
  if (!end_of_turn.empty() && close.size() >= end_of_turn.size() &&
      close.compare(close.size() - end_of_turn.size(), end_of_turn.size(), end_of_turn) == 0) {
    close.resize(close.size() - end_of_turn.size());
  }
  f.block_close = close;
  // The arguments: a JSON object holding "zfprobe_arg", or key/value elements.
  const std::string quoted = std::string("\"") + kKey1 + "\"";
  AppendWithIds(call_head, &f.call);
  f.call.push_back({Piece::kName, ""});
  // A JSON key is followed by ':' (not an attribute value such as name="zfprobe_arg").
  size_t q = call_tail.find(quoted);
  while (q != std::string::npos) {
    size_t c = q + quoted.size();
    while (c < call_tail.size() && IsSpace(call_tail[c])) ++c;
    if (c < call_tail.size() && call_tail[c] == ':') break;
    q = call_tail.find(quoted, q + 1);
  }
  if (q != std::string::npos) {
    const size_t s = call_tail.rfind('{', q);
    const size_t e = s == std::string::npos ? s : ObjectEnd(call_tail, s);
    if (e == std::string::npos) return ToolCallFormat();
    f.args = ArgsStyle::kJson;
    AppendWithIds(call_tail.substr(0, s), &f.call);
    f.call.push_back({Piece::kArgs, ""});
    AppendWithIds(call_tail.substr(e), &f.call);
  } else if (const size_t pp = call_tail.find(std::string("(") + kKey1 + "=");
             pp != std::string::npos && Trim(call_tail.substr(0, pp)).empty()) {
    // Python-call arguments right after the name.
    Json v;
    const size_t e = ReadPythonArgs(call_tail, pp, &v);
    if (e == std::string::npos) return ToolCallFormat();
    f.args = ArgsStyle::kPython;
    AppendWithIds(call_tail.substr(0, pp), &f.call);
    f.call.push_back({Piece::kArgs, ""});
    AppendWithIds(call_tail.substr(e), &f.call);
  } else if (const size_t kc = call_tail.find(std::string(kKey1) + ":"),
             ob = kc == std::string::npos ? kc : call_tail.rfind('{', kc);
             ob != std::string::npos && Trim(call_tail.substr(ob + 1, kc - ob - 1)).empty() &&
             call_tail.find("zfprobe_val", kc) != std::string::npos) {
    // An object literal with bare keys: strings between the marks written around the value.
    const size_t qs = kc + sizeof kKey1, v1 = call_tail.find("zfprobe_val", kc);
    f.args = ArgsStyle::kRelaxed;
    f.string_quote = call_tail.substr(qs, v1 - qs);
    if (f.string_quote.empty()) return ToolCallFormat();
    const size_t e = RelaxedObjectEnd(call_tail, ob, f.string_quote);
    if (e == std::string::npos) return ToolCallFormat();
    AppendWithIds(call_tail.substr(0, ob), &f.call);
    f.call.push_back({Piece::kArgs, ""});
    AppendWithIds(call_tail.substr(e), &f.call);
  } else {
    const size_t k1 = call_tail.find(kKey1), v1 = call_tail.find("zfprobe_val"), k2 = call_tail.find(kKey2),
                 v2 = call_tail.find("zfprobe_wal");
    if (k1 == std::string::npos || !(k1 < v1 && v1 < k2 && k2 < v2 && v2 != std::string::npos)) return ToolCallFormat();
    const size_t lk = sizeof kKey1 - 1, lv = sizeof "zfprobe_val" - 1;
    const std::string head_text = call_tail.substr(0, k1);
    const std::string mid = call_tail.substr(k1 + lk, v1 - k1 - lk);
    const std::string sep = call_tail.substr(v1 + lv, k2 - v1 - lv);
    const std::string tail = call_tail.substr(v2 + lv);
    const size_t pb = CommonSuffix(head_text, sep, sep.size());
    std::string param_close = sep.substr(0, sep.size() - pb);
    // A close marker naming the key (</KEY>): the key is a slot.
    if (const size_t at = param_close.find(kKey1); at != std::string::npos) {
      param_close.replace(at, sizeof kKey1 - 1, 1, kKeySlot);
    }
    f.param_close = param_close;
    const std::string close2 = ParamClose(f, kKey2);
    if (tail.compare(0, close2.size(), close2) != 0 || Trim(param_close).empty()) return ToolCallFormat();
    f.args = ArgsStyle::kXml;
    f.param_open = sep.substr(sep.size() - pb);
    f.param_mid = mid;
    f.param_close = param_close;
    AppendWithIds(call_tail.substr(0, k1 - pb), &f.call);
    f.call.push_back({Piece::kArgs, ""});
    AppendWithIds(call_tail.substr(v2 + lv + close2.size()), &f.call);
  }
  f.native = true;
  f.parallel = used_two;
  // Self-check: the derived format must read both probes back.
  ChatFormat cf;
  cf.tools = f;
  Json tools = ProbeTools();
  Json want_args = c1["function"]["arguments"];
  if (want_args.is_string()) want_args = Json::parse(want_args.get<std::string>());
  for (const auto& [text, want] : {std::pair<const std::string&, size_t>{t1, 1}, {t2, 2}}) {
    if (want == 2 && !used_two) continue;
    ParsedMessage m = ParseAssistantStrict(text, cf, tools);  // calls only where the whole pattern matches
    if (m.tool_calls.size() != want || m.tool_calls[0].name != kFn1 ||
        (want == 2 && m.tool_calls[1].name != kFn2) ||
        Json::parse(m.tool_calls[0].arguments) != want_args) {
      return ToolCallFormat();
    }
  }
  return f;
}

}  // namespace

std::string ParamClose(const ToolCallFormat& f, std::string_view key) {
  std::string s = f.param_close;
  const size_t at = s.find(kKeySlot);
  if (at != std::string::npos) s.replace(at, 1, key);
  return s;
}

const nlohmann::ordered_json& ProbeTools() {
  static const Json tools = [] {
    Json t = Json::array();
    for (const char* name : {kFn1, kFn2}) {
      t.push_back({{"type", "function"},
                   {"function",
                    {{"name", name},
                     {"description", "probe"},
                     {"parameters",
                      {{"type", "object"},
                       // Described parameters: templates that print a parameter's
                       // description fail without one (Command R+).
                       {"properties",
                        {{kKey1, {{"type", "string"}, {"description", "probe"}}},
                         {kKey2, {{"type", "string"}, {"description", "probe"}}}}},
                       {"required", Json::array({kKey1, kKey2})}}}}}});
    }
    return t;
  }();
  return tools;
}

std::vector<std::string> MarkerTexts(const ChatFormat& format) {
  const ToolCallFormat& t = format.tools;
  std::vector<std::string> out = {t.block_open, t.call_sep, t.block_close, t.param_open, t.param_mid,
                                  t.param_close, format.reasoning.open, format.reasoning.close,
                                  format.content_prefix};
  for (const Piece& p : t.call) out.push_back(p.text);
  // Harmony's headers and message ends (chat/harmony.h); Llama 3.x's built-in call opener.
  if (format.harmony) {
    for (const char* m : {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>"}) out.emplace_back(m);
  }
  if (format.python_tag) out.emplace_back("<|python_tag|>");
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

namespace {

// Whether the template shows tool calls and tool results: a call turn and a tool message
// rendered (transformers' and OpenAI's argument forms, content "" or null), looked for by the
// call's name or argument value and by the result's text.
void DeriveToolRendering(const Renderer& render, ChatFormat* f) {
  Json assistant = {{"role", "assistant"}, {"content", kContent}};
  for (int variant = 0; variant < 4 && !f->renders_tool_calls; ++variant) {
    Json c = Call(kId1, kFn1, "zfprobe_val", "zfprobe_wal");
    if ((variant & 1) != 0) c["function"]["arguments"] = c["function"]["arguments"].dump();
    const Json msg = {{"role", "assistant"}, {"content", (variant & 2) != 0 ? Json(nullptr) : Json("")},
                      {"tool_calls", Json::array({c})}};
    std::string out;
    if (!render(Json::array({User(), msg}), false, &out)) continue;
    if (out.find(kFn1) != std::string::npos || out.find("zfprobe_val") != std::string::npos) {
      f->renders_tool_calls = true;
      assistant = msg;
    }
  }
  const Json tool = {{"role", "tool"}, {"tool_call_id", kId1}, {"name", kFn1}, {"content", "zfprobe_result"}};
  std::string out;
  f->renders_tool_results = render(Json::array({User(), assistant, tool}), false, &out) &&
                            out.find("zfprobe_result") != std::string::npos;
}

}  // namespace

bool MayNeedNormalizing(const Json& messages) {
  if (!messages.is_array()) return false;
  for (const Json& m : messages) {
    if (!m.is_object()) continue;
    const Json role = m.value("role", Json());
    if (role == "tool" || (m.contains("tool_calls") && !m["tool_calls"].is_null()) ||
        (role == "assistant" && (!m.contains("content") || m["content"].is_null()))) {
      return true;
    }
  }
  return false;
}

Json NormalizeMessages(const Json& messages, const ChatFormat& format) {
  if (!messages.is_array()) return messages;
  Json out = Json::array();
  bool last_was_result = false;  // out's last message holds converted tool results
  for (const Json& m : messages) {
    if (!m.is_object()) {
      out.push_back(m);
      last_was_result = false;
      continue;
    }
    Json msg = m;
    const Json role = msg.value("role", Json());
    if (role == "assistant" && !format.renders_tool_calls && msg.contains("tool_calls") && msg["tool_calls"].is_array() &&
        !msg["tool_calls"].empty() && (!msg.contains("content") || msg["content"].is_null() || msg["content"].is_string())) {
      Json written = Json::array();
      for (const Json& c : msg["tool_calls"]) {
        const Json& fn = c.is_object() && c.contains("function") && c["function"].is_object() ? c["function"] : c;
        if (!fn.is_object()) continue;
        Json args = fn.value("arguments", Json::object());
        if (args.is_string()) {
          const std::string& a = args.get_ref<const std::string&>();
          Json parsed = Json::parse(a, nullptr, /*allow_exceptions=*/false);
          if (!parsed.is_discarded()) args = std::move(parsed);
        }
        written.push_back({{"name", fn.value("name", Json(""))}, {"arguments", std::move(args)}});
      }
      const std::string calls = written.size() == 1 ? written[0].dump() : written.dump();
      const std::string content = msg.contains("content") && msg["content"].is_string() ? msg["content"].get<std::string>() : "";
      msg["content"] = content.empty() ? calls : content + "\n" + calls;
      msg.erase("tool_calls");
    } else if (role == "assistant" && !format.renders_tool_calls && (!msg.contains("content") || msg["content"].is_null())) {
      msg["content"] = "";
    }
    if (role == "tool" && !format.renders_tool_results) {
      Json r = Json::object();
      if (msg.contains("name") && msg["name"].is_string()) r["name"] = msg["name"];
      if (msg.contains("tool_call_id") && msg["tool_call_id"].is_string()) r["tool_call_id"] = msg["tool_call_id"];
      r["content"] = msg.value("content", Json(""));
      const std::string text = Json({{"tool_response", r}}).dump();
      if (last_was_result) {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + text;
      } else {
        out.push_back({{"role", "user"}, {"content", text}});
      }
      last_was_result = true;
      continue;
    }
    if (last_was_result && role == "user" && msg.value("content", Json()).is_string()) {
      // The user's turn after the results joins them (templates that want roles to alternate).
      out.back()["content"] = out.back()["content"].get<std::string>() + "\n\n" + msg["content"].get<std::string>();
      last_was_result = false;
      continue;
    }
    out.push_back(std::move(msg));
    last_was_result = false;
  }
  return out;
}

ChatFormat DeriveChatFormat(const Renderer& render, const std::string& template_source) {
  ChatFormat f;
  std::string prompt;
  if (!render(Json::array({User()}), true, &prompt)) return f;
  std::string turn, pre_content;
  // A template that writes something after the last message whatever it is: the rendering of
  // [user] alone is not a prefix of [user, assistant]; what it adds there is the trailer.
  std::string trailer, alone, both;
  if (render(Json::array({User()}), false, &alone) &&
      render(Json::array({User(), {{"role", "assistant"}, {"content", kContent}}}), false, &both) &&
      both.compare(0, alone.size(), alone) != 0) {
    // Only long text (instructions), never an end-of-text marker some templates add.
    const size_t core = alone.size() - CommonPrefix(alone, both);
    size_t n = 0;
    while (n < alone.size() && n < both.size() && alone[alone.size() - 1 - n] == both[both.size() - 1 - n]) ++n;
    if (core >= 64 && n >= core) trailer = alone.substr(alone.size() - n);
  }
  if (Turn(render, prompt, {{"role", "assistant"}, {"content", kContent}}, &turn, trailer)) {
    const size_t c = turn.find(kContent);
    if (c != std::string::npos) {
      pre_content = turn.substr(0, c);
      f.end_of_turn = turn.substr(c + sizeof kContent - 1);
    }
  }
  f.reasoning = DeriveReasoning(render, prompt, template_source, trailer);
  std::string prefix = pre_content;
  if (!f.reasoning.close.empty()) {
    const size_t rc = prefix.find(f.reasoning.close);
    if (rc != std::string::npos) prefix = prefix.substr(rc + f.reasoning.close.size());
  }
  f.content_prefix = Trim(prefix);
  f.tools = DeriveToolCalls(render, prompt, pre_content, f.end_of_turn, f.reasoning, trailer);
  // Harmony's calls and reasoning cannot be diffed out (the name sits in a message header,
  // reasoning comes from another field): a hand-written reader.
  f.harmony = !f.tools.native && IsHarmonyTemplate(template_source);
  // Llama 3.x writes built-in tool calls (brave_search.call(...), code) after this marker: a
  // form the probes cannot show (the template writes it only for `builtin_tools`).
  f.python_tag = template_source.find("<|python_tag|>") != std::string::npos;
  DeriveToolRendering(render, &f);
  return f;
}

}  // namespace zf::chat

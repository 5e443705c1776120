// Reading harmony messages (see harmony.h).
#include "chat/harmony.h"

#include "common/json_depth.h"
#include "common/utf8.h"

#include <vector>

namespace zf::chat {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kConstrain = "<|constrain|>";
constexpr std::string_view kEnds[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The longest end of `text` that begins a harmony marker ("<|...): held back while streaming.
size_t HeldMarker(std::string_view text) {
  const size_t lt = text.rfind('<');
  if (lt == std::string_view::npos || text.size() - lt > 12) return 0;
  const std::string_view tail = text.substr(lt);
  if (tail.size() == 1 || tail[1] == '|') {
    if (tail.find('>') == std::string_view::npos) return tail.size();
  }
  return 0;
}

struct Header {
  std::string channel, recipient;
  bool ok = false;
};

// A header: `<|channel|>WORD`, ` to=WORD`, `<|constrain|>WORD` and bare words (a content type)
// in any order, nothing else.
Header ReadHeader(std::string_view h) {
  Header out;
  size_t i = 0;
  auto word = [&](std::string* w) {
    const size_t s = i;
    while (i < h.size() && !IsSpace(h[i]) && h[i] != '<') ++i;
    if (w) *w = std::string(h.substr(s, i - s));
    return i > s;
  };
  bool any = false;
  while (i < h.size()) {
    if (IsSpace(h[i])) {
      ++i;
    } else if (h.substr(i, kChannel.size()) == kChannel) {
      i += kChannel.size();
      if (!word(&out.channel)) return out;
      any = true;
    } else if (h.substr(i, kConstrain.size()) == kConstrain) {
      i += kConstrain.size();
      if (!word(nullptr)) return out;
    } else if (h.substr(i, 3) == "to=") {
      i += 3;
      if (!word(&out.recipient)) return out;
      any = true;
    } else if (h[i] == '<') {
      return out;  // another marker: not a header
    } else {
      word(nullptr);  // a content type ("json") or the role's name
    }
  }
  out.ok = any;
  return out;
}

// Whether `s` may still become the start of a message (streaming): a prefix of `<|start|>`,
// `<|channel|>` or ` to=`, or a header without its `<|message|>` yet.
bool MayBeHeader(std::string_view s) {
  const std::string_view t = Trim(s);
  if (t.empty()) return true;
  for (std::string_view m : {kStart, kChannel, std::string_view("to=")}) {
    if (m.substr(0, t.size()) == t) return true;
  }
  if (t.substr(0, kStart.size()) == kStart || t.substr(0, kChannel.size()) == kChannel || t.substr(0, 3) == "to=") {
    return t.find("<|end|>") == std::string_view::npos && t.find("<|return|>") == std::string_view::npos;
  }
  return false;
}

}  // namespace

bool IsHarmonyTemplate(const std::string& source) {
  return source.find("<|channel|>") != std::string::npos && source.find("<|message|>") != std::string::npos &&
         source.find("<|start|>assistant") != std::string::npos && source.find("to=") != std::string::npos;
}

ParsedMessage ParseHarmony(std::string_view text, const Json& tools, bool partial) {
  ParsedMessage m;
  std::vector<std::string> content, reasoning;
  size_t i = 0;
  bool structured = false;
  while (i < text.size()) {
    size_t h = i;
    while (h < text.size() && IsSpace(text[h])) ++h;
    if (h == text.size()) break;
    // An optional `<|start|>assistant` before the header (the prompt wrote the first one).
    if (text.substr(h, kStart.size()) == kStart) h += kStart.size();
    const size_t msg = text.find(kMessage, h);
    Header hd;
    if (msg != std::string_view::npos) hd = ReadHeader(text.substr(h, msg - h));
    if (!hd.ok) {
      if (partial && msg == std::string_view::npos && MayBeHeader(text.substr(i))) break;  // a header arriving
      // No harmony structure: the rest is content.
      std::string_view rest = text.substr(i);
      if (partial) rest = rest.substr(0, rest.size() - HeldMarker(rest));
      content.emplace_back(structured ? Trim(rest) : rest);
      break;
    }
    structured = true;
    const size_t body = msg + kMessage.size();
    size_t end = std::string_view::npos, next = text.size();
    for (std::string_view e : kEnds) {
      const size_t at = text.find(e, body);
      if (at < end) end = at, next = at + (e == kStart ? 0 : e.size());
    }
    const bool complete = end != std::string_view::npos;
    std::string_view b = text.substr(body, complete ? end - body : std::string_view::npos);
    if (!complete && partial) b = b.substr(0, b.size() - HeldMarker(b));
    const bool call = hd.recipient.rfind("functions.", 0) == 0 && hd.recipient.size() > 10;
    if (call) {
      ToolCall c;
      c.name = hd.recipient.substr(10);
      c.id = DerivedId(text.substr(0, i), c.name, m.tool_calls.size());
      const std::string_view args = Trim(b);
      if (complete || !partial) {
        Json v = zf::JsonNesting(args, zf::kMaxJsonNesting) > zf::kMaxJsonNesting
                     ? Json(Json::value_t::discarded)
                     : Json::parse(args.begin(), args.end(), nullptr, false);
        if (v.is_discarded() || !v.is_object()) {
          content.emplace_back(args);  // not arguments: kept as the text it is
        } else {
          c.arguments = std::string(args);
          m.tool_calls.push_back(std::move(c));
        }
      } else {
        // Arguments still arriving: the text so far, without trailing whitespace the final
        // parse trims.
        std::string_view a = b;
        while (!a.empty() && IsSpace(a.front())) a.remove_prefix(1);
        while (!a.empty() && IsSpace(a.back())) a.remove_suffix(1);
        c.arguments = std::string(WholeUtf8Prefix(a));
        m.tool_calls.push_back(std::move(c));
      }
    } else if (hd.channel == "analysis") {
      reasoning.emplace_back(complete || !partial ? Trim(b) : TrimLeft(WholeUtf8Prefix(b)));
    } else {
      content.emplace_back(complete || !partial ? Trim(b) : TrimLeft(WholeUtf8Prefix(b)));
    }
    i = next;
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) {
      if (p.empty()) continue;
      if (!s.empty()) s += "\n";
      s += p;
    }
    return s;
  };
  m.content = join(content);
  if (partial) {
    size_t k = 0;
    while (k < m.content.size() && IsSpace(m.content[k])) ++k;
    if (structured) m.content.erase(0, k);
  }
  m.reasoning = join(reasoning);
  if (partial) {
    while (!m.reasoning.empty() && IsSpace(m.reasoning.back())) m.reasoning.pop_back();
  }
  m.has_reasoning = !m.reasoning.empty();
  // A turn with no harmony structure may still be the generic JSON call form.
  if (!structured && m.tool_calls.empty()) {
    if (GenericCalls(text, tools, &m.tool_calls)) {
      m.content.clear();
    } else if (partial && tools.is_array() && !tools.empty()) {
      const std::string_view t = Trim(text);
      if (!t.empty() && (t.front() == '{' || t.front() == '[' || t.front() == '`')) m.content.clear();
    }
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      if (m.tool_calls[k].id.empty()) m.tool_calls[k].id = DerivedId(m.tool_calls[k].arguments, m.tool_calls[k].name, k);
    }
  }
  return m;
}

}  // namespace zf::chat

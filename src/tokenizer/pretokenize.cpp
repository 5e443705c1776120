#include "tokenizer/pretokenize.h"

#include <string>

#include "tokenizer/regex_split.h"
#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

// A hand-written splitter: the length of its match at pos within [pos, end), 0 for none.
using MatchFn = size_t (*)(const uint32_t* cps, size_t pos, size_t end);

// Like SplitSegments (regex_split.h) for a hand-written splitter: each current segment is split
// on its own; matches and the text between them both become segments, as in the reference.
std::vector<size_t> ApplyMatcher(const std::vector<uint32_t>& cps, const std::vector<size_t>& in,
                                 MatchFn match) {
  std::vector<size_t> out;
  out.reserve(in.size() * 2);
  size_t begin = 0;
  for (size_t end : in) {
    size_t pos = begin;
    while (pos < end) {
      size_t len = match(cps.data(), pos, end);
      if (len == 0) { ++pos; continue; }
      if (out.empty() ? pos > 0 : pos > out.back()) out.push_back(pos);
      pos += len;
      out.push_back(pos);
    }
    if (out.empty() || out.back() != end) out.push_back(end);
    begin = end;
  }
  return out;
}

inline bool IsL(uint32_t c) { return (CodepointFlags(c) & kCpLetter) != 0; }
inline bool IsN(uint32_t c) { return (CodepointFlags(c) & kCpNumber) != 0; }
inline bool IsS(uint32_t c) { return (CodepointFlags(c) & kCpWhitespace) != 0; }
inline bool IsOther(uint32_t c) { return (CodepointFlags(c) & (kCpLetter | kCpNumber | kCpWhitespace)) == 0; }
inline bool IsCrLf(uint32_t c) { return c == '\r' || c == '\n'; }

size_t RunWhile(const uint32_t* c, size_t pos, size_t end, bool (*pred)(uint32_t)) {
  size_t p = pos;
  while (p < end && pred(c[p])) ++p;
  return p - pos;
}

// 's 't 're 've 'm 'll 'd (optionally case-insensitive); returns the length or 0.
size_t Contraction(const uint32_t* c, size_t pos, size_t end, bool fold) {
  if (c[pos] != '\'' || pos + 1 >= end) return 0;
  auto lo = [fold](uint32_t x) { return fold ? ToLower(x) : x; };
  uint32_t a = lo(c[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 < end) {
    uint32_t b = lo(c[pos + 2]);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

// \s+(?!\S): a whitespace run, minus its last char when a non-space follows.
size_t SpacesNotBeforeNonSpace(const uint32_t* c, size_t pos, size_t end) {
  size_t n = RunWhile(c, pos, end, IsS);
  if (n == 0) return 0;
  if (pos + n == end) return n;
  return n >= 2 ? n - 1 : 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
size_t MatchGpt2(const uint32_t* c, size_t pos, size_t end) {
  if (size_t n = Contraction(c, pos, end, false)) return n;
  size_t sp = (c[pos] == ' ' && pos + 1 < end) ? 1 : 0;
  for (bool (*cls)(uint32_t) : {IsL, IsN, IsOther}) {
    if (cls(c[pos])) return RunWhile(c, pos, end, cls);
    if (sp && cls(c[pos + 1])) return 1 + RunWhile(c, pos + 1, end, cls);
  }
  return SpacesNotBeforeNonSpace(c, pos, end);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,K}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+   (Llama 3: K = 3, Qwen 2: K = 1)
size_t MatchLlama3(const uint32_t* c, size_t pos, size_t end, size_t max_digits) {
  if (size_t n = Contraction(c, pos, end, true)) return n;
  uint32_t x = c[pos];
  if (IsL(x)) return RunWhile(c, pos, end, IsL);
  if (!IsCrLf(x) && !IsN(x) && pos + 1 < end && IsL(c[pos + 1])) {
    return 1 + RunWhile(c, pos + 1, end, IsL);
  }
  if (IsN(x)) {
    size_t n = RunWhile(c, pos, end, IsN);
    return n < max_digits ? n : max_digits;
  }
  size_t sp = (x == ' ' && pos + 1 < end && IsOther(c[pos + 1])) ? 1 : 0;
  if (IsOther(c[pos + sp]) && pos + sp < end) {
    size_t n = sp + RunWhile(c, pos + sp, end, IsOther);
    return n + RunWhile(c, pos + n, end, IsCrLf);
  }
  size_t ws = RunWhile(c, pos, end, IsS);
  if (ws == 0) return 0;
  for (size_t k = ws; k > 0; --k) {  // \s*[\r\n]+ : up to the last newline of the run
    if (IsCrLf(c[pos + k - 1])) return k;
  }
  if (size_t n = SpacesNotBeforeNonSpace(c, pos, end)) return n;
  return ws;
}

size_t MatchOneDigit(const uint32_t* c, size_t pos, size_t) { return IsN(c[pos]) ? 1 : 0; }

inline bool IsLM(uint32_t c) { return (CodepointFlags(c) & (kCpLetter | kCpMark)) != 0; }
inline bool IsOtherNoMark(uint32_t c) {
  return (CodepointFlags(c) & (kCpLetter | kCpMark | kCpNumber | kCpWhitespace)) == 0;
}

// Qwen 3.5: Qwen 2's pattern where letter runs also take combining marks (so "e\u0301" stays
// one word) and the punctuation run stops at them:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
// ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t MatchQwen35(const uint32_t* c, size_t pos, size_t end) {
  if (size_t n = Contraction(c, pos, end, true)) return n;
  uint32_t x = c[pos];
  if (IsLM(x)) return RunWhile(c, pos, end, IsLM);
  if (!IsCrLf(x) && !IsN(x) && pos + 1 < end && IsLM(c[pos + 1])) {
    return 1 + RunWhile(c, pos + 1, end, IsLM);
  }
  if (IsN(x)) return 1;
  size_t sp = (x == ' ' && pos + 1 < end && IsOtherNoMark(c[pos + 1])) ? 1 : 0;
  if (IsOtherNoMark(c[pos + sp]) && pos + sp < end) {
    size_t n = sp + RunWhile(c, pos + sp, end, IsOtherNoMark);
    return n + RunWhile(c, pos + n, end, IsCrLf);
  }
  size_t ws = RunWhile(c, pos, end, IsS);
  if (ws == 0) return 0;
  for (size_t k = ws; k > 0; --k) {  // \s*[\r\n]+ : up to the last newline of the run
    if (IsCrLf(c[pos + k - 1])) return k;
  }
  if (size_t n = SpacesNotBeforeNonSpace(c, pos, end)) return n;
  return ws;
}

// [^\n]+|[\n]+ : runs of newlines and runs of everything else (Gemma 4, whose BPE merges run
// over whole lines).
inline bool IsNl(uint32_t c) { return c == '\n'; }
size_t MatchNewlineRuns(const uint32_t* c, size_t pos, size_t end) {
  const bool nl = IsNl(c[pos]);
  size_t p = pos;
  while (p < end && IsNl(c[p]) == nl) ++p;
  return p - pos;
}

// Regex lists per pre-tokenizer, as in the reference. "@gpt2", "@llama3", "@qwen2", "@qwen35",
// "@newlines" and "@digit" name the hand-written splitters for those exact patterns.
struct PreSpec {
  const char* names;  // '|'-separated tokenizer.ggml.pre values
  std::vector<std::string> exprs;
};

const std::vector<PreSpec>& Specs() {
  static const std::vector<PreSpec> specs = {
      {"gpt-2|phi-2|mpt|olmo|jais|jina-es|jina-de|jina-v2-es|jina-v2-de|jina-v1-en|"
       "jina-v2-code|roberta-bpe|gigachat|a.x-4.0|mellum|modern-bert|trillion",
       {"@gpt2"}},
      {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|dbrx|smaug-bpe|chatglm-bpe|glm4|lfm2",
       {"@llama3"}},
      {"qwen2|deepseek-r1-qwen|stablelm2|hunyuan|grok-2", {"@qwen2"}},
      {"qwen35", {"@qwen35"}},
      {"gemma4", {"@newlines"}},
      // o200k (gpt-oss, GPT-4o, Llama 4): the reference's rewrite of the tokenizer.json pattern,
      // "upper" letters as letters other than a-z and "lower" ones as letters other than A-Z.
      {"gpt-4o|llama4|kanana2|talkie",
       {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|"
        "'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|"
        "'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+"}},
      {"smollm|starcoder|refact|command-r|codeshell|exaone|minerva", {"@digit", "@gpt2"}},
      {"deepseek-llm",
       {"[\r\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌῐ-\u1fd3ῖ-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"}},
      {"deepseek-coder", {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}},
      {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", "@gpt2", "[0-9][0-9][0-9]"}},
      {"poro-chat|bloom|gpt3-finnish", {" ?[^(\\s|.,!?…。，、।۔،)]+"}},
      {"viking", {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}},
      {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", "@gpt2", "\\p{N}+", "[0-9][0-9][0-9]"}},
  };
  return specs;
}

bool NameListHas(const char* names, std::string_view pre) {
  std::string_view all(names);
  size_t start = 0;
  while (start <= all.size()) {
    size_t bar = all.find('|', start);
    if (bar == std::string_view::npos) bar = all.size();
    if (all.substr(start, bar - start) == pre) return true;
    start = bar + 1;
  }
  return false;
}

class RegexPreTokenizer final : public PreTokenizer {
 public:
  struct Stage {
    MatchFn match = nullptr;           // hand-written splitter, or
    std::unique_ptr<SplitRegex> regex;  // the general engine
  };
  std::vector<Stage> stages;

  std::vector<size_t> Split(const std::vector<uint32_t>& cps) const override {
    std::vector<size_t> bounds = {cps.size()};
    if (cps.empty()) return bounds;
    for (const Stage& s : stages) {
      bounds = s.regex ? SplitSegments(cps, bounds, *s.regex) : ApplyMatcher(cps, bounds, s.match);
    }
    return bounds;
  }
};

}  // namespace

Status PreTokenizer::Create(std::string_view pre, std::unique_ptr<PreTokenizer>* out) {
  const PreSpec* spec = nullptr;
  for (const PreSpec& s : Specs()) {
    if (NameListHas(s.names, pre)) { spec = &s; break; }
  }
  if (spec == nullptr) {
    return Unsupported("tokenizer: unsupported pre-tokenizer '" + std::string(pre) + "'");
  }
  auto p = std::make_unique<RegexPreTokenizer>();
  for (const std::string& e : spec->exprs) {
    RegexPreTokenizer::Stage st;
    if (e == "@gpt2") {
      st.match = MatchGpt2;
    } else if (e == "@llama3") {
      st.match = [](const uint32_t* c, size_t pos, size_t end) { return MatchLlama3(c, pos, end, 3); };
    } else if (e == "@qwen2") {
      st.match = [](const uint32_t* c, size_t pos, size_t end) { return MatchLlama3(c, pos, end, 1); };
    } else if (e == "@qwen35") {
      st.match = MatchQwen35;
    } else if (e == "@newlines") {
      st.match = MatchNewlineRuns;
    } else if (e == "@digit") {
      st.match = MatchOneDigit;
    } else {
      Status s = SplitRegex::Compile(e, &st.regex);
      if (!s.ok()) return InternalError("tokenizer: pre-tokenizer '" + std::string(pre) + "': " + s.message());
    }
    p->stages.push_back(std::move(st));
  }
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace zf::tok

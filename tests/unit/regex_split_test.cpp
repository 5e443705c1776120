// Tests of the pre-tokenizer regex engine (src/tokenizer/regex_split.h). The split vectors in
// tests/data/regex/split_vectors.txt come from Python's `regex` package
// (scripts/gen_regex_vectors.py), with the reference's pattern lists.
#include "tokenizer/regex_split.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

std::vector<uint32_t> Cps(std::string_view s) {
  std::vector<uint32_t> cps;
  DecodeUtf8(s, &cps, nullptr);
  return cps;
}

std::unique_ptr<SplitRegex> MustCompile(std::string_view pattern) {
  std::unique_ptr<SplitRegex> re;
  Status s = SplitRegex::Compile(pattern, &re);
  EXPECT_TRUE(s.ok()) << pattern << ": " << s.message();
  return re;
}

// Matches of `pattern` in `text`, as UTF-8 strings.
std::vector<std::string> Matches(std::string_view pattern, std::string_view text) {
  auto re = MustCompile(pattern);
  std::vector<std::string> out;
  if (!re) return out;
  std::vector<uint32_t> cps = Cps(text);
  std::vector<std::pair<size_t, size_t>> m;
  re->FindAll(cps.data(), 0, cps.size(), &m);
  for (const auto& [b, e] : m) {
    std::string s;
    for (size_t i = b; i < e; ++i) AppendUtf8(cps[i], &s);
    out.push_back(s);
  }
  return out;
}

using Strs = std::vector<std::string>;

TEST(RegexSplitTest, BasicSemantics) {
  EXPECT_EQ(Matches("a|ab", "ab ab"), (Strs{"a", "a"}));           // first alternative wins
  EXPECT_EQ(Matches("ab|a", "ab a"), (Strs{"ab", "a"}));
  EXPECT_EQ(Matches("a*ab", "xaaab"), (Strs{"aaab"}));             // backtracking
  EXPECT_EQ(Matches("a+?", "aaa"), (Strs{"a", "a", "a"}));         // lazy
  EXPECT_EQ(Matches("a{2}", "aaaaa"), (Strs{"aa", "aa"}));
  EXPECT_EQ(Matches("a{2,}", "a aa aaaa"), (Strs{"aa", "aaaa"}));
  EXPECT_EQ(Matches("a{1,3}", "aaaaaaa"), (Strs{"aaa", "aaa", "a"}));
  EXPECT_EQ(Matches("a{,2}", "aaa"), (Strs{"aa", "a"}));
  EXPECT_EQ(Matches("x{", "x{"), (Strs{"x{"}));                    // not a quantifier: literal
  EXPECT_EQ(Matches("a*", "baab"), (Strs{"aa"}));                  // empty matches skipped
  EXPECT_EQ(Matches("\\s+(?!\\S)", "a   b  "), (Strs{"  ", "  "}));
  EXPECT_EQ(Matches("a(?=b)", "ab ac ab"), (Strs{"a", "a"}));
  EXPECT_EQ(Matches("^a|a$", "aaa"), (Strs{"a", "a"}));
  EXPECT_EQ(Matches("\\ba\\w*", "ab ba a_b"), (Strs{"ab", "a_b"}));
  EXPECT_EQ(Matches("\\Ba", "ab ba"), (Strs{"a"}));
  EXPECT_EQ(Matches("(?i:'s|'re)", "'S 'rE 's"), (Strs{"'S", "'rE", "'s"}));
  EXPECT_EQ(Matches("(?i:[a-c]+)", "xABcd"), (Strs{"ABc"}));
  EXPECT_EQ(Matches("(?i:[A-C]+)", "xabCd"), (Strs{"abC"}));
  EXPECT_EQ(Matches("(?i:ΣΑ)", "σα"), (Strs{"σα"}));
  EXPECT_EQ(Matches("[^\\s\\p{L}]+", "ab!? c1-"), (Strs{"!?", "1-"}));
  EXPECT_EQ(Matches("[\\P{L}]+", "ab12cd"), (Strs{"12"}));
  EXPECT_EQ(Matches("\\p{N}+", "x²３٣y"), (Strs{"²３٣"}));
  EXPECT_EQ(Matches("\\d+", "12٣4"), (Strs{"12", "4"}));
  EXPECT_EQ(Matches("[一-龥]+", "a中文b"), (Strs{"中文"}));
  EXPECT_EQ(Matches("\\x41\\u00e9\\x{1F600}", "Aé😀"), (Strs{"Aé😀"}));
  EXPECT_EQ(Matches("\\.\\*\\[\\]", "a.*[]"), (Strs{".*[]"}));
  EXPECT_EQ(Matches("[]a]+", "]a]b"), (Strs{"]a]"}));
  EXPECT_EQ(Matches("[a-]+", "-a-b"), (Strs{"-a-"}));
  EXPECT_EQ(Matches(".+", "ab\ncd"), (Strs{"ab", "cd"}));
  EXPECT_EQ(Matches("(a|b)*c", "ababcx"), (Strs{"ababc"}));
  EXPECT_EQ(Matches("(a*)*b", "aaab"), (Strs{"aaab"}));            // nested empty loops end
  EXPECT_EQ(Matches("(?:)", "abc"), (Strs{}));
}

TEST(RegexSplitTest, SegmentIsTheWholeInput) {
  // Lookaheads, $ and \b do not see past the segment end.
  auto re = MustCompile("\\s+(?!\\S)|a$|a\\b");
  std::vector<uint32_t> cps = Cps("  xa  ab");
  std::vector<std::pair<size_t, size_t>> m;
  re->FindAll(cps.data(), 0, 2, &m);  // "  "
  re->FindAll(cps.data(), 3, 4, &m);  // "a"
  re->FindAll(cps.data(), 6, 7, &m);  // "a"
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {3, 4}, {6, 7}}));
}

TEST(RegexSplitTest, SplitKeepsGaps) {
  auto digits = MustCompile("\\p{N}");
  auto gpt2 = MustCompile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)");
  std::vector<uint32_t> cps = Cps("ab12 c");
  EXPECT_EQ(SplitWithRegexes(cps, {digits.get()}), (std::vector<size_t>{2, 3, 4, 6}));
  EXPECT_EQ(SplitWithRegexes(cps, {digits.get(), gpt2.get()}), (std::vector<size_t>{2, 3, 4, 6}));
  EXPECT_EQ(SplitWithRegexes(cps, {}), (std::vector<size_t>{6}));
  EXPECT_TRUE(SplitWithRegexes({}, {gpt2.get()}).empty());
  // A single space followed by a non-space is not matched by gpt2 but stays a segment.
  cps = Cps("a\t!");
  EXPECT_EQ(SplitWithRegexes(cps, {gpt2.get()}), (std::vector<size_t>{1, 2, 3}));
}

TEST(RegexSplitTest, CompileErrors) {
  struct Case {
    const char* pattern;
    Code code;
  };
  const Case cases[] = {
      {"(?<=a)b", Code::kUnsupported},     {"(?<!a)b", Code::kUnsupported},
      {"(?<n>a)", Code::kUnsupported},      {"(?P<n>a)", Code::kUnsupported},
      {"(a)\\1", Code::kUnsupported},       {"a++", Code::kUnsupported},
      {"(?>a)", Code::kUnsupported},        {"(?i)abc", Code::kUnsupported},
      {"\\p{Lu}", Code::kUnsupported},      {"\\p{Han}+", Code::kUnsupported},
      {"\\k<a>", Code::kUnsupported},       {"[[:alpha:]]", Code::kUnsupported},
      {"a{1001}", Code::kUnsupported},      {"\\G", Code::kUnsupported},
      {"(abc", Code::kInvalidArgument},     {"abc)", Code::kInvalidArgument},
      {"[abc", Code::kInvalidArgument},     {"*a", Code::kInvalidArgument},
      {"a**", Code::kInvalidArgument},      {"a{3,2}", Code::kInvalidArgument},
      {"ab\\", Code::kInvalidArgument},     {"[z-a]", Code::kInvalidArgument},
      {"[a-\\s]", Code::kInvalidArgument},  {"|?", Code::kInvalidArgument},
      {"\xff", Code::kInvalidArgument},     {"\\x{110000}", Code::kInvalidArgument},
  };
  for (const Case& c : cases) {
    std::unique_ptr<SplitRegex> re;
    Status s = SplitRegex::Compile(c.pattern, &re);
    EXPECT_FALSE(s.ok()) << c.pattern;
    EXPECT_EQ(s.code(), c.code) << c.pattern << ": " << s.message();
    EXPECT_EQ(re, nullptr) << c.pattern;
    if (c.code == Code::kUnsupported) {
      EXPECT_NE(s.message().find("unsupported"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("at byte"), std::string::npos) << s.message();
    }
  }
  std::unique_ptr<SplitRegex> re;
  Status s = SplitRegex::Compile("ab(?<=x)", &re);
  EXPECT_NE(s.message().find("lookbehind at byte 2"), std::string::npos) << s.message();
}

// ---- vectors from scripts/gen_regex_vectors.py ----

// Decodes a payload: UTF-8 with %{HEX} escapes.
std::vector<uint32_t> Unescape(std::string_view s) {
  std::vector<uint32_t> raw = Cps(s), out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 1 < raw.size() && raw[i + 1] == '{') {
      size_t j = i + 2;
      uint32_t v = 0;
      while (j < raw.size() && raw[j] != '}') {
        uint32_t d = raw[j];
        v = v * 16 + (d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
        ++j;
      }
      out.push_back(v);
      i = j;
    } else {
      out.push_back(raw[i]);
    }
  }
  return out;
}

std::string ToUtf8(const std::vector<uint32_t>& cps) {
  std::string s;
  for (uint32_t c : cps) AppendUtf8(c, &s);
  return s;
}

TEST(RegexSplitTest, MatchesPythonRegexVectors) {
  std::ifstream in(std::string(ZF_TEST_DATA_DIR) + "/regex/split_vectors.txt");
  ASSERT_TRUE(in) << "missing tests/data/regex/split_vectors.txt";
  std::map<std::string, std::vector<std::unique_ptr<SplitRegex>>> lists;
  std::vector<std::string> order;
  std::string line, current;
  std::vector<uint32_t> text;
  size_t texts = 0, checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "list") {
      current = rest;
      order.push_back(rest);
      lists[rest];
    } else if (key == "re") {
      std::string pattern = ToUtf8(Unescape(rest));
      std::unique_ptr<SplitRegex> re;
      Status s = SplitRegex::Compile(pattern, &re);
      ASSERT_TRUE(s.ok()) << current << ": " << s.message();
      lists[current].push_back(std::move(re));
    } else if (key == "text") {
      text = Unescape(rest);
      ++texts;
    } else if (key == "split") {
      std::istringstream ss(rest);
      std::string name;
      ss >> name;
      std::vector<size_t> expected;
      size_t len, at = 0;
      while (ss >> len) expected.push_back(at += len);
      ASSERT_TRUE(lists.count(name)) << name;
      std::vector<const SplitRegex*> regexes;
      for (const auto& r : lists[name]) regexes.push_back(r.get());
      std::vector<size_t> got = SplitWithRegexes(text, regexes);
      if (got != expected) {
        // Show the first differing segment.
        size_t i = 0;
        while (i < got.size() && i < expected.size() && got[i] == expected[i]) ++i;
        size_t from = i == 0 ? 0 : got[i - 1];
        auto piece = [&](const std::vector<size_t>& b) {
          if (i >= b.size()) return std::string("<end>");
          return "'" + ToUtf8(std::vector<uint32_t>(text.begin() + from, text.begin() + b[i])) + "'";
        };
        ADD_FAILURE() << "list " << name << ", text #" << texts << " ('" << ToUtf8(text).substr(0, 80)
                      << "...'): segment " << i << " at " << from << ": got " << piece(got)
                      << ", want " << piece(expected);
      }
      ++checked;
    }
  }
  EXPECT_GE(order.size(), 8u);
  EXPECT_GE(texts, 50u);
  EXPECT_EQ(checked, texts * order.size());
}

// ---- long inputs: no recursion, no quadratic blow-up ----

TEST(RegexSplitTest, LongInputsAreFast) {
  const char* patterns[] = {
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
      "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      "\\s+$",
      "\\s?\\p{P}+",
      "(a|aa)*b",
  };
  const size_t n = 200000;
  std::vector<std::vector<uint32_t>> inputs;
  inputs.push_back(std::vector<uint32_t>(n, ' '));
  inputs.push_back(std::vector<uint32_t>(n, 'a'));
  inputs.push_back(std::vector<uint32_t>(n, '!'));
  inputs.push_back(std::vector<uint32_t>(n, '7'));
  std::vector<uint32_t> sp_x(n, ' ');
  sp_x.back() = 0x4E2D;  // spaces then a non-space: "\s+$" fails at every position
  inputs.push_back(sp_x);
  std::vector<uint32_t> mixed;
  while (mixed.size() < n) {
    for (uint32_t c : Cps("Hello,  world!! 12345\n\t café 中文 'll ")) mixed.push_back(c);
  }
  inputs.push_back(mixed);

  auto t0 = std::chrono::steady_clock::now();
  for (const char* p : patterns) {
    auto re = MustCompile(p);
    for (const auto& in : inputs) {
      std::vector<std::pair<size_t, size_t>> m;
      re->FindAll(in.data(), 0, in.size(), &m);
      for (size_t i = 0; i < m.size(); ++i) {
        ASSERT_LT(m[i].first, m[i].second);
        if (i) {
          ASSERT_LE(m[i - 1].second, m[i].first);
        }
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Bounds catastrophic (quadratic or backtracking) behaviour, not speed: that would take hours on
  // 200k-character inputs. Well under a second in Release; the aarch64 stage runs this under qemu
  // (12.7 s measured on a loaded 2-core machine), hence the wide margin.
  EXPECT_LT(secs, 120.0);

  // Spot checks of the results on the long inputs.
  auto gpt2 = MustCompile(patterns[0]);
  std::vector<uint32_t> sp_a(n, ' ');
  sp_a.back() = 'a';
  std::vector<std::pair<size_t, size_t>> m;
  gpt2->FindAll(sp_a.data(), 0, n, &m);
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, n - 2}, {n - 2, n}}));
  m.clear();
  gpt2->FindAll(inputs[1].data(), 0, n, &m);
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, n}}));
}

TEST(RegexSplitTest, ConcurrentFindAll) {
  auto re = MustCompile(
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
      "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  std::vector<uint32_t> text;
  while (text.size() < 20000) {
    for (uint32_t c : Cps("It's 2024: naïve café, 你好！  \n\n  x ")) text.push_back(c);
  }
  std::vector<std::pair<size_t, size_t>> want;
  re->FindAll(text.data(), 0, text.size(), &want);
  std::vector<std::vector<std::pair<size_t, size_t>>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        got[t].clear();
        re->FindAll(text.data(), 0, text.size(), &got[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

}  // namespace
}  // namespace zf::tok

// The Jinja engine's errors (message, line, column), its limits, and a bounded random test over
// template text and message contents: never a crash or a hang, always output or a clean Error.
// (Rendering itself is checked against jinja2 in jinja_corpus_test.cpp.)
#include <chrono>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "jinja/jinja.h"

namespace zf::jinja {
namespace {

struct Outcome {
  bool ok;
  std::string text;  // output, or "L:C: message"
};

Outcome Try(const std::string& src, const std::string& vars_json = "{}", Limits lim = Limits()) {
  try {
    Template t(src);
    return {true, t.Render(FromJson(vars_json), lim)};
  } catch (const Error& e) {
    return {false, std::to_string(e.line) + ":" + std::to_string(e.col) + ": " + e.what()};
  }
}

TEST(JinjaErrors, SyntaxErrorsHaveLineColumnAndMessage) {
  EXPECT_EQ(Try("{% if %}").text, "1:7: unexpected end of statement block");
  EXPECT_EQ(Try("ab\n{% for x in y %}a").text, "2:18: unexpected end of template, expected 'endfor'");
  EXPECT_EQ(Try("line1\n  {% frobnicate %}").text, "2:6: Encountered unknown tag 'frobnicate'.");
  EXPECT_EQ(Try("{{ 'abc }}").text, "1:4: unexpected end of string");
  EXPECT_EQ(Try("{{ 1 + }}").text, "1:8: unexpected end of print statement");
  EXPECT_EQ(Try("{% break %}").text, "1:4: 'break' outside of a loop");
  EXPECT_EQ(Try("{# open comment").text, "1:1: missing end of comment tag");
  EXPECT_EQ(Try("{{ a $ b }}").text, "1:6: unexpected char '$'");
}

TEST(JinjaErrors, UnknownFilterOrTestFailsAtParseUnlessInsideIf) {
  EXPECT_EQ(Try("x\n{{ 1 | nosuch }}").text, "2:8: No filter named 'nosuch'.");
  EXPECT_EQ(Try("{{ 1 is nosuch }}").text, "1:6: No test named 'nosuch'.");
  // jinja2 defers the error to run time inside if/ternary ("soft" frames).
  EXPECT_EQ(Try("{% if false %}{{ 1 | nosuch }}{% endif %}ok").text, "ok");
  EXPECT_EQ(Try("{% if true %}{{ 1 | nosuch }}{% endif %}").text, "1:21: No filter named 'nosuch'.");
}

TEST(JinjaErrors, RuntimeErrorsPointAtTheExpression) {
  EXPECT_EQ(Try("a\nb {{ raise_exception('Only user and assistant roles are supported!') }}").text,
            "2:6: Only user and assistant roles are supported!");
  EXPECT_EQ(Try("{{ nope.x }}").text, "1:4: 'nope' is undefined");
  EXPECT_EQ(Try("{{ 1 + 'a' }}").text, "1:6: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(Try("{{ 1 // 0 }}").text, "1:6: integer division or modulo by zero");
  EXPECT_EQ(Try("{% set l = [] %}{{ l.append(1) }}").text,
            "1:20: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(Try("{% for x in n %}{% endfor %}", R"({"n": null})").text, "1:4: 'NoneType' object is not iterable");
  EXPECT_EQ(Try("{{ [1] | select('odd') | length }}").text, "1:26: object of type 'generator' has no len()");
}

TEST(JinjaLimits, OutputSize) {
  Limits lim;
  lim.max_output_bytes = 1000;
  EXPECT_TRUE(Try("{% for i in range(100) %}123456789{% endfor %}", "{}", lim).ok);
  Outcome o = Try("{% for i in range(200) %}123456789{% endfor %}", "{}", lim);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.text.find("limit exceeded: output size (max_output_bytes 1000)"), std::string::npos) << o.text;
  // Doubling a string inside a namespace is caught before it allocates.
  o = Try("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: output size"), std::string::npos) << o.text;
  o = Try("{{ 'x' * 100000 }}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: output size"), std::string::npos) << o.text;
  // A count whose product with the length wraps around size_t is still caught.
  o = Try("{{ 'abcdefghijklmnop' * 1152921504606846976 }}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: output size"), std::string::npos) << o.text;
  // Printing a list of many references to one string.
  o = Try("{% set s = 'x' * 900 %}{{ [s, s, s, s] }}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: output size"), std::string::npos) << o.text;
  o = Try("{% set s = 'x' * 900 %}{{ '%s%s' | format(s, s) }}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: output size"), std::string::npos) << o.text;
}

TEST(JinjaLimits, ListLength) {
  for (const char* src : {"{{ ([1] * 100000000) | length }}", "{{ ('x' * 2000000) | list | length }}",
                          "{{ ('x,' * 2000000).split(',') | length }}",
                          "{% set ns = namespace(l=[0]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"}) {
    Outcome o = Try(src);
    EXPECT_NE(o.text.find("limit exceeded: list length (1048576)"), std::string::npos) << src << " -> " << o.text;
  }
}

// fuzz_chat_template's finding: an empty string or list times a huge count is empty at once (as
// in Python), where the engine looped the count through the repetition.
TEST(JinjaLimits, EmptySequenceTimesHugeCountIsEmptyAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Try("{{ (4 * messages * 27821982184) | length }}", R"({"messages": []})").text, "0");
  EXPECT_EQ(Try("{{ ('' * 99999999999) | length }}|{{ 99999999999 * [] }}|{{ [] * -5 }}").text, "0|[]|[]");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(Try("{{ ('ab' * 3) }}|{{ [1] * 2 }}|{{ 2 * 'x' }}").text, "ababab|[1, 1]|xx");
}

TEST(JinjaLimits, LoopIterations) {
  Limits lim;
  lim.max_steps = 5000;
  EXPECT_TRUE(Try("{% for i in range(4000) %}{% endfor %}", "{}", lim).ok);
  Outcome o = Try("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: loop iterations (max_steps 5000)"), std::string::npos) << o.text;
  // Copying large values counts too: 4000 iterations of a 1 MB concatenation would copy 4 GB.
  o = Try("{% set s = 'x' * 1000000 %}{% for i in range(4000) %}{% set t = s ~ s %}{% endfor %}", "{}", lim);
  EXPECT_NE(o.text.find("limit exceeded: loop iterations (max_steps 5000, copying counts one per 256 bytes)"),
            std::string::npos) << o.text;
  // The sandbox's range limit, as in jinja2.
  o = Try("{{ range(1000000) | length }}");
  EXPECT_NE(o.text.find("Range too big"), std::string::npos) << o.text;
}

TEST(JinjaLimits, RecursionDepthAndNesting) {
  Outcome o = Try("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.text.find("limit exceeded: recursion depth (max_depth 256)"), std::string::npos) << o.text;
  std::string deep(5000, '(');
  o = Try("{{ " + deep + "1" + std::string(5000, ')') + " }}");
  EXPECT_NE(o.text.find("nested too deeply"), std::string::npos) << o.text;
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  o = Try(ifs);
  EXPECT_NE(o.text.find("nested too deeply"), std::string::npos) << o.text;
  o = Try("{% set ns = namespace(l=[]) %}{% for i in range(2000) %}{% set ns.l = [ns.l] %}{% endfor %}");
  EXPECT_NE(o.text.find("limit exceeded: nesting depth"), std::string::npos) << o.text;
  EXPECT_THROW(FromJson(std::string(100000, '[')), Error);
}

TEST(JinjaLimits, StrftimeNowIsPinnable) {
  Limits lim;
  lim.now = 1736937000;  // 2025-01-15 10:30:00 UTC
  EXPECT_EQ(Try("{{ strftime_now('%d %B %Y %H:%M') }}", "{}", lim).text, "15 January 2025 10:30");
}

// Random templates built from real syntax fragments and random bytes, with random message
// contents: every one must finish quickly with output or an Error.
TEST(JinjaFuzz, RandomTemplatesNeverCrashOrHang) {
  static const char* kFrags[] = {
      "{% for m in messages %}", "{% endfor %}", "{% if m.role == 'user' %}", "{% elif x %}", "{% else %}",
      "{% endif %}", "{{ m.content }}", "{{ m['content'] | trim }}", "{{ messages | tojson(indent=2) }}",
      "{%- set ns = namespace(a=1) -%}", "{% set ns.a = ns.a * 2 %}", "{{ ns.a }}", "{% macro f(x) %}",
      "{% endmacro %}", "{{ f(1) }}", "{{ loop.index }}", "{% break %}", "{% continue %}", "{{ range(50) | list }}",
      "{{ 'ab' * 1000 }}", "{{ x[::-1] }}", "{{ x.split(',') }}", "{{ (", ")", "[", "]", "'", "\"", "|", "~",
      "{{ raise_exception('r') }}", "{% generation %}", "{% endgeneration %}", "{{ m.content is string }}",
      "{{ messages | selectattr('role', 'equalto', 'user') | list }}", "{{ tools | length }}", "\n", "  ",
      "{%", "%}", "{{", "}}", "{#", "#}", "-", "+", "not ", " and ", " or ", " in ", "none", "1.5e3",
      "{{ f(f(f(1))) }}", "{% call f() %}", "{% endcall %}", "{{ caller() }}", "{% for k, v in x.items() %}"};
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  Limits lim;
  lim.max_output_bytes = 1 << 20;
  lim.max_steps = 100000;
  int ok = 0, err = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 0; iter < 3000; ++iter) {
    std::string src;
    const size_t n = 1 + pick(24);
    for (size_t k = 0; k < n; ++k) {
      if (pick(8) == 0) {
        src += static_cast<char>(rng() & 0xff);  // arbitrary bytes, invalid UTF-8 included
      } else {
        src += kFrags[pick(sizeof kFrags / sizeof kFrags[0])];
      }
    }
    std::string content;
    for (size_t k = pick(40); k > 0; --k) content += static_cast<char>(32 + pick(95));
    std::string vars = R"({"messages": [{"role": "user", "content": )" + std::string("\"") +
                       (content.find('"') == std::string::npos && content.find('\\') == std::string::npos ? content : "x") +
                       R"("}, {"role": "assistant", "content": "ok"}], "x": "a,b,c", "tools": null})";
    Outcome o = Try(src, vars, lim);
    (o.ok ? ok : err)++;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(ok, 100);
  EXPECT_GT(err, 100);
  EXPECT_LT(secs, 60.0);
  std::printf("fuzz: 3000 random templates, %d rendered, %d errors, %.2f s\n", ok, err, secs);
}

}  // namespace
}  // namespace zf::jinja

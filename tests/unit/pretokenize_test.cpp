// Pre-tokenizer splits (hand-written splitters and the regex engine) against Python `regex`
// on the reference's patterns (tests/data/pretokenize/vectors.json, scripts/gen_pretokenize_vectors.py),
// and unknown pre-tokenizer names.
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <fstream>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "tokenizer/unicode.h"

namespace zf::tok {
namespace {

std::vector<std::string> Words(const PreTokenizer& p, const std::string& text) {
  std::vector<uint32_t> cps;
  std::vector<size_t> offs;
  DecodeUtf8(text, &cps, &offs);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t end : p.Split(cps)) {
    if (end > start) words.push_back(text.substr(offs[start], offs[end] - offs[start]));
    start = end;
  }
  return words;
}

TEST(PreTokenizer, MatchesPythonRegexOnReferencePatterns) {
  std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/pretokenize/vectors.json");
  ASSERT_TRUE(f.good());
  const nlohmann::json cases = nlohmann::json::parse(f);
  ASSERT_GT(cases.size(), 100u);
  std::map<std::string, std::unique_ptr<PreTokenizer>> pres;
  int failures = 0;
  for (const auto& c : cases) {
    const std::string pre = c["pre"];
    if (const char* only = std::getenv("ZF_PRE_ONLY"); only && pre.find(only) == std::string::npos) continue;
    if (!pres.count(pre)) {
      Status s = PreTokenizer::Create(pre, &pres[pre]);
      ASSERT_TRUE(s.ok()) << pre << ": " << s.message();
    }
    const std::string text = c["text"];
    const std::vector<std::string> expected = c["words"];
    std::vector<std::string> got = Words(*pres[pre], text);
    if (got != expected && ++failures <= 10) {
      ADD_FAILURE() << pre << " on '" << text << "': got " << nlohmann::json(got).dump()
                    << " expected " << nlohmann::json(expected).dump();
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(PreTokenizer, UnknownPreTokenizerIsUnsupported) {
  std::unique_ptr<PreTokenizer> p;
  Status s = PreTokenizer::Create("no-such-pre", &p);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("no-such-pre"), std::string::npos);
}

}  // namespace
}  // namespace zf::tok

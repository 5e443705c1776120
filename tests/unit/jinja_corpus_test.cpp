// The chat-template corpus against Python's jinja2: every template in
// tests/data/chat_templates/templates (llama.cpp's models/templates plus our GGUF files'
// templates) rendered with every conversation of conversations.json must be byte-identical to
// what scripts/reference/record_templates.py recorded with jinja2, and fail where jinja2
// raised. features.json does the same for one small template per language feature.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "jinja/jinja.h"

namespace {

namespace fs = std::filesystem;
using zf::jinja::Error;
using zf::jinja::Template;

const std::string kDir = std::string(ZF_TEST_DATA_DIR) + "/chat_templates";
constexpr int64_t kPinnedNow = 1736937000;  // 2025-01-15 10:30:00, as the recorder pins it

std::string ReadFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Renders `source` with `ctx` (a JSON object; tools/documents default to null as transformers
// passes them); returns false and the error on failure.
bool Render(const std::string& source, nlohmann::ordered_json ctx, std::string* out) {
  try {
    Template t(source);
    if (!ctx.contains("tools")) ctx["tools"] = nullptr;
    if (!ctx.contains("documents")) ctx["documents"] = nullptr;
    zf::jinja::Limits lim;
    lim.now = kPinnedNow;
    *out = t.Render(zf::jinja::FromJson(ctx.dump()), lim);
    return true;
  } catch (const Error& e) {
    *out = std::to_string(e.line) + ":" + std::to_string(e.col) + ": " + e.what();
    return false;
  }
}

TEST(JinjaCorpus, EveryTemplateAndConversationMatchesJinja2) {
  auto convs = nlohmann::ordered_json::parse(ReadFile(kDir + "/conversations.json"));
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(kDir + "/templates"))
    if (e.path().extension() == ".jinja") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 70u);
  int rendered = 0, errors = 0;
  for (auto& p : files) {
    const std::string stem = p.stem().string();
    auto expected = nlohmann::json::parse(ReadFile(kDir + "/expected/" + stem + ".json"));
    const std::string source = ReadFile(p.string());
    for (auto& c : convs) {
      const std::string name = c["name"];
      SCOPED_TRACE(stem + " / " + name);
      ASSERT_TRUE(expected.contains(name));
      const auto& want = expected[name];
      std::string got;
      const bool ok = Render(source, c["context"], &got);
      if (want.contains("error")) {
        EXPECT_FALSE(ok) << "jinja2 raised " << want["error"].get<std::string>() << " but zerfoo rendered:\n" << got;
        ++errors;
      } else {
        ASSERT_TRUE(ok) << got;
        EXPECT_EQ(got, want["output"].get<std::string>());
        ++rendered;
      }
    }
  }
  std::printf("corpus: %zu templates x %zu conversations: %d rendered identically, %d errors as in jinja2\n",
              files.size(), convs.size(), rendered, errors);
}

TEST(JinjaCorpus, LanguageFeaturesMatchJinja2) {
  auto feats = nlohmann::ordered_json::parse(ReadFile(kDir + "/features.json"));
  auto expected = nlohmann::json::parse(ReadFile(kDir + "/features_expected.json"));
  ASSERT_GE(feats.size(), 100u);
  for (auto& f : feats) {
    const std::string name = f["name"];
    SCOPED_TRACE(name + ": " + f["template"].get<std::string>());
    const auto& want = expected[name];
    std::string got;
    const bool ok = Render(f["template"], f["context"], &got);
    if (want.contains("error")) {
      EXPECT_FALSE(ok) << "jinja2 raised " << want["error"].get<std::string>() << " but zerfoo rendered: " << got;
    } else {
      ASSERT_TRUE(ok) << got;
      EXPECT_EQ(got, want["output"].get<std::string>());
    }
  }
}

}  // namespace

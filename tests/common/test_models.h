// Locating the real test models (fetched by scripts/fetch_models.sh) from tests.
#pragma once

#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace zf::testing {

// Path of a real model ("gemma3" or "smollm2"): $ZF_MODEL_<NAME> if set, else the fetch
// script's cache ($ZERFOO_MODELS or ~/.cache/zerfoo/models). "" when the file is absent.
// $ZF_TEST_ONLY_MODELS (comma-separated names) skips the others: the sanitizer stage runs the
// real-model tests on SmolLM2 only (the release run covers both; Gemma's 262k vocabulary makes
// every step several times slower under ASan).
inline std::string ModelPath(const std::string& name) {
  if (const char* only = std::getenv("ZF_TEST_ONLY_MODELS")) {
    const std::string list = std::string(",") + only + ",";
    if (list.find("," + name + ",") == std::string::npos) return std::string();
  }
  std::string env_name = "ZF_MODEL_" + name;
  for (char& c : env_name) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (const char* p = std::getenv(env_name.c_str())) return p;
  std::string dir;
  if (const char* d = std::getenv("ZERFOO_MODELS")) {
    dir = d;
  } else if (const char* h = std::getenv("HOME")) {
    dir = std::string(h) + "/.cache/zerfoo/models";
  }
  const std::string file = name == "gemma3" ? "gemma-3-270m-q4_k_m.gguf" : "smollm2-135m-instruct-q4_1.gguf";
  const std::string path = dir + "/" + file;
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : std::string();
}

}  // namespace zf::testing

// Skips the test with a visible reason when the model is not present.
#define ZF_REQUIRE_MODEL(var, name)                                                              \
  const std::string var = ::zf::testing::ModelPath(name);                                        \
  if (var.empty()) GTEST_SKIP() << "model '" << name << "' not found: run scripts/fetch_models.sh"

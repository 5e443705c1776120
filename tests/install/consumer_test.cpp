// An installed-package consumer's own tests, in doctest (header-only: a consumer needs no
// GoogleTest): the model path comes from ZF_CONSUMER_MODEL (tests/install/run.sh sets it).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <zerfoo.h>

namespace {

zf_model* Load() {
  const char* path = std::getenv("ZF_CONSUMER_MODEL");
  REQUIRE(path != nullptr);
  zf_model* m = nullptr;
  REQUIRE(zf_model_load(path, nullptr, &m) == ZF_OK);
  return m;
}

int32_t Append(void* ud, const char* piece, size_t len, int32_t) {
  static_cast<std::string*>(ud)->append(piece, len);
  return 0;
}

}  // namespace

TEST_CASE("tokenize and detokenize round-trip through the installed library") {
  zf_model* m = Load();
  const std::string text = "The capital of France is Paris.";
  size_t n = 0;
  CHECK(zf_tokenize(m, text.data(), text.size(), 0, nullptr, 0, &n) == ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<int32_t> ids(n);
  REQUIRE(zf_tokenize(m, text.data(), text.size(), 0, ids.data(), ids.size(), &n) == ZF_OK);
  std::string out(text.size() + 16, '\0');
  size_t needed = 0;
  REQUIRE(zf_detokenize(m, ids.data(), n, 0, &out[0], out.size(), &needed) == ZF_OK);
  out.resize(needed - 1);
  CHECK(out == text);
  zf_model_free(m);
}

TEST_CASE("a session outlives zf_model_free and greedy output is reproducible") {
  zf_model* m = Load();
  zf_session* a = nullptr;
  zf_session* b = nullptr;
  REQUIRE(zf_session_create(m, nullptr, &a) == ZF_OK);
  REQUIRE(zf_session_create(m, nullptr, &b) == ZF_OK);
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = 8;
  g.temperature = 0.0f;
  std::string first, second;
  REQUIRE(zf_generate(a, "Hello", 5, &g, Append, &first, nullptr) == ZF_OK);
  zf_model_free(m);  // b keeps the model alive
  REQUIRE(zf_generate(b, "Hello", 5, &g, Append, &second, nullptr) == ZF_OK);
  CHECK(!first.empty());
  CHECK(first == second);
  zf_session_free(a);
  zf_session_free(b);
}

// RAII owners of the C API's handles and the model/session/params helpers the C API tests share.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace zf::capitest {

struct ModelDeleter {
  void operator()(zf_model* m) const { zf_model_free(m); }
};
struct SessionDeleter {
  void operator()(zf_session* s) const { zf_session_free(s); }
};
struct GenerationDeleter {
  void operator()(zf_generation* g) const { zf_generation_free(g); }
};
using ModelPtr = std::unique_ptr<zf_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<zf_session, SessionDeleter>;
using GenerationPtr = std::unique_ptr<zf_generation, GenerationDeleter>;

// Sets an environment switch (common/switches.h) for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_.c_str(), old_.c_str(), 1) : unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Loads `path` with the given flags and max_batch (a failure is a test failure and a null
// pointer).
inline ModelPtr Load(const std::string& path, uint32_t flags = 0, int32_t max_batch = 0) {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.flags = flags;
  p.max_batch = max_batch;
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(path.c_str(), &p, &m), ZF_OK) << zf_last_error();
  return ModelPtr(m);
}

// A session with context n_ctx (and n_threads workers; 0 = the model's default).
inline SessionPtr NewSession(zf_model* m, int32_t n_ctx = 512, int32_t n_threads = 0) {
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  p.n_ctx = n_ctx;
  p.n_threads = n_threads;
  zf_session* s = nullptr;
  EXPECT_EQ(zf_session_create(m, &p, &s), ZF_OK) << zf_last_error();
  return SessionPtr(s);
}

// Greedy sampling (temperature 0) for at most max_tokens tokens.
inline zf_generate_params Greedy(int32_t max_tokens) {
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.temperature = 0.0f;
  g.max_tokens = max_tokens;
  return g;
}

// The text of a greedy zf_generate of at most n tokens (flags: ZF_GENERATE_*; r: the result, when
// the caller checks it); a failure is a test failure.
inline std::string GreedyText(zf_session* s, const std::string& prompt, int32_t n, uint32_t flags = 0,
                              zf_generate_result* r = nullptr) {
  zf_generate_params g = Greedy(n);
  g.flags = flags;
  std::string text;
  const zf_stream_cb append = [](void* ud, const char* piece, size_t len, int32_t) -> int32_t {
    static_cast<std::string*>(ud)->append(piece, len);
    return 0;
  };
  EXPECT_EQ(zf_generate(s, prompt.data(), prompt.size(), &g, append, &text, r), ZF_OK) << zf_last_error();
  return text;
}

// What a zf_stream_cb received: the pieces and their tokens (CollectPieces appends to it).
struct Pushed {
  std::vector<std::string> pieces;
  std::vector<int32_t> tokens;
};
inline int32_t CollectPieces(void* ud, const char* piece, size_t len, int32_t token) {
  Pushed* c = static_cast<Pushed*>(ud);
  c->pieces.emplace_back(piece, len);
  c->tokens.push_back(token);
  return 0;
}

// The ids of `text` (zf_tokenize with `flags`); a failure is recorded, not thrown.
inline std::vector<int32_t> Tokenize(const zf_model* m, const std::string& text, uint32_t flags = ZF_TOKENIZE_ADD_SPECIAL) {
  std::vector<int32_t> ids(text.size() + 16);
  size_t n = 0;
  EXPECT_EQ(zf_tokenize(m, text.data(), text.size(), flags, ids.data(), ids.size(), &n), ZF_OK) << zf_last_error();
  ids.resize(n);
  return ids;
}

}  // namespace zf::capitest

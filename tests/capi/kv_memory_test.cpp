// A session's KV cache costs memory for the positions it holds, not for its n_ctx: sixteen
// serve-like sessions with an 8k context each reserve ~3 GiB of KV address space on SmolLM2 but
// commit only the rows their conversations fill, and give them back on reset / truncation.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ZF_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZF_UNDER_SANITIZER 1
#endif
#endif

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

// Resident memory of this process in bytes (VmRSS); 0 when unknown.
size_t ResidentBytes() {
  size_t kb = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, "VmRSS:", 6) == 0) kb = size_t(std::strtoull(line + 6, nullptr, 10));
    }
    std::fclose(f);
  }
  return kb * 1024;
}

std::vector<int32_t> Tokens(size_t n, int32_t seed) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 100 + int32_t((i * 31 + size_t(seed) * 7) % 5000);
  return t;
}

size_t StateSize(zf_session* s) {
  size_t n = 0;
  EXPECT_EQ(zf_session_state_size(s, &n), ZF_OK) << zf_last_error();
  return n;
}

TEST(SessionMemory, KvPagesFollowTheConversation) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  if (ResidentBytes() == 0) GTEST_SKIP() << "/proc/self/status is not readable here";
#ifdef ZF_UNDER_SANITIZER
  GTEST_SKIP() << "resident memory is the sanitizer's allocator's here (shadow, quarantine)";
#endif
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.prefix_cache_mib = -1;  // only the sessions' own caches are measured
  zf_model* raw = nullptr;
  ASSERT_EQ(zf_model_load(path.c_str(), &mp, &raw), ZF_OK) << zf_last_error();
  ModelPtr m(raw);

  // KV bytes per position, from the state's growth (4 more bytes per token of history).
  size_t per_pos = 0;
  {
    SessionPtr probe = NewSession(m.get(), 512);
    const std::vector<int32_t> t = Tokens(128, 0);
    ASSERT_EQ(zf_session_eval(probe.get(), t.data(), 64, nullptr, 0), ZF_OK) << zf_last_error();
    const size_t at64 = StateSize(probe.get());
    ASSERT_EQ(zf_session_eval(probe.get(), t.data() + 64, 64, nullptr, 0), ZF_OK) << zf_last_error();
    per_pos = (StateSize(probe.get()) - at64) / 64;
  }
  ASSERT_GT(per_pos, 1000u);

  constexpr int kSessions = 16;
  constexpr int32_t kCtx = 8192;
  constexpr size_t kFill = 192;
  const size_t reserved = size_t(kSessions) * size_t(kCtx) * per_pos;  // ~3 GiB on SmolLM2
  const size_t before = ResidentBytes();
  std::vector<SessionPtr> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(NewSession(m.get(), kCtx));
  const size_t created = ResidentBytes();
  EXPECT_LT(created - before, reserved / 8)
      << "creating " << kSessions << " sessions of n_ctx " << kCtx << " committed their KV caches";
  // Nor their activation scratch (~10 MiB each for 512-row steps): pages committed on first use.
  EXPECT_LT(created - before, size_t(kSessions) << 21) << "creating sessions committed their activation scratch";

  for (int i = 0; i < kSessions; ++i) {
    const std::vector<int32_t> t = Tokens(kFill, i);
    ASSERT_EQ(zf_session_eval(sessions[size_t(i)].get(), t.data(), t.size(), nullptr, 0), ZF_OK) << zf_last_error();
  }
  const size_t filled = ResidentBytes();
  const size_t rows = size_t(kSessions) * kFill * per_pos;
  EXPECT_GT(filled - created, rows / 2) << "the filled rows are not resident?";
  EXPECT_LT(filled - created, rows * 2 + (size_t(64) << 20)) << "filling " << kFill << " positions committed far more";

  std::printf("[ kv memory ] %d sessions of n_ctx %d (%zu MiB of KV reserved): +%zu MiB created, +%zu MiB after %zu "
              "tokens each\n",
              kSessions, kCtx, reserved >> 20, (created - before) >> 20, (filled - created) >> 20, kFill);
  // Truncating most of each conversation, then resetting, hands the rows back.
  for (SessionPtr& s : sessions) ASSERT_EQ(zf_session_truncate(s.get(), 32), ZF_OK) << zf_last_error();
  const size_t truncated = ResidentBytes();
  EXPECT_LT(truncated, filled - rows / 2) << "truncation kept the forgotten rows resident";
  for (SessionPtr& s : sessions) ASSERT_EQ(zf_session_reset(s.get()), ZF_OK) << zf_last_error();
  const size_t reset = ResidentBytes();
  std::printf("[ kv memory ] after truncation to 32: +%zu MiB, after reset: +%zu MiB (over the created sessions)\n",
              truncated > created ? (truncated - created) >> 20 : 0, reset > created ? (reset - created) >> 20 : 0);
  // (The activation scratch's pages that the 192-token prefills touched stay: they are the
  // sessions' working memory, committed on first use; the KV rows go.)
  EXPECT_GT(filled - reset, rows * 3 / 4) << "reset sessions still hold their rows";

  // A reset session computes as a fresh one does (the released pages are rewritten before use).
  const std::vector<int32_t> t = Tokens(200, 3);
  std::vector<float> a(49152), b(49152);
  size_t nv = 0;
  {
    zf_model_summary s;
    s.struct_size = sizeof s;
    ASSERT_EQ(zf_model_info(m.get(), &s), ZF_OK);
    nv = size_t(s.n_vocab);
    a.resize(nv);
    b.resize(nv);
  }
  ASSERT_EQ(zf_session_eval(sessions[0].get(), t.data(), t.size(), a.data(), nv), ZF_OK) << zf_last_error();
  SessionPtr fresh = NewSession(m.get(), kCtx);
  ASSERT_EQ(zf_session_eval(fresh.get(), t.data(), t.size(), b.data(), nv), ZF_OK) << zf_last_error();
  EXPECT_EQ(std::memcmp(a.data(), b.data(), nv * sizeof(float)), 0);
}

}  // namespace

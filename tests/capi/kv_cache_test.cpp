// Quantized KV caches through the C API (zf_session_params.kv_type / kv_type_v): a Q8_0 / Q4_0
// session generates text close to the F16 one, session state carries both types (round trip bit
// for bit; a state restored into a session of other types is refused naming them), and bad types
// are refused naming the field. SmolLM2 (head size 64).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

zf_status Create(zf_model* m, int32_t k, int32_t v, SessionPtr* out, int32_t n_ctx = 512) {
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  p.n_ctx = n_ctx;
  p.kv_type = k;
  p.kv_type_v = v;
  zf_session* s = nullptr;
  const zf_status st = zf_session_create(m, &p, &s);
  out->reset(s);
  return st;
}

std::string Greedy(zf_session* s, const std::string& prompt, int32_t n) {
  zf_generate_result r;
  r.struct_size = sizeof r;
  const std::string text = GreedyText(s, prompt, n, 0, &r);
  EXPECT_EQ(r.n_generated, n);
  return text;
}

size_t Vocab(zf_model* m) {
  zf_model_summary s;
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return size_t(s.n_vocab);
}

const char kPrompt[] = "The capital of France is";

TEST(KvCacheTypes, QuantizedSessionsGenerate) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  SessionPtr f16;
  ASSERT_EQ(Create(m.get(), ZF_KV_F16, ZF_KV_SAME, &f16), ZF_OK) << zf_last_error();
  const std::string want = Greedy(f16.get(), kPrompt, 16);
  const int32_t types[][2] = {{ZF_KV_Q8_0, ZF_KV_SAME}, {ZF_KV_Q4_0, ZF_KV_SAME}, {ZF_KV_Q8_0, ZF_KV_F16},
                              {ZF_KV_F16, ZF_KV_Q4_0}};
  for (const auto& t : types) {
    SCOPED_TRACE("K " + std::to_string(t[0]) + " V " + std::to_string(t[1]));
    SessionPtr s;
    ASSERT_EQ(Create(m.get(), t[0], t[1], &s), ZF_OK) << zf_last_error();
    const std::string got = Greedy(s.get(), kPrompt, 16);
    // The answer survives every type (measured: all say " Paris." and some part ways after the
    // sentence); Q8_0 for both keeps F16's 16 tokens.
    EXPECT_EQ(got.substr(0, 7), " Paris.") << "F16: '" << want << "' here: '" << got << "'";
    if (t[0] == ZF_KV_Q8_0 && t[1] == ZF_KV_SAME) EXPECT_EQ(got, want);
  }
}

// Saved and restored into a session of the same types: continuing gives the same logits bit for
// bit as the session that never stopped.
TEST(KvCacheTypes, StateRoundTripKeepsBothTypes) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  std::vector<int32_t> toks(70), more = {900, 901, 902};
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = 300 + int32_t(i * 37 % 5000);
  SessionPtr a, b;
  ASSERT_EQ(Create(m.get(), ZF_KV_Q4_0, ZF_KV_Q8_0, &a), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(a.get(), toks.data(), toks.size(), nullptr, 0), ZF_OK) << zf_last_error();
  size_t size = 0, written = 0;
  ASSERT_EQ(zf_session_state_size(a.get(), &size), ZF_OK);
  std::vector<uint8_t> state(size);
  ASSERT_EQ(zf_session_state_save(a.get(), state.data(), state.size(), &written), ZF_OK) << zf_last_error();
  // 30 layers x 70 positions x (K: 6 Q4_0 blocks + V: 6 Q8_0 blocks) of KV bytes, plus the header.
  EXPECT_GE(written, size_t(30) * 70 * (6 * 18 + 6 * 34));
  EXPECT_LT(written, size_t(30) * 70 * (6 * 18 + 6 * 34) + 70 * 4 + 64);
  ASSERT_EQ(Create(m.get(), ZF_KV_Q4_0, ZF_KV_Q8_0, &b), ZF_OK);
  ASSERT_EQ(zf_session_state_load(b.get(), state.data(), written), ZF_OK) << zf_last_error();
  std::vector<float> la(nv), lb(nv);
  ASSERT_EQ(zf_session_eval(a.get(), more.data(), more.size(), la.data(), nv), ZF_OK);
  ASSERT_EQ(zf_session_eval(b.get(), more.data(), more.size(), lb.data(), nv), ZF_OK);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), nv * sizeof(float)), 0);

  // Into sessions of other types: refused, naming both.
  const int32_t others[][2] = {{ZF_KV_F16, ZF_KV_SAME}, {ZF_KV_Q4_0, ZF_KV_SAME}, {ZF_KV_Q8_0, ZF_KV_Q4_0}};
  for (const auto& t : others) {
    SessionPtr c;
    ASSERT_EQ(Create(m.get(), t[0], t[1], &c), ZF_OK);
    EXPECT_EQ(zf_session_state_load(c.get(), state.data(), written), ZF_ERR_INVALID_ARGUMENT);
    const std::string err = zf_last_error();
    EXPECT_NE(err.find("K q4_0 / V q8_0"), std::string::npos) << err;
    int32_t n_past = -1;
    ASSERT_EQ(zf_session_n_past(c.get(), &n_past), ZF_OK);
    EXPECT_EQ(n_past, 0) << "a refused state leaves the session empty";
  }
}

TEST(KvCacheTypes, BadTypesAreRefusedNamingTheField) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  SessionPtr s;
  EXPECT_EQ(Create(m.get(), 4, ZF_KV_SAME, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("params->kv_type:"), std::string::npos) << zf_last_error();
  EXPECT_EQ(Create(m.get(), -1, ZF_KV_SAME, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Create(m.get(), ZF_KV_F16, 9, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("params->kv_type_v"), std::string::npos) << zf_last_error();
  EXPECT_EQ(s, nullptr);
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  EXPECT_EQ(p.kv_type_v, ZF_KV_SAME);
  p.reserved1 = 1;
  zf_session* raw = nullptr;
  EXPECT_EQ(zf_session_create(m.get(), &p, &raw), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("reserved1"), std::string::npos) << zf_last_error();
  // A caller compiled before kv_type_v (24-byte params) gets V = K.
  p.reserved1 = 0;
  p.struct_size = 24;
  p.kv_type = ZF_KV_Q8_0;
  p.kv_type_v = 12345;  // past the caller's struct: not read
  ASSERT_EQ(zf_session_create(m.get(), &p, &raw), ZF_OK) << zf_last_error();
  zf_session_free(raw);
}

}  // namespace

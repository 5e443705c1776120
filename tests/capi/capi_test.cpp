// Tests of the public C API through libzerfoo.so: argument checks, error codes and messages,
// buffers, params structs, and generation behaviour on the real models.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers

std::string LastError() { return zf_last_error(); }

struct Collected {
  std::string text;
  std::vector<std::string> pieces;
  int32_t stop_after = -1;  // return nonzero after this many pieces
};

int32_t Collect(void* ud, const char* piece, size_t len, int32_t) {
  Collected* c = static_cast<Collected*>(ud);
  c->pieces.emplace_back(piece, len);
  c->text.append(piece, len);
  return (c->stop_after >= 0 && int32_t(c->pieces.size()) >= c->stop_after) ? 1 : 0;
}

std::string Generate(zf_session* s, const std::string& prompt, const zf_generate_params& g,
                     zf_generate_result* res = nullptr) {
  Collected c;
  zf_generate_result r;
  r.struct_size = sizeof r;
  EXPECT_EQ(zf_generate(s, prompt.data(), prompt.size(), &g, Collect, &c, &r), ZF_OK) << LastError();
  if (res) *res = r;
  return c.text;
}

TEST(CapiBasics, VersionAndStatusStrings) {
  EXPECT_EQ(zf_version(), uint32_t(ZF_VERSION));
  EXPECT_STREQ(zf_version_string(), "0.7.0");
  EXPECT_STREQ(zf_status_string(ZF_OK), "ZF_OK");
  EXPECT_STREQ(zf_status_string(ZF_ERR_FORMAT), "ZF_ERR_FORMAT");
  EXPECT_STREQ(zf_status_string(12345), "ZF_ERR_UNKNOWN");
}

TEST(CapiBasics, NullHandlesAreRejectedNotCrashes) {
  zf_model* m = reinterpret_cast<zf_model*>(0x1);
  EXPECT_EQ(zf_model_load(nullptr, nullptr, &m), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(LastError().find("path"), std::string::npos);
  EXPECT_EQ(zf_model_load("x.gguf", nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  size_t n = 0;
  EXPECT_EQ(zf_tokenize(nullptr, "a", 1, 0, nullptr, 0, &n), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_create(nullptr, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_generate(nullptr, "a", 1, nullptr, nullptr, nullptr, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_cancel(nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_reset(nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_eval(nullptr, nullptr, 0, nullptr, 0), ZF_ERR_INVALID_ARGUMENT);
  zf_model_summary info;
  info.struct_size = sizeof info;
  EXPECT_EQ(zf_model_info(nullptr, &info), ZF_ERR_INVALID_ARGUMENT);
  zf_model_free(nullptr);
  zf_session_free(nullptr);
}

TEST(CapiBasics, MissingFileIsIoErrorNamingThePath) {
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load("/nonexistent/dir/model.gguf", nullptr, &m), ZF_ERR_IO);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(LastError().find("/nonexistent/dir/model.gguf"), std::string::npos) << LastError();
}

TEST(CapiBasics, NonGgufFileIsFormatError) {
  const std::string path = ::testing::TempDir() + "/not_a_model.gguf";
  {
    std::ofstream f(path, std::ios::binary);
    f << "this is not a gguf file at all, just text";
  }
  zf_model* m = nullptr;
  EXPECT_EQ(zf_model_load(path.c_str(), nullptr, &m), ZF_ERR_FORMAT);
  EXPECT_EQ(m, nullptr);
  EXPECT_FALSE(LastError().empty());
  std::remove(path.c_str());
}

TEST(CapiBasics, ParamsInitHonoursOlderSmallerStructs) {
  zf_generate_params g;
  std::memset(&g, 0xAB, sizeof g);
  ASSERT_EQ(zf_generate_params_init(&g, 8), ZF_OK);  // a caller that only knows 2 fields
  EXPECT_EQ(g.struct_size, 8u);
  EXPECT_EQ(g.max_tokens, 256);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(&g)[8], 0xAB);  // untouched beyond size
  EXPECT_EQ(zf_generate_params_init(nullptr, sizeof g), ZF_ERR_INVALID_ARGUMENT);
  zf_model_params mp;
  ASSERT_EQ(zf_model_params_init(&mp, sizeof mp), ZF_OK);
  EXPECT_EQ(mp.device, ZF_DEVICE_AUTO);
  EXPECT_EQ(zf_set_log_level(99), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_backend_available(ZF_DEVICE_CPU), ZF_OK);
  EXPECT_EQ(zf_backend_available(77), ZF_ERR_INVALID_ARGUMENT);
}

class CapiModel : public ::testing::TestWithParam<const char*> {};

TEST_P(CapiModel, InfoMetaAndBuffers) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  zf_model_summary info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_model_info(m.get(), &info), ZF_OK);
  EXPECT_EQ(info.backend, ZF_DEVICE_CPU);
  EXPECT_GT(info.n_vocab, 1000);
  EXPECT_GT(info.n_params, 100000000u);
  size_t needed = 0;
  EXPECT_EQ(zf_model_meta(m.get(), "general.architecture", nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<char> buf(needed);
  ASSERT_EQ(zf_model_meta(m.get(), "general.architecture", buf.data(), buf.size(), &needed), ZF_OK);
  EXPECT_STREQ(buf.data(), info.architecture);
  EXPECT_EQ(zf_model_meta(m.get(), "no.such.key", buf.data(), buf.size(), &needed), ZF_ERR_NOT_FOUND);
  EXPECT_NE(LastError().find("no.such.key"), std::string::npos);
}

TEST_P(CapiModel, TokenizeRoundTripAndErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  const std::string text = "Hello world! Ünïcödé 123 and emoji 🦙.";
  size_t n = 0;
  EXPECT_EQ(zf_tokenize(m.get(), text.data(), text.size(), 0, nullptr, 0, &n), ZF_ERR_BUFFER_TOO_SMALL);
  ASSERT_GT(n, 5u);
  std::vector<int32_t> ids(n);
  ASSERT_EQ(zf_tokenize(m.get(), text.data(), text.size(), 0, ids.data(), ids.size(), &n), ZF_OK);
  size_t needed = 0;
  EXPECT_EQ(zf_detokenize(m.get(), ids.data(), ids.size(), 0, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<char> out(needed);
  ASSERT_EQ(zf_detokenize(m.get(), ids.data(), ids.size(), 0, out.data(), out.size(), &needed), ZF_OK);
  EXPECT_EQ(std::string(out.data()), text);
  const char bad[] = "ok \xC3\x28 bad";
  EXPECT_EQ(zf_tokenize(m.get(), bad, sizeof bad - 1, 0, ids.data(), ids.size(), &n), ZF_ERR_INVALID_UTF8);
  int32_t bad_id = 1 << 30;
  EXPECT_EQ(zf_detokenize(m.get(), &bad_id, 1, 0, out.data(), out.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_token_to_piece(m.get(), -1, 0, out.data(), out.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  // A vocab-only model cannot run sessions.
  zf_session* s = nullptr;
  EXPECT_EQ(zf_session_create(m.get(), nullptr, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("VOCAB_ONLY"), std::string::npos);
}

TEST_P(CapiModel, GreedyIsDeterministicAndStreamsWholeUtf8) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s1 = NewSession(m.get());
  SessionPtr s2 = NewSession(m.get());
  const zf_generate_params g = Greedy(24);
  zf_generate_result r;
  const std::string a = Generate(s1.get(), "The capital of France is", g, &r);
  const std::string b = Generate(s2.get(), "The capital of France is", g);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.empty());
  EXPECT_GT(r.n_prompt, 3);
  EXPECT_LE(r.n_generated, 24);
  EXPECT_TRUE(r.stop_reason == ZF_STOP_MAX_TOKENS || r.stop_reason == ZF_STOP_EOS);
  // The same result through zf_session_eval's logits (argmax per step).
  SessionPtr s3 = NewSession(m.get());
  const std::string prompt = "The capital of France is";
  std::vector<int32_t> ids(64);
  size_t n = 0;
  ASSERT_EQ(zf_tokenize(m.get(), prompt.data(), prompt.size(), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL,
                        ids.data(), ids.size(), &n), ZF_OK);
  zf_model_summary info;
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_model_info(m.get(), &info), ZF_OK);
  std::vector<float> logits(size_t(info.n_vocab));
  ASSERT_EQ(zf_session_eval(s3.get(), ids.data(), n, logits.data(), logits.size()), ZF_OK) << LastError();
  std::string text;
  for (int i = 0; i < r.n_generated; ++i) {
    const int32_t tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    char piece[256];
    size_t len = 0;
    ASSERT_EQ(zf_token_to_piece(m.get(), tok, 0, piece, sizeof piece, &len), ZF_OK);
    text.append(piece, len);
    ASSERT_EQ(zf_session_eval(s3.get(), &tok, 1, logits.data(), logits.size()), ZF_OK);
  }
  EXPECT_EQ(text, a);
  // A generation that ran out of tokens leaves its last shown token unevaluated; the next eval
  // evaluates it first, so s1 (generated) and s3 (fed the same tokens) see the same context.
  if (r.stop_reason != ZF_STOP_MAX_TOKENS) return;
  const int32_t next = 13;
  std::vector<float> after_generate(logits.size());
  ASSERT_EQ(zf_session_eval(s1.get(), &next, 1, after_generate.data(), after_generate.size()), ZF_OK);
  ASSERT_EQ(zf_session_eval(s3.get(), &next, 1, logits.data(), logits.size()), ZF_OK);
  int32_t past1 = 0, past3 = 0;
  ASSERT_EQ(zf_session_n_past(s1.get(), &past1), ZF_OK);
  ASSERT_EQ(zf_session_n_past(s3.get(), &past3), ZF_OK);
  EXPECT_EQ(past1, past3);
  EXPECT_EQ(std::max_element(after_generate.begin(), after_generate.end()) - after_generate.begin(),
            std::max_element(logits.begin(), logits.end()) - logits.begin());
  float diff = 0.0f;
  for (size_t i = 0; i < logits.size(); ++i) diff = std::max(diff, std::fabs(after_generate[i] - logits[i]));
  EXPECT_LT(diff, 1.25f) << "two tokens in one call vs one at a time (doc/accuracy.md)";
}

TEST_P(CapiModel, SeededSamplingIsReproducible) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  zf_generate_params g;
  zf_generate_params_init(&g, sizeof g);
  g.max_tokens = 20;
  g.temperature = 1.0f;
  g.seed = 1234;
  SessionPtr s1 = NewSession(m.get());
  SessionPtr s2 = NewSession(m.get());
  EXPECT_EQ(Generate(s1.get(), "Once upon a time", g), Generate(s2.get(), "Once upon a time", g));
}

TEST_P(CapiModel, CallbackStopAndStopStrings) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get());
  const zf_generate_params g = Greedy(40);
  const std::string full = Generate(s.get(), "Count: 1, 2, 3, 4,", g);
  ASSERT_GT(full.size(), 4u);

  // Callback asks to stop after 2 pieces.
  zf_session_reset(s.get());
  Collected c;
  c.stop_after = 2;
  zf_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(zf_generate(s.get(), "Count: 1, 2, 3, 4,", 18, &g, Collect, &c, &r), ZF_OK);
  EXPECT_EQ(r.stop_reason, ZF_STOP_CALLBACK);
  EXPECT_EQ(c.pieces.size(), 2u);

  // A stop string taken from the middle of the greedy text is never emitted.
  const std::string stop = full.substr(full.size() / 2, 2);
  zf_session_reset(s.get());
  zf_generate_params gs = g;
  const char* stops[] = {stop.c_str()};
  gs.stop = stops;
  gs.n_stop = 1;
  const std::string cut = Generate(s.get(), "Count: 1, 2, 3, 4,", gs, &r);
  EXPECT_EQ(r.stop_reason, ZF_STOP_STRING);
  EXPECT_EQ(cut, full.substr(0, full.find(stop)));
}

TEST_P(CapiModel, ContextLimitsAreCleanErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 16);
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "word ";
  zf_generate_params g = Greedy(8);
  Collected c;
  EXPECT_EQ(zf_generate(s.get(), long_prompt.data(), long_prompt.size(), &g, Collect, &c, nullptr),
            ZF_ERR_CONTEXT_FULL);
  EXPECT_NE(LastError().find("does not fit"), std::string::npos);
  int32_t n_past = -1;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 0);  // nothing evaluated
  // Filling up during decode stops cleanly.
  g.max_tokens = 100;
  g.flags = ZF_GENERATE_IGNORE_EOS;
  zf_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(zf_generate(s.get(), "Hi", 2, &g, Collect, &c, &r), ZF_OK) << LastError();
  EXPECT_EQ(r.stop_reason, ZF_STOP_CONTEXT_FULL);
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 16);
  const char bad[] = "\xFF\xFE";
  zf_session_reset(s.get());
  EXPECT_EQ(zf_generate(s.get(), bad, 2, &g, Collect, &c, nullptr), ZF_ERR_INVALID_UTF8);
}

TEST_P(CapiModel, ConversationContinuesAcrossCalls) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get());
  const zf_generate_params g = Greedy(6);
  const std::string first = Generate(s.get(), "The sky is", g);
  int32_t after_first = 0;
  zf_session_n_past(s.get(), &after_first);
  const std::string second = Generate(s.get(), "", g);  // empty prompt: keep going
  int32_t after_second = 0;
  zf_session_n_past(s.get(), &after_second);
  EXPECT_GT(after_second, after_first);
  // Same as one uninterrupted generation of 12 tokens.
  SessionPtr t = NewSession(m.get());
  EXPECT_EQ(Generate(t.get(), "The sky is", Greedy(12)), first + second);
}

TEST_P(CapiModel, CancelFromAnotherThread) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  SessionPtr s = NewSession(m.get(), 1024);
  zf_generate_params g = Greedy(-1);
  g.flags = ZF_GENERATE_IGNORE_EOS;
  struct Ctx {
    zf_session* s;
    std::atomic<int> pieces{0};
  } ctx{s.get()};
  std::thread canceller;
  auto cb = [](void* ud, const char*, size_t, int32_t) -> int32_t {
    static_cast<Ctx*>(ud)->pieces++;
    return 0;
  };
  canceller = std::thread([&] {
    while (ctx.pieces.load() < 3) std::this_thread::yield();
    zf_session_cancel(ctx.s);
  });
  zf_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(zf_generate(s.get(), "Tell me a story", 15, &g, cb, &ctx, &r), ZF_OK);
  canceller.join();
  EXPECT_EQ(r.stop_reason, ZF_STOP_CANCELLED);
  EXPECT_LT(r.n_generated, 200);
}

TEST_P(CapiModel, SessionsShareOneModelAcrossThreads) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path);
  const zf_generate_params g = Greedy(8);
  std::vector<std::string> out(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < out.size(); ++i) {
    threads.emplace_back([&, i] {
      zf_session_params p;
      zf_session_params_init(&p, sizeof p);
      p.n_ctx = 128;
      p.n_threads = 1;
      zf_session* s = nullptr;
      if (zf_session_create(m.get(), &p, &s) != ZF_OK) return;
      Collected c;
      zf_generate(s, "Paris is", 8, &g, Collect, &c, nullptr);
      out[i] = c.text;
      zf_session_free(s);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 1; i < out.size(); ++i) EXPECT_EQ(out[i], out[0]);
  EXPECT_FALSE(out[0].empty());
}

std::string ChatV2(zf_model* m, const std::vector<zf_chat_message_v2>& msgs, const zf_chat_params* p, zf_status* st) {
  size_t needed = 0;
  *st = zf_chat_apply_template_v2(m, msgs.data(), msgs.size(), p, nullptr, 0, &needed);
  if (*st != ZF_ERR_BUFFER_TOO_SMALL) return "";
  std::vector<char> buf(needed);
  *st = zf_chat_apply_template_v2(m, msgs.data(), msgs.size(), p, buf.data(), buf.size(), &needed);
  return *st == ZF_OK ? std::string(buf.data(), needed - 1) : "";
}

zf_chat_message_v2 Msg(const char* role, const char* content) {
  zf_chat_message_v2 x;
  std::memset(&x, 0, sizeof x);
  x.struct_size = sizeof x;
  x.role = role;
  x.content = content;
  return x;
}

TEST_P(CapiModel, ChatTemplateV2FieldsOptionsAndErrors) {
  ZF_REQUIRE_MODEL(path, GetParam());
  ModelPtr m = Load(path, ZF_MODEL_VOCAB_ONLY);
  ASSERT_TRUE(m);
  zf_chat_params p;
  ASSERT_EQ(zf_chat_params_init(&p, sizeof p), ZF_OK);
  EXPECT_EQ(p.struct_size, sizeof p);
  // Every message field, tools, documents, extra variables, the pinned clock.
  std::vector<zf_chat_message_v2> msgs = {Msg("system", "S"), Msg("user", "Wie geht's? \xc3\xa9"), Msg("assistant", nullptr),
                                          Msg("tool", "{\"t\": 21}")};
  msgs[2].reasoning_content = "think";
  msgs[2].tool_calls_json = R"([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"city": "Paris"}}}])";
  msgs[3].tool_call_id = "c1";
  msgs[3].name = "f";
  msgs[3].extra_json = R"({"custom": [1, 2]})";
  p.template_text =
      "{{ bos_token }}|{% for m in messages %}{{ m.role }}={{ m.content }}"
      "{% if m.reasoning_content is defined %} r={{ m.reasoning_content }}{% endif %}"
      "{% if m.tool_calls is defined %} c={{ m.tool_calls[0].function.arguments | tojson }}{% endif %}"
      "{% if m.tool_call_id is defined %} id={{ m.tool_call_id }} n={{ m.name }} x={{ m.custom }}{% endif %};{% endfor %}"
      "{{ tools | map(attribute='name') | join(',') }}|{{ documents }}|{{ enable_thinking }}|"
      "{{ strftime_now('%Y-%m-%d %H:%M') }}|{{ add_generation_prompt }}";
  p.tools_json = R"([{"name": "f"}, {"name": "g"}])";
  p.extra_json = R"({"enable_thinking": false})";
  p.flags = ZF_CHAT_ADD_ASSISTANT | ZF_CHAT_FIXED_TIME;
  p.time_unix = 1736937000;
  zf_status st;
  std::string out = ChatV2(m.get(), msgs, &p, &st);
  ASSERT_EQ(st, ZF_OK) << LastError();
  zf_model_summary info;
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_model_info(m.get(), &info), ZF_OK);
  char bos[64] = {0};
  size_t n = 0;
  ASSERT_EQ(zf_token_to_piece(m.get(), info.token_bos, ZF_DETOKENIZE_RENDER_SPECIAL, bos, sizeof bos, &n), ZF_OK);
  EXPECT_EQ(out, std::string(bos, n) +
                     "|system=S;user=Wie geht's? \xc3\xa9;assistant=None r=think c={\"city\": \"Paris\"};"
                     "tool={\"t\": 21} id=c1 n=f x=[1, 2];f,g|None|False|2025-01-15 10:30|True");

  // Errors: the template's own (line, column), bad arguments naming the field.
  p.template_text = "ok\n  {{ raise_exception('roles must alternate') }}";
  out = ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_TEMPLATE);
  EXPECT_EQ(LastError(), "chat template line 2, column 6: roles must alternate");
  p.template_text = "{{ x | nosuchfilter }}";
  ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_TEMPLATE);
  EXPECT_NE(LastError().find("No filter named 'nosuchfilter'"), std::string::npos) << LastError();
  p.template_text = "{{ messages | length }}";
  p.tools_json = "[1, 2";
  ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("params->tools_json"), std::string::npos) << LastError();
  p.tools_json = nullptr;
  p.extra_json = "[]";
  ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("params->extra_json: expected a JSON object"), std::string::npos) << LastError();
  p.extra_json = nullptr;
  p.flags = 0x80;
  ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("params->flags"), std::string::npos) << LastError();
  p.flags = 0;
  std::vector<zf_chat_message_v2> bad = msgs;
  bad[1].role = "\xff";
  ChatV2(m.get(), bad, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("msgs[1].role: invalid UTF-8"), std::string::npos) << LastError();
  bad = msgs;
  bad[2].reserved = 1;
  ChatV2(m.get(), bad, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("msgs[2].reserved"), std::string::npos) << LastError();
  bad = msgs;
  bad[3].struct_size = 8;
  ChatV2(m.get(), bad, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("msgs[3].struct_size"), std::string::npos) << LastError();
  bad = msgs;
  bad[2].tool_calls_json = "{\"not\": \"a list\"}";
  ChatV2(m.get(), bad, &p, &st);
  EXPECT_EQ(st, ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("msgs[2].tool_calls_json: expected a JSON array"), std::string::npos) << LastError();
  p.template_text = nullptr;
  p.template_name = "no_such_name";
  ChatV2(m.get(), msgs, &p, &st);
  EXPECT_EQ(st, ZF_ERR_NOT_FOUND);
  EXPECT_NE(LastError().find("tokenizer.chat_template.no_such_name"), std::string::npos) << LastError();
  // NULL params: the model's template, no generation prompt; v1 gives the same text.
  std::vector<zf_chat_message_v2> two = {Msg("user", "Hi"), Msg("assistant", "Hello")};
  std::string v2 = ChatV2(m.get(), two, nullptr, &st);
  ASSERT_EQ(st, ZF_OK) << LastError();
  zf_chat_message v1msgs[2] = {{"user", "Hi"}, {"assistant", "Hello"}};
  std::vector<char> buf(4096);
  size_t needed = 0;
  ASSERT_EQ(zf_chat_apply_template(m.get(), v1msgs, 2, 0, buf.data(), buf.size(), &needed), ZF_OK) << LastError();
  EXPECT_EQ(std::string(buf.data(), needed - 1), v2);
  EXPECT_EQ(zf_chat_apply_template(m.get(), v1msgs, 2, 0x4, buf.data(), buf.size(), &needed), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(zf_status_string(ZF_ERR_TEMPLATE), "ZF_ERR_TEMPLATE");
}

INSTANTIATE_TEST_SUITE_P(RealModels, CapiModel, ::testing::Values("gemma3", "smollm2"));

}  // namespace

// Speech to text through the C ABI (zf_speech_*, zf_transcribe, zf_wav_decode; issue #47):
// tiny.en on jfk.wav gives whisper.cpp 1.8.5's greedy segments (text and timestamps, from
// tests/data/golden/whisper/tiny.en-jfk.json), the callback sees them in order as the result
// holds them, concurrent calls give their single results, and every bad input is a status with
// a message naming the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "zerfoo.h"

namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// As tests/speech: ZF_MODEL_WHISPER_TINY_EN, else the cache scripts/fetch_models.sh fills (the
// ctest fixture speech.model fetches it).
std::string TinyEnPath() {
  if (const char* p = std::getenv("ZF_MODEL_WHISPER_TINY_EN")) return p;
  std::string dir;
  if (const char* d = std::getenv("ZERFOO_MODELS")) dir = d;
  else if (const char* h = std::getenv("HOME")) dir = std::string(h) + "/.cache/zerfoo/models";
  return dir + "/ggml-tiny.en.bin";
}

std::string Err() { return zf_last_error(); }

std::vector<float> Pcm(const std::string& wav) {
  size_t n = 0;
  EXPECT_EQ(zf_wav_decode(wav.data(), wav.size(), nullptr, 0, &n), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<float> pcm(n);
  EXPECT_EQ(zf_wav_decode(wav.data(), wav.size(), pcm.data(), pcm.size(), &n), ZF_OK) << Err();
  EXPECT_EQ(n, pcm.size());
  return pcm;
}

struct Seen {
  std::string text;
  int64_t t0 = 0, t1 = 0;
  size_t n_tokens = 0;
};

class CapiSpeech : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = TinyEnPath();
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path << " is missing: scripts/fetch_models.sh whisper-tiny-en";
    ASSERT_EQ(zf_speech_load(path.c_str(), 0, &model_), ZF_OK) << Err();
    golden_ = nlohmann::json::parse(ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/tiny.en-jfk.json"));
    pcm_ = Pcm(ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/jfk.wav"));
  }
  static void TearDownTestSuite() {
    zf_speech_free(model_);
    model_ = nullptr;
  }
  static zf_transcribe_params Params() {
    zf_transcribe_params p;
    EXPECT_EQ(zf_transcribe_params_init(&p, sizeof p), ZF_OK);
    p.n_threads = 2;
    return p;
  }
  static zf_speech_model* model_;
  static nlohmann::json golden_;
  static std::vector<float> pcm_;
};
zf_speech_model* CapiSpeech::model_ = nullptr;
nlohmann::json CapiSpeech::golden_;
std::vector<float> CapiSpeech::pcm_;

TEST_F(CapiSpeech, InfoOfTinyEn) {
  zf_speech_summary s;
  s.struct_size = sizeof s;
  ASSERT_EQ(zf_speech_info(model_, &s), ZF_OK) << Err();
  EXPECT_EQ(s.n_vocab, 51864);
  EXPECT_EQ(s.n_mels, 80);
  EXPECT_EQ(s.n_audio_layer, 4);
  EXPECT_EQ(s.n_text_layer, 4);
  EXPECT_EQ(s.n_audio_state, 384);
  EXPECT_EQ(s.multilingual, 0);
  EXPECT_EQ(pcm_.size(), golden_["n_samples"].get<size_t>());
}

TEST_F(CapiSpeech, GoldenSegmentsThroughCallbackAndResult) {
  std::vector<Seen> seen;
  auto cb = [](void* ud, const zf_speech_segment* s) -> int32_t {
    EXPECT_EQ(s->struct_size, sizeof(zf_speech_segment));
    EXPECT_EQ(std::strlen(s->text), s->text_len);
    static_cast<std::vector<Seen>*>(ud)->push_back({std::string(s->text, s->text_len), s->t0_ms, s->t1_ms, s->n_tokens});
    return 0;
  };
  const zf_transcribe_params p = Params();
  zf_transcription* r = nullptr;
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), &p, cb, &seen, &r), ZF_OK) << Err();
  const nlohmann::json& g = golden_["greedy"]["segments"];
  ASSERT_EQ(zf_transcription_n_segments(r), g.size());
  ASSERT_EQ(seen.size(), g.size());
  std::string full;
  for (size_t i = 0; i < g.size(); ++i) {
    zf_speech_segment s;
    s.struct_size = sizeof s;
    ASSERT_EQ(zf_transcription_segment(r, i, &s), ZF_OK) << Err();
    std::printf("  [%lld ms -> %lld ms] %s\n", (long long)s.t0_ms, (long long)s.t1_ms, s.text);
    EXPECT_EQ(std::string(s.text, s.text_len), g[i]["text"].get<std::string>()) << i;
    EXPECT_EQ(s.t0_ms, g[i]["t0"].get<int64_t>() * 10) << i;  // the golden's unit is 10 ms
    EXPECT_EQ(s.t1_ms, g[i]["t1"].get<int64_t>() * 10) << i;
    // The callback saw the same segment, in the same place.
    EXPECT_EQ(seen[i].text, std::string(s.text, s.text_len));
    EXPECT_EQ(seen[i].t0, s.t0_ms);
    EXPECT_EQ(seen[i].t1, s.t1_ms);
    EXPECT_EQ(seen[i].n_tokens, s.n_tokens);
    std::vector<int32_t> ids;
    for (size_t k = 0; k < s.n_tokens; ++k) {
      ids.push_back(s.tokens[k].id);
      EXPECT_GT(s.tokens[k].p, 0.0f);
      EXPECT_LE(s.tokens[k].p, 1.0f);
      EXPECT_NEAR(std::log(s.tokens[k].p), s.tokens[k].plog, 1e-3);
    }
    EXPECT_EQ(ids, g[i]["tokens"].get<std::vector<int32_t>>()) << i;
    EXPECT_GE(s.no_speech_prob, 0.0f);
    EXPECT_LE(s.no_speech_prob, 1.0f);
    full += std::string(s.text, s.text_len);
  }
  size_t needed = 0;
  EXPECT_EQ(zf_transcription_text(r, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL);
  std::string text(needed, '\0');
  ASSERT_EQ(zf_transcription_text(r, text.data(), text.size(), &needed), ZF_OK);
  text.resize(needed - 1);
  EXPECT_EQ(text, full);
  char lang[8];
  ASSERT_EQ(zf_transcription_language(r, lang, sizeof lang, nullptr), ZF_OK);
  EXPECT_STREQ(lang, "en");
  // Token text: the first text token of the first segment, and "" for a timestamp.
  zf_speech_segment s0;
  s0.struct_size = sizeof s0;
  ASSERT_EQ(zf_transcription_segment(r, 0, &s0), ZF_OK);
  char piece[64];
  std::string pieces;
  for (size_t k = 0; k < s0.n_tokens; ++k) {
    ASSERT_EQ(zf_speech_token_text(model_, s0.tokens[k].id, piece, sizeof piece, nullptr), ZF_OK) << Err();
    pieces += piece;
  }
  EXPECT_EQ(pieces, std::string(s0.text, s0.text_len));
  zf_transcription_free(r);
}

TEST_F(CapiSpeech, CallbackStopKeepsSegmentsSoFar) {
  int calls = 0;
  auto cb = [](void* ud, const zf_speech_segment*) -> int32_t { return ++*static_cast<int*>(ud) >= 1 ? 1 : 0; };
  const zf_transcribe_params p = Params();
  zf_transcription* r = nullptr;
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), &p, cb, &calls, &r), ZF_OK) << Err();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(zf_transcription_n_segments(r), 1u);
  zf_transcription_free(r);
}

TEST_F(CapiSpeech, OlderSmallerSegmentStructIsFilledOnlyThatFar) {
  zf_transcription* r = nullptr;
  const zf_transcribe_params p = Params();
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size() / 4, &p, nullptr, nullptr, &r), ZF_OK) << Err();
  ASSERT_GE(zf_transcription_n_segments(r), 1u);
  zf_speech_segment s;
  std::memset(&s, 0xab, sizeof s);
  s.struct_size = offsetof(zf_speech_segment, text);
  ASSERT_EQ(zf_transcription_segment(r, 0, &s), ZF_OK) << Err();
  EXPECT_EQ(s.struct_size, offsetof(zf_speech_segment, text));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.text), uintptr_t(0xababababababababull));  // untouched
  EXPECT_EQ(zf_transcription_segment(r, 99, &s), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("segment 99 is out of range"), std::string::npos) << Err();
  zf_transcription_free(r);
}

TEST_F(CapiSpeech, BadParamsNamed) {
  struct Case {
    const char* name;
    void (*edit)(zf_transcribe_params*);
    zf_status want;
    const char* message;
  };
  const Case cases[] = {
      {"unknown flag", [](zf_transcribe_params* p) { p->flags = 0x80; }, ZF_ERR_INVALID_ARGUMENT, "params->flags"},
      {"reserved", [](zf_transcribe_params* p) { p->reserved = 1; }, ZF_ERR_INVALID_ARGUMENT, "params->reserved"},
      {"threads", [](zf_transcribe_params* p) { p->n_threads = -1; }, ZF_ERR_INVALID_ARGUMENT, "params->n_threads"},
      {"size", [](zf_transcribe_params* p) { p->struct_size = 2; }, ZF_ERR_INVALID_ARGUMENT, "struct_size"},
      {"language", [](zf_transcribe_params* p) { p->language = "xx"; }, ZF_ERR_INVALID_ARGUMENT, "language 'xx'"},
      {"language .en", [](zf_transcribe_params* p) { p->language = "de"; }, ZF_ERR_INVALID_ARGUMENT, "English-only"},
      {"translate .en", [](zf_transcribe_params* p) { p->flags = ZF_TRANSCRIBE_TRANSLATE; }, ZF_ERR_INVALID_ARGUMENT,
       "translate"},
      {"temperature", [](zf_transcribe_params* p) { p->temperature = 1.5f; }, ZF_ERR_INVALID_ARGUMENT, "params->temperature "},
      {"temperature_inc", [](zf_transcribe_params* p) { p->temperature_inc = -0.2f; }, ZF_ERR_INVALID_ARGUMENT,
       "params->temperature_inc"},
      {"beam_size", [](zf_transcribe_params* p) { p->beam_size = 9; }, ZF_ERR_INVALID_ARGUMENT, "params->beam_size"},
      {"best_of", [](zf_transcribe_params* p) { p->best_of = 0; }, ZF_ERR_INVALID_ARGUMENT, "params->best_of"},
      {"entropy_thold", [](zf_transcribe_params* p) { p->entropy_thold = NAN; }, ZF_ERR_INVALID_ARGUMENT,
       "params->entropy_thold"},
      {"logprob_thold", [](zf_transcribe_params* p) { p->logprob_thold = -INFINITY; }, ZF_ERR_INVALID_ARGUMENT,
       "params->logprob_thold"},
      {"n_max_text_ctx", [](zf_transcribe_params* p) { p->n_max_text_ctx = -1; }, ZF_ERR_INVALID_ARGUMENT,
       "params->n_max_text_ctx"},
  };
  for (const Case& c : cases) {
    zf_transcribe_params p = Params();
    c.edit(&p);
    zf_transcription* r = reinterpret_cast<zf_transcription*>(&p);  // must come back NULL
    EXPECT_EQ(zf_transcribe(model_, pcm_.data(), 16000, &p, nullptr, nullptr, &r), c.want) << c.name;
    EXPECT_EQ(r, nullptr) << c.name;
    EXPECT_NE(Err().find(c.message), std::string::npos) << c.name << ": " << Err();
  }
  // "" and NULL language mean "en"; an empty prompt is no prompt; beam_size 0 is greedy.
  zf_transcribe_params p = Params();
  p.language = "";
  p.initial_prompt = "";
  p.beam_size = 0;
  EXPECT_EQ(zf_transcribe(model_, pcm_.data(), 16000, &p, nullptr, nullptr, nullptr), ZF_OK) << Err();
}

// Defaults are whisper_full_default_params(GREEDY)'s; a caller built against the 32-byte struct
// (before the decoding fields) gets them too.
TEST_F(CapiSpeech, DecodingDefaultsAsWhisperCpp) {
  zf_transcribe_params p;
  ASSERT_EQ(zf_transcribe_params_init(&p, sizeof p), ZF_OK);
  EXPECT_EQ(p.temperature, 0.0f);
  EXPECT_FLOAT_EQ(p.temperature_inc, 0.2f);
  EXPECT_EQ(p.beam_size, 1);
  EXPECT_EQ(p.best_of, 5);
  EXPECT_EQ(p.length_penalty, -1.0f);
  EXPECT_FLOAT_EQ(p.entropy_thold, 2.4f);
  EXPECT_EQ(p.logprob_thold, -1.0f);
  EXPECT_FLOAT_EQ(p.no_speech_thold, 0.6f);
  EXPECT_EQ(p.seed, 0u);
  EXPECT_EQ(p.n_max_text_ctx, 16384);
  std::vector<unsigned char> old(sizeof(zf_transcribe_params), 0xff);  // junk past the old size
  zf_transcribe_params* o = reinterpret_cast<zf_transcribe_params*>(old.data());
  ASSERT_EQ(zf_transcribe_params_init(o, 32), ZF_OK);
  o->n_threads = 2;
  zf_transcription* r = nullptr;
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), o, nullptr, nullptr, &r), ZF_OK) << Err();
  ASSERT_EQ(zf_transcription_n_segments(r), golden_["greedy"]["segments"].size());
  zf_transcription_free(r);
}

// The decoding fields reach the core: initial_prompt, beam search and word timestamps give
// whisper.cpp's results (tests/data/golden/whisper/tiny.en-jfk-decoding.json).
TEST_F(CapiSpeech, PromptBeamAndWordTimestampsAsWhisperCpp) {
  const nlohmann::json g = nlohmann::json::parse(ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/tiny.en-jfk-decoding.json"));
  auto run = [&](const zf_transcribe_params& p, const nlohmann::json& want, bool times) {
    zf_transcription* r = nullptr;
    ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), &p, nullptr, nullptr, &r), ZF_OK) << Err();
    ASSERT_EQ(zf_transcription_n_segments(r), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      zf_speech_segment s;
      s.struct_size = sizeof s;
      ASSERT_EQ(zf_transcription_segment(r, i, &s), ZF_OK) << Err();
      std::printf("  [%lld ms -> %lld ms] %s (temperature %.1f)\n", (long long)s.t0_ms, (long long)s.t1_ms, s.text, s.temperature);
      EXPECT_EQ(std::string(s.text, s.text_len), want[i]["text"].get<std::string>()) << i;
      EXPECT_EQ(s.t0_ms, want[i]["t0"].get<int64_t>() * 10) << i;
      EXPECT_EQ(s.t1_ms, want[i]["t1"].get<int64_t>() * 10) << i;
      EXPECT_LT(s.avg_logprob, 0.0f);
      if (!times) {
        EXPECT_EQ(s.token_times, nullptr);
        EXPECT_EQ(s.words, nullptr);
        EXPECT_EQ(s.n_words, 0u);
        continue;
      }
      ASSERT_NE(s.token_times, nullptr);
      ASSERT_EQ(s.n_tokens, want[i]["token_data"].size());
      for (size_t k = 0; k < s.n_tokens; ++k) {
        EXPECT_EQ(s.token_times[k].t0_ms, want[i]["token_data"][k][5].get<int64_t>() * 10) << i << "/" << k;
        EXPECT_EQ(s.token_times[k].t1_ms, want[i]["token_data"][k][6].get<int64_t>() * 10) << i << "/" << k;
      }
      ASSERT_GT(s.n_words, 0u);
      std::string joined;
      for (size_t k = 0; k < s.n_words; ++k) {
        EXPECT_EQ(std::strlen(s.words[k].text), s.words[k].text_len);
        EXPECT_EQ(s.words[k].text[0], ' ');
        EXPECT_LE(s.words[k].t0_ms, s.words[k].t1_ms);
        EXPECT_GT(s.words[k].p, 0.0f);
        joined += s.words[k].text;
      }
      EXPECT_EQ(joined, std::string(s.text, s.text_len));
    }
    zf_transcription_free(r);
  };
  zf_transcribe_params p = Params();
  const std::string prompt = g["prompt"].get<std::string>();
  p.initial_prompt = prompt.c_str();
  run(p, g["greedy_prompt"]["segments"], false);
  p = Params();
  p.beam_size = 5;
  run(p, g["beam5"]["segments"], false);
  p = Params();
  p.flags = ZF_TRANSCRIBE_WORD_TIMESTAMPS;
  run(p, g["greedy_token_timestamps"]["segments"], true);
  // Words through the callback too (its pointers live for the call).
  p.flags = ZF_TRANSCRIBE_WORD_TIMESTAMPS;
  std::vector<std::string> words;
  auto cb = [](void* ud, const zf_speech_segment* s) -> int32_t {
    for (size_t k = 0; k < s->n_words; ++k) static_cast<std::vector<std::string>*>(ud)->push_back(s->words[k].text);
    return 0;
  };
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), &p, cb, &words, nullptr), ZF_OK) << Err();
  ASSERT_GE(words.size(), 3u);
  EXPECT_EQ(words[0], " And");
  EXPECT_EQ(words[2], " my");
  float lp = -1;
  zf_transcription* r = nullptr;
  ASSERT_EQ(zf_transcribe(model_, pcm_.data(), 16000, nullptr, nullptr, nullptr, &r), ZF_OK) << Err();
  ASSERT_EQ(zf_transcription_language_prob(r, &lp), ZF_OK);
  EXPECT_EQ(lp, 0.0f);  // the language was given ("en"), not detected
  EXPECT_EQ(zf_transcription_language_prob(r, nullptr), ZF_ERR_INVALID_ARGUMENT);
  zf_transcription_free(r);
}

// Sampling with a seed gives the same transcript each time (temperature 1, no fallback).
TEST_F(CapiSpeech, SeededSamplingReproducible) {
  zf_transcribe_params p = Params();
  p.temperature = 1.0f;
  p.temperature_inc = 0;
  p.seed = 42;
  std::string texts[2];
  for (std::string& t : texts) {
    zf_transcription* r = nullptr;
    ASSERT_EQ(zf_transcribe(model_, pcm_.data(), pcm_.size(), &p, nullptr, nullptr, &r), ZF_OK) << Err();
    size_t needed = 0;
    zf_transcription_text(r, nullptr, 0, &needed);
    t.assign(needed, '\0');
    ASSERT_EQ(zf_transcription_text(r, t.data(), t.size(), &needed), ZF_OK);
    zf_transcription_free(r);
  }
  EXPECT_FALSE(texts[0].empty());
  EXPECT_EQ(texts[0], texts[1]);
}

// Every segment's times, text, token ids and probabilities, as one comparable string.
std::string Dump(const zf_transcription* r) {
  std::string out;
  for (size_t i = 0; i < zf_transcription_n_segments(r); ++i) {
    zf_speech_segment s;
    s.struct_size = sizeof s;
    if (zf_transcription_segment(r, i, &s) != ZF_OK) return "error: " + Err();
    char buf[64];
    std::snprintf(buf, sizeof buf, "[%lld %lld]", (long long)s.t0_ms, (long long)s.t1_ms);
    out += buf + std::string(s.text, s.text_len);
    for (size_t k = 0; k < s.n_tokens; ++k) {
      std::snprintf(buf, sizeof buf, " %d:%a", s.tokens[k].id, double(s.tokens[k].plog));
      out += buf;
    }
    out += "\n";
  }
  return out;
}

// Calls on one model from several threads at once (their decoder steps joined in shared
// passes) give exactly what each gives alone: greedy and beam 5 (tests/speech adds windows
// with prompts; kept short here for the sanitizer builds).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ZF_SPEECH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZF_SPEECH_SANITIZED 1
#endif
#endif

// Under the sanitizers (ThreadSanitizer runs it for the decoder passes the calls share) two calls
// on the first 3 s: each whole transcription is an encoder pass that runs ~10x slower there.
TEST_F(CapiSpeech, ConcurrentCallsGiveTheirSingleResults) {
  zf_transcribe_params greedy = Params(), beam = Params();
  greedy.n_threads = beam.n_threads = 1;
  beam.beam_size = 5;
  struct Call {
    const std::vector<float>* pcm;
    zf_transcribe_params p;
    std::string alone, together;
  };
#ifdef ZF_SPEECH_SANITIZED
  const std::vector<float> head(pcm_.begin(), pcm_.begin() + 3 * 16000);
  beam.beam_size = 2;
  std::vector<Call> calls = {{&head, greedy, "", ""}, {&head, beam, "", ""}};
#else
  std::vector<Call> calls = {{&pcm_, greedy, "", ""}, {&pcm_, beam, "", ""}, {&pcm_, greedy, "", ""}};
#endif
  auto run = [](const Call& c, std::string* out) {
    zf_transcription* r = nullptr;
    if (zf_transcribe(model_, c.pcm->data(), c.pcm->size(), &c.p, nullptr, nullptr, &r) != ZF_OK) {
      *out = "error: " + Err();
      return;
    }
    *out = Dump(r);
    zf_transcription_free(r);
  };
  for (Call& c : calls) run(c, &c.alone);
  std::vector<std::thread> threads;
  for (Call& c : calls) threads.emplace_back(run, std::cref(c), &c.together);
  for (std::thread& t : threads) t.join();
  for (const Call& c : calls) {
    EXPECT_FALSE(c.alone.empty());
    EXPECT_EQ(c.alone.rfind("error", 0), std::string::npos) << c.alone;
    EXPECT_EQ(c.together, c.alone);
  }
}

TEST_F(CapiSpeech, EmptyAndNullInputs) {
  zf_transcription* r = nullptr;
  EXPECT_EQ(zf_transcribe(model_, pcm_.data(), 0, nullptr, nullptr, nullptr, &r), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("pcm is empty"), std::string::npos) << Err();
  EXPECT_EQ(zf_transcribe(model_, nullptr, 10, nullptr, nullptr, nullptr, &r), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("pcm is NULL"), std::string::npos) << Err();
  EXPECT_EQ(zf_transcribe(nullptr, pcm_.data(), 10, nullptr, nullptr, nullptr, &r), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("model is NULL"), std::string::npos) << Err();
  EXPECT_EQ(zf_transcription_n_segments(nullptr), 0u);
  EXPECT_EQ(zf_transcription_text(nullptr, nullptr, 0, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_speech_token_text(model_, 51864, nullptr, 0, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("token id 51864"), std::string::npos) << Err();
  zf_transcription_free(nullptr);
  zf_speech_free(nullptr);
}

TEST(CapiSpeechLoad, NotAWhisperFileNamed) {
  zf_speech_model* m = reinterpret_cast<zf_speech_model*>(&m);
  EXPECT_EQ(zf_speech_load("/nonexistent/ggml-tiny.bin", 0, &m), ZF_ERR_IO);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(Err().find("/nonexistent/ggml-tiny.bin"), std::string::npos) << Err();

  const std::string junk = ::testing::TempDir() + "/not_whisper.bin";
  std::ofstream(junk, std::ios::binary) << "this is not a model file at all, just text";
  EXPECT_EQ(zf_speech_load(junk.c_str(), 0, &m), ZF_ERR_FORMAT);
  EXPECT_NE(Err().find("magic"), std::string::npos) << Err();

  const std::string gguf = ::testing::TempDir() + "/model.gguf";
  {
    std::ofstream f(gguf, std::ios::binary);
    const char hdr[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    f.write(hdr, sizeof hdr);
  }
  EXPECT_EQ(zf_speech_load(gguf.c_str(), 0, &m), ZF_ERR_FORMAT);
  EXPECT_NE(Err().find("a GGUF file"), std::string::npos) << Err();

  EXPECT_EQ(zf_speech_load(junk.c_str(), 1, &m), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Err().find("flags"), std::string::npos) << Err();
  EXPECT_EQ(zf_speech_load(nullptr, 0, &m), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_speech_load(junk.c_str(), 0, nullptr), ZF_ERR_INVALID_ARGUMENT);
}

TEST(CapiSpeechWav, BadBytesAndSmallBuffers) {
  size_t n = 7;
  const char text[] = "definitely not RIFF";
  EXPECT_EQ(zf_wav_decode(text, sizeof text, nullptr, 0, &n), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(n, 0u);
  EXPECT_NE(Err().find("not a WAV file"), std::string::npos) << Err();
  EXPECT_EQ(zf_wav_decode(nullptr, 10, nullptr, 0, &n), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_wav_decode(text, sizeof text, nullptr, 0, nullptr), ZF_ERR_INVALID_ARGUMENT);
  const std::string wav = ReadAll(std::string(ZF_TEST_DATA_DIR) + "/golden/whisper/jfk.wav");
  std::vector<float> small(100);
  EXPECT_EQ(zf_wav_decode(wav.data(), wav.size(), small.data(), small.size(), &n), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 176000u);
}

}  // namespace

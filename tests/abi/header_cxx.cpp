// The public header compiles as C++11 with every warning (as for bindgen and other C++
// consumers; no C++ type crosses it), and the basic contract holds from a consumer's view.
// doctest (header-only, Debian's doctest-dev): a consumer-side test needs no GoogleTest.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "zerfoo.h"

static_assert(std::is_trivial<zf_generate_params>::value, "ABI structs are plain C");
static_assert(std::is_trivial<zf_model_summary>::value, "ABI structs are plain C");
static_assert(std::is_standard_layout<zf_model_params>::value, "ABI structs are plain C");

TEST_CASE("the loaded library is the header's version") {
  CHECK(zf_version() == uint32_t(ZF_VERSION));
  const std::string expected = std::to_string(ZF_VERSION_MAJOR) + "." + std::to_string(ZF_VERSION_MINOR) + "." +
                               std::to_string(ZF_VERSION_PATCH);
  CHECK(std::string(zf_version_string()) == expected);
}

TEST_CASE("every status code has its name") {
  const char* names[] = {"ZF_OK", "ZF_ERR_INVALID_ARGUMENT", "ZF_ERR_IO", "ZF_ERR_FORMAT", "ZF_ERR_UNSUPPORTED",
                         "ZF_ERR_OUT_OF_MEMORY", "ZF_ERR_BUFFER_TOO_SMALL", "ZF_ERR_NOT_FOUND",
                         "ZF_ERR_INVALID_UTF8", "ZF_ERR_CONTEXT_FULL", "ZF_ERR_CANCELLED", "ZF_ERR_BACKEND",
                         "ZF_ERR_INTERNAL"};
  for (int32_t s = ZF_OK; s <= ZF_ERR_INTERNAL; ++s) CHECK(std::string(zf_status_string(s)) == names[s]);
  CHECK(std::string(zf_status_string(999)) == "ZF_ERR_UNKNOWN");
}

TEST_CASE("params structs have their ABI sizes and defaults") {
  CHECK(sizeof(zf_model_params) == 56);  // 40, 48 with max_batch; 56 with prefix_cache_mib
  zf_model_params mp;
  std::memset(&mp, 0xAB, sizeof mp);
  REQUIRE(zf_model_params_init(&mp, sizeof mp) == ZF_OK);
  CHECK(mp.max_batch == 0);  // batching is opt-in
  CHECK(mp.reserved1 == 0u);
  CHECK(mp.prefix_cache_mib == 0);  // 0 = the default bound
  CHECK(mp.reserved2 == 0u);
  std::memset(&mp, 0xAB, sizeof mp);
  REQUIRE(zf_model_params_init(&mp, 40) == ZF_OK);  // a caller compiled against the 40-byte layout
  CHECK(mp.struct_size == 40u);
  CHECK(mp.max_batch == int32_t(0xABABABAB));  // beyond its struct_size: not written
  CHECK(sizeof(zf_model_summary) == 112);  // 88 before the six FIM token ids (0.5)
  CHECK(offsetof(zf_model_summary, token_fim_pre) == 88);
  CHECK(sizeof(zf_session_params) == 32);  // 16 before flags and reserved0, 24 before kv_type_v and reserved1 (0.7)
  CHECK(offsetof(zf_session_params, flags) == 16);
  CHECK(offsetof(zf_session_params, kv_type_v) == 24);
  CHECK(sizeof(zf_cache_info) == 64);
  // 64, then 72 with n_logprobs; 88 with the constraint; 96 with its trigger; 104 with the draft
  CHECK(sizeof(zf_generate_params) == 104);
  CHECK(offsetof(zf_generate_params, draft_max) == 96);
  CHECK(offsetof(zf_generate_params, constraint) == 72);
  CHECK(offsetof(zf_generate_params, constraint_kind) == 80);
  CHECK(offsetof(zf_generate_params, constraint_trigger) == 88);
  CHECK(sizeof(zf_generate_result) == 40);  // 32 before n_drafted and n_accepted
  CHECK(sizeof(zf_token_logprob) == 8);
  zf_generate_params g;
  std::memset(&g, 0xAB, sizeof g);
  REQUIRE(zf_generate_params_init(&g, sizeof g) == ZF_OK);
  CHECK(g.struct_size == sizeof g);
  CHECK(g.max_tokens == 256);
  CHECK(g.reserved0 == 0u);
  CHECK(g.flags == 0u);
  CHECK(g.n_logprobs == 0);  // log-probabilities are opt-in
  CHECK(g.reserved1 == 0u);
  CHECK(g.constraint == nullptr);  // unconstrained by default
  CHECK(g.constraint_kind == ZF_CONSTRAINT_NONE);
  CHECK(g.constraint_trigger == nullptr);  // a constraint applies from the first token
  CHECK(g.reserved2 == 0u);
  std::memset(&g, 0xAB, sizeof g);
  REQUIRE(zf_generate_params_init(&g, 64) == ZF_OK);  // a caller compiled against the 64-byte layout
  CHECK(g.struct_size == 64u);
  CHECK(g.n_logprobs == int32_t(0xABABABAB));  // beyond its struct_size: not written
  SUBCASE("an older, smaller struct is filled only up to its size") {
    unsigned char buf[sizeof(zf_model_params) + 8];
    std::memset(buf, 0xCD, sizeof buf);
    REQUIRE(zf_model_params_init(reinterpret_cast<zf_model_params*>(buf), 8) == ZF_OK);
    CHECK(reinterpret_cast<zf_model_params*>(buf)->struct_size == 8u);
    CHECK(buf[8] == 0xCD);
  }
}

TEST_CASE("unknown flags and reserved fields are rejected before the file is opened") {
  zf_model_params p;
  zf_model_params_init(&p, sizeof p);
  p.reserved0 = 1;
  zf_model* m = nullptr;
  CHECK(zf_model_load("/nonexistent.gguf", &p, &m) == ZF_ERR_INVALID_ARGUMENT);
  CHECK(std::string(zf_last_error()).find("reserved0") != std::string::npos);
  p.reserved0 = 0;
  p.flags = 0x80000000u;
  CHECK(zf_model_load("/nonexistent.gguf", &p, &m) == ZF_ERR_INVALID_ARGUMENT);
  p.flags = 0;
  CHECK(zf_model_load("/nonexistent.gguf", &p, &m) == ZF_ERR_IO);
  CHECK(m == nullptr);
}

TEST_CASE("speech structs have their ABI sizes and defaults (0.7)") {
  static_assert(std::is_trivial<zf_transcribe_params>::value, "ABI structs are plain C");
  static_assert(std::is_trivial<zf_speech_segment>::value, "ABI structs are plain C");
  CHECK(sizeof(zf_speech_summary) == 32);
  CHECK(sizeof(zf_speech_token) == 16);
  CHECK(sizeof(zf_speech_token_time) == 16);
  if (sizeof(void*) == 8) {
    // 32 and 64 bytes at 0.7's first speech release; the decoding fields appended after.
    CHECK(sizeof(zf_transcribe_params) == 72);
    CHECK(offsetof(zf_transcribe_params, temperature) == 32);
    CHECK(offsetof(zf_transcribe_params, n_max_text_ctx) == 68);
    CHECK(sizeof(zf_speech_segment) == 96);
    CHECK(offsetof(zf_speech_segment, no_speech_prob) == 56);
    CHECK(offsetof(zf_speech_segment, token_times) == 64);
    CHECK(offsetof(zf_speech_segment, avg_logprob) == 92);
    CHECK(sizeof(zf_speech_word) == 40);
  }
  zf_transcribe_params t;
  std::memset(&t, 0xAB, sizeof t);
  REQUIRE(zf_transcribe_params_init(&t, sizeof t) == ZF_OK);
  CHECK(t.struct_size == sizeof t);
  CHECK(t.n_threads == 0);
  CHECK(t.language == nullptr);
  CHECK(t.initial_prompt == nullptr);
  CHECK(t.flags == 0u);
  CHECK(t.reserved == 0u);
  // whisper.cpp's whisper_full_default_params(WHISPER_SAMPLING_GREEDY).
  CHECK(t.temperature == 0.0f);
  CHECK(t.temperature_inc == doctest::Approx(0.2));
  CHECK(t.beam_size <= 1);
  CHECK(t.best_of == 5);
  CHECK(t.entropy_thold == doctest::Approx(2.4));
  CHECK(t.logprob_thold == doctest::Approx(-1.0));
  CHECK(t.no_speech_thold == doctest::Approx(0.6));
  // A caller compiled against the first 0.7 header (32 bytes) is served with these defaults.
  zf_transcribe_params old_size;
  std::memset(&old_size, 0xAB, sizeof old_size);
  REQUIRE(zf_transcribe_params_init(&old_size, 32) == ZF_OK);
  CHECK(old_size.struct_size == 32u);
  CHECK(old_size.flags == 0u);
  zf_speech_model* m = nullptr;
  CHECK(zf_speech_load("/nonexistent.bin", 2, &m) == ZF_ERR_INVALID_ARGUMENT);
  CHECK(zf_speech_load("/nonexistent.bin", 0, &m) == ZF_ERR_IO);
  CHECK(m == nullptr);
}

TEST_CASE("vision structs have their ABI sizes (0.7)") {
  static_assert(std::is_trivial<zf_mmproj_summary>::value, "ABI structs are plain C");
  static_assert(std::is_trivial<zf_image>::value, "ABI structs are plain C");
  if (sizeof(void*) == 8) {
    CHECK(sizeof(zf_mmproj_summary) == 48);  // 40 before modalities, sample_rate (0.7, audio)
    CHECK(offsetof(zf_mmproj_summary, projector_type) == 32);
    CHECK(offsetof(zf_mmproj_summary, modalities) == 40);
    CHECK(offsetof(zf_mmproj_summary, sample_rate) == 44);
    CHECK(sizeof(zf_image) == 32);
    CHECK(offsetof(zf_image, width) == 24);
    CHECK(sizeof(zf_turn_params) == 56);  // 48 before mmproj (0.7)
    CHECK(offsetof(zf_turn_params, mmproj) == 48);
  }
  CHECK(ZF_EMBD_BIDIRECTIONAL == 1u);
  zf_mmproj* p = nullptr;
  CHECK(zf_mmproj_load(nullptr, "/nonexistent.gguf", 0, &p) == ZF_ERR_INVALID_ARGUMENT);
  CHECK(p == nullptr);
}

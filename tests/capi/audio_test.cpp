// Audio in the prompt through the C ABI (issue #46): SmolLM2-135M with the synthesized audio
// projectors (fixture audio.models: ultravox, qwen2a, voxtral) and the first 4 s of the sdist's
// test-2.mp3 (tests/data/audio/test-2-4s.wav). zf_audio_embed against libmtmd's rows
// (tests/data/golden/audio/<type>-<ftype>.json) and zf_session_eval_audio against libmtmd's
// placement (<type>-<ftype>-lm.json: mtmd_tokenize + mtmd_helper_eval_chunks, then greedy
// llama_decode): the first step's logits and 8 teacher-forced greedy steps (random projector
// weights make the rows noise, but what the model makes of them is a deterministic function
// both sides must agree on). A chat turn with an input_audio part, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/vision_handles.h"
#include "common/test_models.h"
#include "vision/golden_check.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::Load;
using zf::capitest::SummaryOf;
using zf::capitest::ModelPtr;
using zf::capitest::MmprojPtr;
using zf::capitest::NewSession;
using zf::capitest::CentredCosine;
using zf::capitest::SessionPtr;
using zf::capitest::SessionTokens;
using zf::capitest::Tokenize;

constexpr double kTieMargin = 1.25;  // as vision_placement_test.cpp: a greedy miss only at a near-tie

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Projector(const std::string& name) { return std::string(ZF_VISION_MODELS_DIR) + "/audio/mmproj-" + name + ".gguf"; }

json Golden(const std::string& name) {
  std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/golden/audio/" + name + ".json");
  EXPECT_TRUE(f.good()) << "missing golden " << name;
  return f.good() ? json::parse(f) : json();
}

std::vector<float> Clip(std::string* wav = nullptr) {
  const std::string bytes = ReadBytes(std::string(ZF_TEST_DATA_DIR) + "/audio/test-2-4s.wav");
  size_t n = 0;
  EXPECT_EQ(zf_wav_decode(bytes.data(), bytes.size(), nullptr, 0, &n), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<float> pcm(n);
  EXPECT_EQ(zf_wav_decode(bytes.data(), bytes.size(), pcm.data(), pcm.size(), &n), ZF_OK) << zf_last_error();
  if (wav != nullptr) *wav = bytes;
  return pcm;
}

size_t VocabOf(const zf_model* m) {
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return size_t(s.n_vocab);
}

// zf_audio_embed of pcm against golden `name` (its size query first): rows of `width` floats at
// cosine 0.9999 (0.999 for a Q8_0 file), norms within 1e-3 (6e-3).
void ExpectEmbedsAsGolden(const zf_mmproj* mmproj, const std::vector<float>& pcm, const std::string& name, size_t width) {
  const json g = Golden(name);
  size_t needed = 0;
  int32_t n_tok = 0;
  EXPECT_EQ(zf_audio_embed(mmproj, pcm.data(), pcm.size(), 2, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n_tok, g["n_tokens"].get<int32_t>());
  EXPECT_EQ(needed, size_t(n_tok) * width);
  std::vector<float> rows(needed);
  ASSERT_EQ(zf_audio_embed(mmproj, pcm.data(), pcm.size(), 2, rows.data(), rows.size(), &needed, &n_tok), ZF_OK)
      << zf_last_error();
  const bool q8 = name.find("q8_0") != std::string::npos;
  const zf::vision::test::GoldenFit fit = zf::vision::test::ExpectMatchesGolden(rows, g, q8 ? 0.999 : 0.9999, name, q8 ? 6e-3 : 1e-3);
  std::printf("[ audio %s ] min cosine %.7f, worst norm %.3g\n", name.c_str(), fit.min_cosine, fit.worst_norm);
}

class CapiAudio : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ZF_REQUIRE_MODEL(path, "smollm2");
    model_ = Load(path);
    ASSERT_NE(model_, nullptr);
    zf_mmproj* p = nullptr;
    ASSERT_EQ(zf_mmproj_load(model_.get(), Projector(GetParam()).c_str(), 0, &p), ZF_OK) << zf_last_error();
    mmproj_.reset(p);
    n_vocab_ = VocabOf(model_.get());
  }
  std::string kind() const { return GetParam().substr(0, GetParam().find('-')); }
  ModelPtr model_;
  MmprojPtr mmproj_;
  size_t n_vocab_ = 0;
};

TEST_P(CapiAudio, InfoAndEmbeddingsMatchLibmtmd) {
  const zf_mmproj_summary info = SummaryOf(mmproj_.get());
  EXPECT_EQ(info.struct_size, sizeof info);
  EXPECT_EQ(info.modalities, ZF_MODALITY_AUDIO);
  EXPECT_EQ(info.sample_rate, 16000);
  EXPECT_EQ(info.n_embd, 576);
  EXPECT_EQ(info.n_embd_vision, 384);
  EXPECT_EQ(info.n_layer, 2);
  EXPECT_EQ(info.n_tokens, kind() == "qwen2a" ? 750 : 375);
  EXPECT_EQ(std::string(info.projector_type), kind());
  // An older caller's struct (0.7's image fields only) is filled up to its size.
  zf_mmproj_summary old;
  std::memset(&old, 0xff, sizeof old);
  old.struct_size = offsetof(zf_mmproj_summary, modalities);
  ASSERT_EQ(zf_mmproj_info(mmproj_.get(), &old), ZF_OK);
  EXPECT_EQ(old.modalities, 0xffffffffu);

  ExpectEmbedsAsGolden(mmproj_.get(), Clip(), GetParam(), 576);
}

// zf_session_eval_audio in `model` against libmtmd's placement (golden `name`-lm): libmtmd's text
// chunks around the clip hold its markers (beg / end; zf_session_eval_audio adds them itself),
// n_past, the first step's centred logits (at least min_cos) and 8 teacher-forced greedy steps.
void ExpectPlacedAsLibmtmd(zf_model* model, const zf_mmproj* mmproj, const std::vector<float>& pcm, const std::string& name,
                           const std::string& beg, const std::string& end, size_t n_vocab, double min_cos) {
  const json g = Golden(name + "-lm");
  ASSERT_FALSE(g.is_null());
  std::vector<int32_t> before = g["chunks"][0]["text"], after = g["chunks"][g["chunks"].size() - 1]["text"];
  const std::vector<int32_t> bt = Tokenize(model, beg, ZF_TOKENIZE_PARSE_SPECIAL);
  const std::vector<int32_t> et = Tokenize(model, end, ZF_TOKENIZE_PARSE_SPECIAL);
  ASSERT_GE(before.size(), bt.size());
  ASSERT_TRUE(std::equal(bt.begin(), bt.end(), before.end() - std::ptrdiff_t(bt.size()))) << "libmtmd's begin marker";
  before.resize(before.size() - bt.size());
  ASSERT_TRUE(std::equal(et.begin(), et.end(), after.begin())) << "libmtmd's end marker";
  after.erase(after.begin(), after.begin() + std::ptrdiff_t(et.size()));

  SessionPtr s = NewSession(model, 2048);
  ASSERT_NE(s, nullptr);
  std::vector<float> logits(n_vocab);
  ASSERT_EQ(zf_session_eval(s.get(), before.data(), before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_audio(s.get(), mmproj, pcm.data(), pcm.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK) << zf_last_error();
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, g["n_past"].get<int32_t>());

  const json& first = g["first"];
  std::vector<double> ours, ref = first["every64"].get<std::vector<double>>();
  for (size_t i = 0; i < n_vocab; i += 64) ours.push_back(logits[i]);
  const std::vector<int32_t> top = first["top_ids"];
  const std::vector<double> top_l = first["top_logits"];
  for (size_t i = 0; i < top.size(); ++i) ours.push_back(logits[size_t(top[i])]), ref.push_back(top_l[i]);
  const double cos = CentredCosine(ours, ref);
  EXPECT_GE(cos, min_cos) << name;
  int exact = 0;
  double worst_gap = 0;
  for (const json& step : g["greedy"]) {
    const int32_t want = step["token"];
    const int32_t best = zf::capitest::Argmax(logits);
    if (best == want) {
      ++exact;
    } else {
      worst_gap = std::max(worst_gap, double(logits[size_t(best)]) - logits[size_t(want)]);
      EXPECT_LT(worst_gap, kTieMargin) << name << ": greedy token " << best << " where libmtmd took " << want;
    }
    ASSERT_EQ(zf_session_eval(s.get(), &want, 1, logits.data(), logits.size()), ZF_OK);  // teacher-forced
  }
  std::printf("[ audio %s ] first step centred cosine %.7f, greedy %d/8 identical\n", name.c_str(), cos, exact);
}

TEST_P(CapiAudio, EvalAudioMatchesLibmtmd) {
  const std::string k = kind();
  const std::string beg = k == "qwen2a" ? "<|audio_bos|>" : k == "voxtral" ? "[BEGIN_AUDIO]" : "";
  const std::string end = k == "qwen2a" ? "<|audio_eos|>" : "";
  ExpectPlacedAsLibmtmd(model_.get(), mmproj_.get(), Clip(), GetParam(), beg, end, n_vocab_, 0.99);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiAudio,
                         ::testing::Values("ultravox-f16", "ultravox-q8_0", "qwen2a-f16", "qwen2a-q8_0", "voxtral-f16",
                                           "voxtral-q8_0"));

// Gemma 4's audio tower (gemma4a) in the synthesized Gemma 4 (the fixture vision.models writes
// gemma4-f32.gguf; skipped where it has not, as in the ASan stage that writes the audio files only).
class CapiGemma4Audio : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/gemma4-f32.gguf";
    if (!std::ifstream(lm).good()) GTEST_SKIP() << "no " << lm << " (the fixture vision.models writes it)";
    model_ = Load(lm);
    ASSERT_NE(model_, nullptr);
    zf_mmproj* p = nullptr;
    ASSERT_EQ(zf_mmproj_load(model_.get(), Projector("gemma4a-" + GetParam()).c_str(), 0, &p), ZF_OK) << zf_last_error();
    mmproj_.reset(p);
    n_vocab_ = VocabOf(model_.get());
  }
  ModelPtr model_;
  MmprojPtr mmproj_;
  size_t n_vocab_ = 0;
};

TEST_P(CapiGemma4Audio, InfoEmbeddingsAndPlacementMatchLibmtmd) {
  const zf_mmproj_summary info = SummaryOf(mmproj_.get());
  EXPECT_EQ(info.modalities, ZF_MODALITY_AUDIO);
  EXPECT_EQ(info.sample_rate, 16000);
  EXPECT_EQ(info.n_embd, 256);
  EXPECT_EQ(info.n_tokens, 750);
  EXPECT_EQ(std::string(info.projector_type), "gemma4a");
  const std::vector<float> pcm = Clip();
  ExpectEmbedsAsGolden(mmproj_.get(), pcm, "gemma4a-" + GetParam(), 256);
  // Placement: <|audio> rows <audio|>, causal (mtmd_decode_use_non_causal is false for audio).
  ExpectPlacedAsLibmtmd(model_.get(), mmproj_.get(), pcm, "gemma4a-" + GetParam(), "<|audio>", "<audio|>", n_vocab_, 0.9999);
}

INSTANTIATE_TEST_SUITE_P(Types, CapiGemma4Audio, ::testing::Values("f16", "q8_0"));

// Gemma 4's two-tower file: one handle holds both towers (the image side as before:
// vision_gemma4v_test.cpp); its audio rows are the audio-only file's.
TEST(CapiGemma4TwoTower, OneHandleHoldsBothTowers) {
  const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/gemma4-f32.gguf";
  const std::string av = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma4v-av-f16.gguf";
  if (!std::ifstream(lm).good() || !std::ifstream(av).good()) GTEST_SKIP() << "no " << lm << " / " << av;
  ModelPtr model = Load(lm);
  ASSERT_NE(model, nullptr);
  zf_mmproj* p = nullptr;
  ASSERT_EQ(zf_mmproj_load(model.get(), av.c_str(), 0, &p), ZF_OK) << zf_last_error();
  MmprojPtr both(p);
  ASSERT_EQ(zf_mmproj_load(model.get(), Projector("gemma4a-f16").c_str(), 0, &p), ZF_OK) << zf_last_error();
  MmprojPtr audio(p);
  const zf_mmproj_summary info = SummaryOf(both.get());
  EXPECT_EQ(info.modalities, uint32_t(ZF_MODALITY_IMAGE | ZF_MODALITY_AUDIO));
  EXPECT_EQ(info.sample_rate, 16000);
  EXPECT_EQ(std::string(info.projector_type), "gemma4v");  // the image fields are the vision tower's
  const std::vector<float> pcm = Clip();
  size_t n1 = 0, n2 = 0;
  int32_t t = 0;
  EXPECT_EQ(zf_audio_embed(both.get(), pcm.data(), pcm.size(), 2, nullptr, 0, &n1, &t), ZF_ERR_BUFFER_TOO_SMALL);
  std::vector<float> a(n1), b(n1);
  ASSERT_EQ(zf_audio_embed(both.get(), pcm.data(), pcm.size(), 2, a.data(), a.size(), &n1, &t), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_audio_embed(audio.get(), pcm.data(), pcm.size(), 2, b.data(), b.size(), &n2, &t), ZF_OK) << zf_last_error();
  EXPECT_EQ(a, b);
}

class CapiAudioTurn : public ::testing::Test {
 protected:
  void SetUp() override {
    ZF_REQUIRE_MODEL(path, "smollm2");
    model_ = Load(path);
    ASSERT_NE(model_, nullptr);
    zf_mmproj* p = nullptr;
    ASSERT_EQ(zf_mmproj_load(model_.get(), Projector("qwen2a-f16").c_str(), 0, &p), ZF_OK) << zf_last_error();
    mmproj_.reset(p);
  }
  static std::string Base64(const std::string& b) { return zf::capitest::Base64(std::vector<uint8_t>(b.begin(), b.end())); }
  static json Request(const json& audio_part) {
    return {{"messages", json::array({{{"role", "user"},
                                       {"content", json::array({{{"type", "text"}, {"text", "What do you hear?"}},
                                                                audio_part})}}})}};
  }
  static json AudioPart(const std::string& data, const std::string& format) {
    return {{"type", "input_audio"}, {"input_audio", {{"data", data}, {"format", format}}}};
  }
  struct Outcome {
    std::vector<int32_t> ids;
    int32_t n_prompt = -1;
  };
  static int32_t Collect(void* user, const zf_turn_event* e) {
    Outcome& o = *static_cast<Outcome*>(user);
    for (size_t i = 0; i < e->n_logprobs; ++i) o.ids.push_back(e->logprobs[i].token);
    if (e->kind == ZF_TURN_DONE) o.n_prompt = e->n_prompt;
    return 0;
  }
  zf_status Turn(zf_session* s, const json& req, Outcome* out, const zf_mmproj* p) {
    zf_generate_params g;
    zf_generate_params_init(&g, sizeof g);
    g.temperature = 0.0f;
    g.max_tokens = 3;
    g.n_logprobs = 1;
    zf_turn_params tp;
    zf_turn_params_init(&tp, sizeof tp);
    const std::string text = req.dump();
    tp.request_json = text.c_str();
    tp.generate = &g;
    tp.mmproj = p;
    return zf_chat_turn(s, &tp, Collect, out, nullptr);
  }
  std::string Prompt(const json& req) {
    zf_turn_params tp;
    zf_turn_params_init(&tp, sizeof tp);
    const std::string text = req.dump();
    tp.request_json = text.c_str();
    tp.mmproj = mmproj_.get();
    size_t needed = 0;
    EXPECT_EQ(zf_chat_turn_prompt(model_.get(), &tp, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
    std::string buf(needed, '\0');
    EXPECT_EQ(zf_chat_turn_prompt(model_.get(), &tp, buf.data(), buf.size(), &needed), ZF_OK) << zf_last_error();
    buf.resize(needed - 1);
    return buf;
  }
  // A turn with the clip as an input_audio part (session *turn, outcome *o) and the raw route
  // over the prompt it renders (*raw: its text up to `marker`, zf_session_eval_audio, the text
  // after, logits the last step's). *prompt: that prompt.
  void TurnAndRawRoute(const std::string& marker, SessionPtr* turn, Outcome* o, SessionPtr* raw, std::vector<float>* logits,
                       std::string* prompt) {
    std::string wav;
    const std::vector<float> pcm = Clip(&wav);
    const json req = Request(AudioPart(Base64(wav), "wav"));
    *prompt = Prompt(req);
    const size_t at = prompt->find(marker);
    ASSERT_NE(at, std::string::npos) << *prompt;
    *turn = NewSession(model_.get(), 2048);
    ASSERT_EQ(Turn(turn->get(), req, o, mmproj_.get()), ZF_OK) << zf_last_error();
    *raw = NewSession(model_.get(), 2048);
    const std::vector<int32_t> before =
        Tokenize(model_.get(), prompt->substr(0, at), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
    const std::vector<int32_t> after = Tokenize(model_.get(), prompt->substr(at + marker.size()), ZF_TOKENIZE_PARSE_SPECIAL);
    ASSERT_EQ(zf_session_eval(raw->get(), before.data(), before.size(), nullptr, 0), ZF_OK);
    ASSERT_EQ(zf_session_eval_audio(raw->get(), mmproj_.get(), pcm.data(), pcm.size(), nullptr, 0), ZF_OK) << zf_last_error();
    ASSERT_EQ(zf_session_eval(raw->get(), after.data(), after.size(), logits->data(), logits->size()), ZF_OK);
  }
  ModelPtr model_;
  MmprojPtr mmproj_;
};

// A turn with an input_audio part gives what the raw route gives for the prompt the turn
// renders: its text up to the clip, zf_session_eval_audio, its text after.
TEST_F(CapiAudioTurn, InputAudioPartIsPlacedAsTheRawRoutePlacesIt) {
  SessionPtr s, r;
  Outcome o;
  std::vector<float> logits(49152);
  std::string prompt;
  ASSERT_NO_FATAL_FAILURE(TurnAndRawRoute("<|audio_bos|><|audio_eos|>", &s, &o, &r, &logits, &prompt));
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(r.get(), &n_past), ZF_OK);
  EXPECT_EQ(o.n_prompt, n_past);  // the text's tokens, 2 markers' tokens, 750 rows
  // The same entries (text tokens, and the rows' hashed entries: the same rows, placed alike),
  // and the same first token (the turn's, or end of turn when it stopped at once).
  const std::vector<int32_t> turn_tokens = SessionTokens(s.get()), raw_tokens = SessionTokens(r.get());
  ASSERT_GE(turn_tokens.size(), raw_tokens.size());
  EXPECT_TRUE(std::equal(raw_tokens.begin(), raw_tokens.end(), turn_tokens.begin()));
  const int32_t best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (!o.ids.empty()) EXPECT_EQ(o.ids[0], best);  // (none when the turn ended at once)
  // zf_chat_turn_prompt counts audio like images: its tokens + the clip's rows = the turn's
  // prompt, up to the merges across the markers' edges (SmolLM2 has no special tokens for
  // <|audio_bos|> / <|audio_eos|>: the whole text tokenizes "?<|" differently; measured 2).
  const std::vector<int32_t> all = Tokenize(model_.get(), prompt, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
  EXPECT_NEAR(double(all.size()) + 750, double(o.n_prompt), 4.0);
}

// Gemma 4's two-tower handle: its images attend both ways in the synthesized Gemma 4 (width 256),
// its audio rows causally (libmtmd), in a chat turn as in zf_session_eval_audio.
class CapiGemma4AudioTurn : public CapiAudioTurn {
 protected:
  void SetUp() override {
    const std::string lm = std::string(ZF_VISION_MODELS_DIR) + "/gemma4-f32.gguf";
    const std::string av = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma4v-av-f16.gguf";
    if (!std::ifstream(lm).good() || !std::ifstream(av).good()) GTEST_SKIP() << "no " << lm << " / " << av;
    model_ = Load(lm);
    ASSERT_NE(model_, nullptr);
    zf_mmproj* p = nullptr;
    ASSERT_EQ(zf_mmproj_load(model_.get(), av.c_str(), 0, &p), ZF_OK) << zf_last_error();
    mmproj_.reset(p);
  }
};

TEST_F(CapiGemma4AudioTurn, AudioRowsAreCausalBesideBidirectionalImages) {
  SessionPtr s, r;
  Outcome o;
  std::vector<float> logits;
  std::string prompt;
  ASSERT_NO_FATAL_FAILURE(TurnAndRawRoute("<|audio><audio|>", &s, &o, &r, &logits, &prompt));
  // The same entries: the rows' hashed entries carry the attention mode they were placed with.
  const std::vector<int32_t> turn_tokens = SessionTokens(s.get()), raw_tokens = SessionTokens(r.get());
  ASSERT_GE(turn_tokens.size(), raw_tokens.size());
  EXPECT_TRUE(std::equal(raw_tokens.begin(), raw_tokens.end(), turn_tokens.begin()));
}

TEST_F(CapiAudioTurn, RefusalsNameThePart) {
  std::string wav;
  Clip(&wav);
  SessionPtr s = NewSession(model_.get(), 2048);
  Outcome o;
  const auto msg = [] { return std::string(zf_last_error()); };
  EXPECT_EQ(Turn(s.get(), Request(AudioPart(Base64(wav), "mp3")), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("messages[0].content[1].input_audio.format"), std::string::npos) << msg();
  EXPECT_NE(msg().find("decode it first"), std::string::npos) << msg();
  EXPECT_EQ(Turn(s.get(), Request(AudioPart("@@@@", "wav")), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("invalid base64"), std::string::npos) << msg();
  EXPECT_NE(Turn(s.get(), Request(AudioPart(Base64("RIFFnotawav"), "wav")), &o, mmproj_.get()), ZF_OK);
  EXPECT_NE(msg().find("messages[0].content[1]"), std::string::npos) << msg();
  EXPECT_EQ(Turn(s.get(), Request(AudioPart(Base64(wav), "wav")), &o, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("audio projector"), std::string::npos) << msg();
  // An image part with an audio projector.
  const json image = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,iVBORw0KGgo="}}}};
  EXPECT_EQ(Turn(s.get(), Request(image), &o, mmproj_.get()), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("messages[0].content[1]"), std::string::npos) << msg();
  EXPECT_NE(msg().find("encodes audio, not images"), std::string::npos) << msg();
}

TEST(CapiAudioErrors, RefusalsNameTheField) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr model = Load(path);
  ASSERT_NE(model, nullptr);
  zf_mmproj* raw = nullptr;
  ASSERT_EQ(zf_mmproj_load(model.get(), Projector("qwen2a-f16").c_str(), 0, &raw), ZF_OK) << zf_last_error();
  MmprojPtr p(raw);
  const auto msg = [] { return std::string(zf_last_error()); };
  std::vector<float> pcm(16000, 0.1f), out(16);
  size_t needed = 0;
  EXPECT_EQ(zf_audio_embed(p.get(), pcm.data(), 159, 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("at least 160"), std::string::npos) << msg();
  EXPECT_EQ(zf_audio_embed(p.get(), pcm.data(), 0, 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  std::vector<float> longer(size_t(ZF_AUDIO_MAX_SAMPLES) + 1, 0.0f);
  EXPECT_EQ(zf_audio_embed(p.get(), longer.data(), longer.size(), 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("10 minutes"), std::string::npos) << msg();
  pcm[1234] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(zf_audio_embed(p.get(), pcm.data(), pcm.size(), 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("pcm[1234] is NaN"), std::string::npos) << msg();
  pcm[1234] = 0.0f;
  EXPECT_EQ(zf_audio_embed(p.get(), nullptr, 10, 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_audio_embed(p.get(), pcm.data(), pcm.size(), -1, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_audio_embed(p.get(), pcm.data(), pcm.size(), 0, nullptr, 5, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
  // An audio projector given an image, and an image projector given audio.
  const std::vector<uint8_t> px(12, 0);
  const zf_image im = zf::capitest::Rgb(px, 2, 2);
  int32_t n_tok = 0;
  EXPECT_EQ(zf_image_embed(p.get(), &im, 0, nullptr, 0, &needed, &n_tok), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("encodes audio, not images"), std::string::npos) << msg();
  SessionPtr s = NewSession(model.get(), 1024);
  EXPECT_EQ(zf_session_eval_image(s.get(), p.get(), &im, nullptr, 0), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("encodes audio, not images"), std::string::npos) << msg();
  EXPECT_EQ(zf_session_eval_audio(s.get(), p.get(), pcm.data(), 100, nullptr, 0), ZF_ERR_INVALID_ARGUMENT);
  int32_t n_past = -1;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  EXPECT_EQ(n_past, 0);  // nothing appended
  {
    ZF_REQUIRE_MODEL(gpath, "gemma3");
    ModelPtr gemma = Load(gpath);
    ASSERT_NE(gemma, nullptr);
    zf_mmproj* v = nullptr;
    ASSERT_EQ(zf_mmproj_load(gemma.get(), zf::capitest::MmprojFixture("f16").c_str(), 0, &v), ZF_OK) << zf_last_error();
    MmprojPtr vision(v);
    const zf_mmproj_summary info = zf::capitest::SummaryOf(vision.get());
    if (HasFailure()) return;
    EXPECT_EQ(info.modalities, ZF_MODALITY_IMAGE);
    EXPECT_EQ(info.sample_rate, 0);
    EXPECT_EQ(zf_audio_embed(vision.get(), pcm.data(), pcm.size(), 0, nullptr, 0, &needed, nullptr), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_NE(msg().find("encodes images, not audio"), std::string::npos) << msg();
    // An audio projector of another width (Gemma 3 270M is 640 wide).
    zf_mmproj* q = nullptr;
    EXPECT_EQ(zf_mmproj_load(gemma.get(), Projector("qwen2a-f16").c_str(), 0, &q), ZF_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(q, nullptr);
    EXPECT_NE(msg().find("output width 576 is not the model's embedding width 640"), std::string::npos) << msg();
  }
}

}  // namespace

// What the image C API tests share: the projector's owner, the fixture's projector files,
// zf_image values for encoded bytes and RGB8 pixels, data-URL base64, and the placement tests'
// logits comparison and session entries, the skip for a file vision.models did not write, and the
// placement tests' fixture base (PlacementTest).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/test_handles.h"
#include "capi/turn_outcome.h"
#include "vision/golden_check.h"
#include "vision/test_images.h"
#include "zerfoo.h"

namespace zf::capitest {

struct MmprojDeleter {
  void operator()(zf_mmproj* p) const { zf_mmproj_free(p); }
};
using MmprojPtr = std::unique_ptr<zf_mmproj, MmprojDeleter>;

// The fixture vision.models' synthesized Gemma 3 projector of a type ("f32", "f16", "q8_0").
inline std::string MmprojFixture(const std::string& type) {
  return std::string(ZF_VISION_MODELS_DIR) + "/mmproj-gemma3-" + type + ".gguf";
}

inline zf_image Encoded(const std::vector<uint8_t>& bytes) {
  zf_image im;
  std::memset(&im, 0, sizeof im);
  im.struct_size = sizeof im;
  im.format = ZF_IMAGE_ENCODED;
  im.data = bytes.data();
  im.size = bytes.size();
  return im;
}

inline zf_image Rgb(const std::vector<uint8_t>& rgb, uint32_t w, uint32_t h) {
  zf_image im = Encoded(rgb);
  im.format = ZF_IMAGE_RGB8;
  im.width = w;
  im.height = h;
  return im;
}

// Standard base64 (with padding), for data URLs.
inline std::string Base64(const std::vector<uint8_t>& b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0) |
                       (i + 2 < b.size() ? uint32_t(b[i + 2]) : 0);
    out += k[v >> 18 & 63];
    out += k[v >> 12 & 63];
    out += i + 1 < b.size() ? k[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? k[v & 63] : '=';
  }
  return out;
}

// The cosine of two logit vectors after centring each (softmax ignores a shift).
inline double CentredCosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i] / double(a.size()), mb += b[i] / double(b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

inline int32_t Argmax(const std::vector<float>& l) { return int32_t(std::max_element(l.begin(), l.end()) - l.begin()); }

// zf_session_tokens(): tokens and image rows' (negative) entries.
inline std::vector<int32_t> SessionTokens(const zf_session* s) {
  size_t n = 0;
  const zf_status st = zf_session_tokens(s, nullptr, 0, &n);
  EXPECT_TRUE(st == ZF_OK || st == ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  std::vector<int32_t> t(n);
  EXPECT_EQ(zf_session_tokens(s, t.data(), t.size(), &n), ZF_OK) << zf_last_error();
  return t;
}

// A placement test's handles: the language model, the fixture's projector of a kind and type,
// the vocabulary size, the golden (golden/vision/KIND-TYPE-lm.json) and its image's pixels.
struct PlacementCase {
  ModelPtr model;
  MmprojPtr mmproj;
  size_t n_vocab = 0;
  nlohmann::json golden;
  uint32_t w = 0, h = 0;
  std::vector<uint8_t> rgb;
};

// Skips the test when the fixture vision.models has not written `path` (the sanitizer stage
// writes only the audio files).
#define ZF_REQUIRE_VISION_FILE(path)                                                              \
  if (!std::ifstream(path).good())                                                                \
  GTEST_SKIP() << (path) << " not written (fixture vision.models: tests/vision/make_models.sh; " \
                            "the sanitizer stage writes only the audio files)"

// Loads a PlacementCase (gtest failures on the way; the case is partly set then); suffix picks
// another golden of the pair (KIND-TYPE-lmSUFFIX.json).
inline void LoadPlacementCase(const std::string& lm, const std::string& kind, const std::string& type, PlacementCase* c,
                              const std::string& suffix = "") {
  ZF_REQUIRE_VISION_FILE(lm);
  c->model = Load(lm);
  ASSERT_NE(c->model, nullptr);
  zf_mmproj* p = nullptr;
  const std::string f = std::string(ZF_VISION_MODELS_DIR) + "/mmproj-" + kind + "-" + type + ".gguf";
  ASSERT_EQ(zf_mmproj_load(c->model.get(), f.c_str(), 0, &p), ZF_OK) << zf_last_error();
  c->mmproj.reset(p);
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  ASSERT_EQ(zf_model_info(c->model.get(), &s), ZF_OK);
  c->n_vocab = size_t(s.n_vocab);
  std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/" + kind + "-" + type + "-lm" + suffix + ".json");
  ASSERT_TRUE(g.good());
  c->golden = nlohmann::json::parse(g);
  const nlohmann::json& img = c->golden["image"];
  c->w = img["width"];
  c->h = img["height"];
  c->rgb = vision::test::Pattern(int(c->w), int(c->h), img["seed"].get<uint32_t>());
}

// An OpenAI image_url part holding a PNG's base64 as a data URL.
inline nlohmann::json ImageUrlPart(const std::string& png_base64) {
  return {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + png_base64}}}};
}

// A chat request of one user message: "Describe the picture.", then the image.
inline std::string DescribeImageRequest(const std::string& png_base64) {
  const nlohmann::json content =
      nlohmann::json::array({{{"type", "text"}, {"text", "Describe the picture."}}, ImageUrlPart(png_base64)});
  return nlohmann::json{{"messages", nlohmann::json::array({{{"role", "user"}, {"content", content}}})}}.dump();
}

// The turn parameters of DescribeImageRequest, greedy, with the request and generate parameters
// they point to (so not copyable).
struct DescribeImageTurn {
  DescribeImageTurn(const zf_mmproj* mmproj, const std::string& png_base64, int32_t max_tokens, int32_t n_logprobs = 0)
      : request(DescribeImageRequest(png_base64)) {
    zf_generate_params_init(&g, sizeof g);
    g.temperature = 0.0f;
    g.max_tokens = max_tokens;
    g.n_logprobs = n_logprobs;
    zf_turn_params_init(&p, sizeof p);
    p.request_json = request.c_str();
    p.generate = &g;
    p.mmproj = mmproj;
  }
  DescribeImageTurn(const DescribeImageTurn&) = delete;
  DescribeImageTurn& operator=(const DescribeImageTurn&) = delete;

  // The prompt the turn renders (zf_chat_turn_prompt, without the terminator); a failure is
  // recorded when it cannot.
  std::string Prompt(const zf_model* m) const {
    size_t needed = 0;
    EXPECT_EQ(zf_chat_turn_prompt(m, &p, nullptr, 0, &needed), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
    std::string prompt(needed, '\0');
    EXPECT_EQ(zf_chat_turn_prompt(m, &p, &prompt[0], prompt.size(), &needed), ZF_OK) << zf_last_error();
    prompt.resize(needed > 0 ? needed - 1 : 0);
    return prompt;
  }

  std::string request;
  zf_generate_params g;
  zf_turn_params p;
};

// A chat turn asking to describe one image (a PNG's base64, as an image_url data part), greedy,
// 4 tokens with 5 logprobs each, into `out`.
inline zf_status ImageTurn(zf_session* s, const zf_mmproj* mmproj, const std::string& png_base64, Outcome* out) {
  DescribeImageTurn t(mmproj, png_base64, 4, 5);
  return zf_chat_turn(s, &t.p, Collect, out, nullptr);
}

// The projector's summary (zf_mmproj_info); a failure is recorded and the summary left zeroed.
inline zf_mmproj_summary SummaryOf(const zf_mmproj* mm) {
  zf_mmproj_summary info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_EQ(zf_mmproj_info(mm, &info), ZF_OK) << zf_last_error();
  return info;
}

// The projector's rows for the first image of a recorded golden (golden/vision/NAME.json:
// libmtmd's rows of a pattern image), at 2 threads, compared with them (min cosine `bound`); its
// summary must name `type` and rows of `n_embd`. The rows into *rows.
inline void ExpectEmbedsAsGolden(const zf_mmproj* mm, const char* type, int32_t n_embd, const std::string& name,
                                 double bound, std::vector<float>* rows) {
  const zf_mmproj_summary info = zf::capitest::SummaryOf(mm);
  if (::testing::Test::HasFailure()) return;
  EXPECT_STREQ(info.projector_type, type);
  EXPECT_EQ(info.n_embd, n_embd);
  std::ifstream g(std::string(ZF_TEST_DATA_DIR) + "/golden/vision/" + name + ".json");
  ASSERT_TRUE(g.good()) << name;
  const nlohmann::json golden = nlohmann::json::parse(g);
  const nlohmann::json& gi = golden["images"][0];
  const uint32_t w = gi["width"], h = gi["height"];
  const std::vector<uint8_t> rgb = vision::test::Pattern(int(w), int(h), gi["seed"].get<uint32_t>());
  const zf_image im = Rgb(rgb, w, h);
  size_t needed = 0;
  int32_t n_tok = 0;
  ASSERT_EQ(zf_image_embed(mm, &im, 2, nullptr, 0, &needed, &n_tok), ZF_ERR_BUFFER_TOO_SMALL) << zf_last_error();
  EXPECT_EQ(n_tok, gi["n_tokens"].get<int32_t>());
  EXPECT_EQ(needed, size_t(n_tok) * size_t(n_embd));
  rows->assign(needed, 0.0f);
  ASSERT_EQ(zf_image_embed(mm, &im, 2, rows->data(), rows->size(), &needed, &n_tok), ZF_OK) << zf_last_error();
  vision::test::ExpectMatchesGolden(*rows, gi, bound, name + " through the ABI");
}

// The first run of image entries (negative) in a session's entries: where it starts, how long.
inline void FindImageEntries(const std::vector<int32_t>& toks, size_t* image_at, size_t* n_rows) {
  *image_at = size_t(std::find_if(toks.begin(), toks.end(), [](int32_t t) { return t < 0; }) - toks.begin());
  *n_rows = 0;
  while (*image_at + *n_rows < toks.size() && toks[*image_at + *n_rows] < 0) ++*n_rows;
}

// The placement tests' fixture base, one test per projector type (the parameter): SetUp calls
// LoadCase with its LM and projector kind; the handles are c_.
class PlacementTest : public ::testing::TestWithParam<std::string> {
 protected:
  void LoadCase(const std::string& lm, const std::string& kind, const std::string& suffix = "") {
    LoadPlacementCase(lm, kind, GetParam(), &c_, suffix);
  }
  PlacementCase c_;
};

// A chat turn describing the case's image (DescribeImageTurn, one token) against the raw route on
// the prompt it renders: the text up to the image (`image_at` bytes into `found`, which the
// prompt must hold), zf_session_eval_image, the text after `found`. The raw route's entries must
// begin the turn's and its argmax be the turn's first token.
struct TurnAgainstRaw {
  std::string prompt;                  // as the turn renders it
  std::string content;                 // the turn's generated text
  int32_t n_prompt = 0;                // the turn's prompt entries (ZF_TURN_DONE)
  std::vector<int32_t> before, after;  // the raw route's text before and after the image
};
inline void ExpectTurnAsRawRoute(const PlacementCase& c, const std::string& found, size_t image_at, TurnAgainstRaw* out) {
  const std::vector<uint8_t> png = vision::test::Png(int(c.w), int(c.h), c.rgb);
  const DescribeImageTurn t(c.mmproj.get(), Base64(png), 1);
  out->prompt = t.Prompt(c.model.get());
  const size_t at = out->prompt.find(found);
  ASSERT_NE(at, std::string::npos) << out->prompt;

  SessionPtr s = NewSession(c.model.get(), 1024);
  ASSERT_EQ(zf_chat_turn(s.get(), &t.p,
                         [](void* u, const zf_turn_event* e) {
                           TurnAgainstRaw& o = *static_cast<TurnAgainstRaw*>(u);
                           if (e->kind == ZF_TURN_CONTENT) o.content.append(e->text, e->text_len);
                           if (e->kind == ZF_TURN_DONE) o.n_prompt = e->n_prompt;
                           return int32_t(0);
                         },
                         out, nullptr),
            ZF_OK)
      << zf_last_error();
  const std::vector<int32_t> turn = SessionTokens(s.get());

  out->before = Tokenize(c.model.get(), out->prompt.substr(0, at + image_at), ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
  out->after = Tokenize(c.model.get(), out->prompt.substr(at + found.size()), ZF_TOKENIZE_PARSE_SPECIAL);
  SessionPtr r = NewSession(c.model.get(), 1024);
  std::vector<float> logits(c.n_vocab);
  const zf_image im = Encoded(png);
  ASSERT_EQ(zf_session_eval(r.get(), out->before.data(), out->before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_image(r.get(), c.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(r.get(), out->after.data(), out->after.size(), logits.data(), logits.size()), ZF_OK)
      << zf_last_error();
  const std::vector<int32_t> raw = SessionTokens(r.get());
  ASSERT_GE(turn.size(), raw.size());
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), turn.begin()));
  if (turn.size() > raw.size()) EXPECT_EQ(turn[raw.size()], Argmax(logits));  // none when it stopped at once
}

// The first step's centred cosine against a placement golden (mmproj_recorder --lm: the logits
// at every 64th id and at libmtmd's top 32).
inline double GoldenFirstCosine(const nlohmann::json& golden, const std::vector<float>& logits) {
  const nlohmann::json& first = golden["first"];
  std::vector<double> ours, ref = first["every64"].get<std::vector<double>>();
  for (size_t i = 0; i < logits.size(); i += 64) ours.push_back(logits[i]);
  const std::vector<int32_t> top = first["top_ids"];
  const std::vector<double> top_l = first["top_logits"];
  for (size_t k = 0; k < top.size(); ++k) ours.push_back(logits[size_t(top[k])]), ref.push_back(top_l[k]);
  EXPECT_EQ(ours.size(), ref.size());
  return ours.size() == ref.size() ? CentredCosine(ours, ref) : 0.0;
}

// The session's entries against the golden's chunks: text chunks' tokens, each image chunk as
// that many (negative) image entries.
inline void ExpectEntriesAsGolden(const nlohmann::json& golden, const zf_session* s) {
  std::vector<int32_t> want;
  for (const nlohmann::json& c : golden["chunks"]) {
    if (c.contains("text")) {
      for (int32_t t : c["text"]) want.push_back(t);
    } else {
      want.resize(want.size() + c["image_tokens"].get<size_t>(), -1);
    }
  }
  const std::vector<int32_t> got = SessionTokens(s);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] < 0) EXPECT_LT(got[i], 0) << i;
    else EXPECT_EQ(got[i], want[i]) << i;
  }
}

// Teacher-forced greedy steps against the golden's: from `logits` (the prompt's last), each
// step's argmax is libmtmd's token or within `tie_margin` of it; libmtmd's token is fed on.
// Returns the exact steps; *worst_gap the largest near-tie.
inline int ExpectGreedyAsGolden(const nlohmann::json& golden, zf_session* s, std::vector<float> logits, double tie_margin,
                                double* worst_gap) {
  int exact = 0;
  *worst_gap = 0;
  const nlohmann::json& greedy = golden["greedy"];
  for (size_t step = 0; step < greedy.size(); ++step) {
    const int32_t want = greedy[step]["token"];
    const int32_t best = Argmax(logits);
    if (best == want) {
      ++exact;
    } else {
      const double gap = double(logits[size_t(best)]) - logits[size_t(want)];
      *worst_gap = std::max(*worst_gap, gap);
      EXPECT_LE(gap, tie_margin) << "step " << step << ": ours " << best << ", libmtmd's " << want;
    }
    EXPECT_EQ(zf_session_eval(s, &want, 1, logits.data(), logits.size()), ZF_OK) << zf_last_error();
  }
  return exact;
}

// After a placed prompt whose last logits are `logits`: the session's entries, the first step's
// centred cosine (>= min_cosine) and the teacher-forced greedy steps against the golden.
struct GoldenRun {
  double cosine = 0;
  int exact = 0;          // greedy steps equal to libmtmd's
  double worst_gap = 0;   // the largest near-tie
};
inline GoldenRun ExpectRunAsGolden(const nlohmann::json& golden, zf_session* s, const std::vector<float>& logits,
                                   double min_cosine, double tie_margin) {
  GoldenRun r;
  ExpectEntriesAsGolden(golden, s);
  r.cosine = GoldenFirstCosine(golden, logits);
  EXPECT_GE(r.cosine, min_cosine);
  r.exact = ExpectGreedyAsGolden(golden, s, logits, tie_margin, &r.worst_gap);
  return r;
}

// A placement golden replayed through the C ABI: the golden's first text chunk less its last
// `drop_before` tokens, zf_session_eval_image (which places the image's own markers, and a tiled
// image's chunks and the text between them), the last chunk less its first `drop_after`; then
// the session's entries, n_past, the first step's centred cosine (>= min_cosine) and
// teacher-forced greedy steps; one line of numbers.
inline void ExpectPlacedAsGolden(PlacementCase& c, const std::string& what, size_t drop_before, size_t drop_after,
                                 double min_cosine, double tie_margin) {
  const zf_image im = Rgb(c.rgb, c.w, c.h);
  SessionPtr s = NewSession(c.model.get(), std::max(1024, c.golden["n_past"].get<int32_t>() + 64));
  std::vector<float> logits(c.n_vocab);
  std::vector<int32_t> before = c.golden["chunks"].front()["text"];
  std::vector<int32_t> after = c.golden["chunks"].back()["text"];
  before.resize(before.size() - drop_before);
  after.erase(after.begin(), after.begin() + std::ptrdiff_t(drop_after));
  ASSERT_EQ(zf_session_eval(s.get(), before.data(), before.size(), nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval_image(s.get(), c.mmproj.get(), &im, nullptr, 0), ZF_OK) << zf_last_error();
  ASSERT_EQ(zf_session_eval(s.get(), after.data(), after.size(), logits.data(), logits.size()), ZF_OK);
  int32_t n_past = 0;
  ASSERT_EQ(zf_session_n_past(s.get(), &n_past), ZF_OK);
  // libmtmd's n_past counts positions, zerfoo's entries: an M-RoPE image takes n_pos positions
  // for its image_tokens entries.
  int32_t want = c.golden["n_past"].get<int32_t>();
  for (const nlohmann::json& ch : c.golden["chunks"]) {
    if (ch.contains("n_pos")) want += ch["image_tokens"].get<int32_t>() - ch["n_pos"].get<int32_t>();
  }
  EXPECT_EQ(n_past, want);
  const GoldenRun r = ExpectRunAsGolden(c.golden, s.get(), logits, min_cosine, tie_margin);
  std::printf("[ %s ] first-step centred cosine %.7f; greedy %d/%zu exact, worst near-tie gap %.3f\n", what.c_str(), r.cosine,
              r.exact, c.golden["greedy"].size(), r.worst_gap);
}

}  // namespace zf::capitest

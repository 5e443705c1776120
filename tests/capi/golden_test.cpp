// Golden tests against the reference (llama.cpp): tests/data/golden/<model>.json was recorded
// by scripts/reference/record_goldens.sh. Through the public C API: prompt token ids, 64 greedy
// tokens, top-5 logits at a few steps, tokenizer ids/pieces/detokenized text, chat renderings.
//
// Greedy decoding is teacher-forced with the reference's tokens so one early divergence does
// not hide how the rest compares.
//
// Tolerances (measured, see doc/accuracy.md): the two engines round
// differently (activation quantization, F16 attention accumulation, summation order), so logits
// differ by a near-constant offset (which softmax ignores) plus noise. On "The capital of France
// is" the offset-removed difference has std 0.12 (SmolLM2) / 0.24 (Gemma 3) and max 0.5 / 1.1;
// llama.cpp itself differs by up to 0.77 / 1.13 between its flash-attention and plain
// attention paths on the same prompt. So: every greedy token must equal the reference's, except
// at near-ties, where the reference's token must score within kTieMargin of our best one
// (measured worst: 0.46 with the AVX-512 kernels, 0.05 with ZF_NO_AVX512=1; a run with the
// scalar prefill kernel reached 0.98 on one indentation token of the code prompt; the packed
// decode kernels, which change only float summation order, 1.16 on Gemma 3). The margin sits at
// the pipeline's own noise floor: re-rounding to 8-bit activations and F16 K/V at every layer
// turns 1e-7 summation differences into occasional whole-step flips, so our own decode and
// prefill of the same tokens differ by up to 1.07 at the output, and llama.cpp's two attention
// paths by 1.13. A real bug moves far more tokens and logits than this margin allows.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using nlohmann::json;
using zf::capitest::Tokenize;

// Largest |zerfoo - reference| logit allowed at the recorded top-5 ids. Both engines quantize
// activations to 8 bits for the quantized matmuls but sum in different orders and use
// different exp/tanh approximations; measured max differences are reported by the test.
constexpr double kLogitTolerance = 0.75;  // |ours - reference - offset| at recorded top-5
constexpr double kTieMargin = 1.25;       // see above
constexpr double kMinExactFraction = 0.9;  // of greedy steps where our argmax is the reference's

json LoadGolden(const std::string& name) {
  std::ifstream f(std::string(ZF_TEST_DATA_DIR) + "/golden/" + name + ".json");
  EXPECT_TRUE(f.good()) << "missing golden file for " << name;
  return f.good() ? json::parse(f) : json();
}

struct Model {
  zf_model* m = nullptr;
  ~Model() { zf_model_free(m); }
};

std::string Detokenize(zf_model* m, const std::vector<int32_t>& ids, uint32_t flags) {
  std::vector<char> buf(ids.size() * 64 + 64);
  size_t needed = 0;
  EXPECT_EQ(zf_detokenize(m, ids.data(), ids.size(), flags, buf.data(), buf.size(), &needed), ZF_OK)
      << zf_last_error();
  return std::string(buf.data(), needed - 1);  // needed counts the NUL
}

std::string Piece(zf_model* m, int32_t id, uint32_t flags) {
  char buf[512];
  size_t needed = 0;
  EXPECT_EQ(zf_token_to_piece(m, id, flags, buf, sizeof buf, &needed), ZF_OK);
  return std::string(buf, needed);
}

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) { o += d[c >> 4]; o += d[c & 15]; }
  return o;
}

class Golden : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    path_ = zf::testing::ModelPath(GetParam());
    if (path_.empty()) GTEST_SKIP() << "model '" << GetParam() << "' not found: run scripts/fetch_models.sh";
    golden_ = LoadGolden(GetParam());
    ASSERT_FALSE(golden_.is_null());
    zf_model_params p;
    zf_model_params_init(&p, sizeof p);
    ASSERT_EQ(zf_model_load(path_.c_str(), &p, &model_.m), ZF_OK) << zf_last_error();
  }
  std::string path_;
  json golden_;
  Model model_;
};

TEST_P(Golden, GreedyTokensAndLogitsMatchReference) {
  zf_model_summary info;
  info.struct_size = sizeof info;
  ASSERT_EQ(zf_model_info(model_.m, &info), ZF_OK);
  const size_t n_vocab = static_cast<size_t>(info.n_vocab);
  double max_diff = 0, worst_tie = 0;
  size_t exact = 0, total = 0;
  for (const json& p : golden_["prompts"]) {
    const std::string text = p["text"];
    std::vector<int32_t> ids = Tokenize(model_.m, text, ZF_TOKENIZE_ADD_SPECIAL);
    ASSERT_EQ(ids, p["prompt_ids"].get<std::vector<int32_t>>()) << text;

    zf_session_params sp;
    zf_session_params_init(&sp, sizeof sp);
    sp.n_ctx = 512;
    zf_session* s = nullptr;
    ASSERT_EQ(zf_session_create(model_.m, &sp, &s), ZF_OK) << zf_last_error();
    std::vector<float> logits(n_vocab);
    const std::vector<int32_t> greedy = p["greedy"];
    std::vector<int32_t> ours;
    std::vector<int32_t> feed = ids;
    size_t topk_i = 0;
    for (size_t step = 0; step < greedy.size(); ++step) {
      ASSERT_EQ(zf_session_eval(s, feed.data(), feed.size(), logits.data(), logits.size()), ZF_OK)
          << zf_last_error();
      int32_t best = 0;
      for (size_t v = 1; v < n_vocab; ++v) if (logits[v] > logits[best]) best = static_cast<int32_t>(v);
      ours.push_back(best);
      ++total;
      if (best == greedy[step]) {
        ++exact;
      } else {
        const double gap = logits[best] - logits[greedy[step]];
        worst_tie = std::max(worst_tie, gap);
        EXPECT_LE(gap, kTieMargin) << text << " step " << step << ": ours " << best
                                   << ", reference " << greedy[step] << " is not a near-tie";
      }
      const json& tk = p["topk"];
      if (topk_i < tk.size() && tk[topk_i]["step"] == step) {
        const std::vector<int32_t> tids = tk[topk_i]["ids"];
        const std::vector<double> tl = tk[topk_i]["logits"];
        double offset = 0;  // softmax is shift-invariant: compare after removing the mean shift
        for (size_t k = 0; k < tids.size(); ++k) offset += (logits[tids[k]] - tl[k]) / tids.size();
        for (size_t k = 0; k < tids.size(); ++k) {
          double d = std::fabs(logits[tids[k]] - tl[k] - offset);
          max_diff = std::max(max_diff, d);
          EXPECT_LE(d, kLogitTolerance) << text << " step " << step << " id " << tids[k];
        }
        ++topk_i;
      }
      feed.assign(1, greedy[step]);  // teacher forcing
    }
    zf_session_free(s);
  }
  EXPECT_GE(double(exact) / double(total), kMinExactFraction);
  std::printf("[ golden   ] %s: %zu/%zu greedy tokens identical, worst near-tie gap %.3f (margin %.2f), "
              "max centered |logit diff| at top-5 %.3f (tolerance %.2f)\n",
              GetParam(), exact, total, worst_tie, kTieMargin, max_diff, kLogitTolerance);
}

TEST_P(Golden, TokenizerMatchesReference) {
  for (const json& t : golden_["tokenizer"]) {
    const std::string text = t["text"];
    std::vector<int32_t> plain = Tokenize(model_.m, text, 0);
    EXPECT_EQ(plain, t["plain"].get<std::vector<int32_t>>()) << "plain: '" << text << "'";
    std::vector<int32_t> special =
        Tokenize(model_.m, text, ZF_TOKENIZE_ADD_SPECIAL | ZF_TOKENIZE_PARSE_SPECIAL);
    EXPECT_EQ(special, t["special"].get<std::vector<int32_t>>()) << "special: '" << text << "'";
    EXPECT_EQ(Detokenize(model_.m, t["plain"].get<std::vector<int32_t>>(), 0),
              t["detok_plain"].get<std::string>()) << text;
    EXPECT_EQ(Detokenize(model_.m, t["special"].get<std::vector<int32_t>>(), ZF_DETOKENIZE_REMOVE_SPECIAL),
              t["detok_special_removed"].get<std::string>()) << text;
    const std::vector<int32_t> sids = t["special"];
    const std::vector<std::string> pieces = t["pieces_render_special_hex"];
    ASSERT_EQ(pieces.size(), sids.size());
    for (size_t i = 0; i < sids.size(); ++i) {
      EXPECT_EQ(Hex(Piece(model_.m, sids[i], ZF_DETOKENIZE_RENDER_SPECIAL)), pieces[i]) << "token " << sids[i];
    }
  }
}

// The golden conversations rendered by jinja2 with the template the library picks for the model
// (tests/data/chat_templates/golden_chat.json, scripts/reference/record_templates.py): SmolLM2's
// own template adds its default system prompt where llama.cpp's built-in ChatML does not.
TEST_P(Golden, ChatTemplateMatchesReference) {
  std::ifstream jf(std::string(ZF_TEST_DATA_DIR) + "/chat_templates/golden_chat.json");
  const json rendered = json::parse(jf)[GetParam()];
  size_t k = 0;
  for (const json& c : golden_["chat"]) {
    std::vector<std::string> roles, contents;
    for (const json& m : c["messages"]) {
      roles.push_back(m["role"]);
      contents.push_back(m["content"]);
    }
    std::vector<zf_chat_message> msgs;
    for (size_t i = 0; i < roles.size(); ++i) msgs.push_back({roles[i].c_str(), contents[i].c_str()});
    std::vector<char> buf(1 << 16);
    size_t needed = 0;
    ASSERT_EQ(zf_chat_apply_template(model_.m, msgs.data(), msgs.size(), ZF_CHAT_ADD_ASSISTANT,
                                     buf.data(), buf.size(), &needed), ZF_OK) << zf_last_error();
    ASSERT_LT(k, rendered.size());
    EXPECT_EQ(std::string(buf.data(), needed - 1), rendered[k++].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(RealModels, Golden, ::testing::Values("gemma3", "smollm2"));

}  // namespace

// LoRA adapters through the C API (zf_lora_load, zf_lora_info, zf_session_set_loras) on SmolLM2
// (Q4_1) with random adapters in llama.cpp's layout (scripts/synth_lora.py): the loader's
// checks and messages; scale 0 and a cleared set give the base model bit for bit; the logits of
// the adapted model against llama.cpp's with the same adapters (tests/data/golden/lora, recorded
// by scripts/reference/record_lora_goldens.sh) within the 4-bit family tolerances with the greedy
// tokens identical, one adapter and two at once; one token at a time = chunks = prefix-cached
// prefill with an adapter; handles freed in any order; batched decode with different adapters per
// session equals each session alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "capi/test_handles.h"
#include "common/test_models.h"
#include "zerfoo.h"

namespace {

using namespace zf::capitest;  // NOLINT: the shared handle helpers
using Json = nlohmann::json;

struct LoraDeleter {
  void operator()(zf_lora_adapter* a) const { zf_lora_free(a); }
};
using LoraPtr = std::unique_ptr<zf_lora_adapter, LoraDeleter>;

// Writes an adapter for `base` with scripts/synth_lora.py's arguments into the test's temp dir,
// named by the process too: ctest runs each test in its own process, two at once, and the "a"
// and "ab" cases both write adapter a (one truncated the file while the other loaded it).
// They are removed when the process exits.
struct WrittenFiles {
  std::vector<std::string> paths;
  ~WrittenFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

std::string Synth(const std::string& base, const std::string& name, const std::vector<std::string>& args) {
  static WrittenFiles written;
  const std::string out = ::testing::TempDir() + "/lora-" + name + "-" + std::to_string(getpid()) + ".gguf";
  written.paths.push_back(out);
  std::string cmd = "python3 '" ZF_SOURCE_DIR "/scripts/synth_lora.py' '" + base + "' '" + out + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " >/dev/null";
  if (std::system(cmd.c_str()) != 0) return std::string();
  return out;
}

Json Golden() {
  std::ifstream f(ZF_TEST_DATA_DIR "/golden/lora/smollm2.json");
  EXPECT_TRUE(f.good()) << "tests/data/golden/lora/smollm2.json missing";
  return Json::parse(f);
}

std::vector<std::string> SynthArgs(const Json& g, const char* name) {
  return g["synth"][name].get<std::vector<std::string>>();
}

LoraPtr LoadLora(zf_model* m, const std::string& path) {
  zf_lora_adapter* a = nullptr;
  EXPECT_EQ(zf_lora_load(m, path.c_str(), &a), ZF_OK) << zf_last_error();
  return LoraPtr(a);
}

size_t Vocab(zf_model* m) {
  zf_model_summary s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  EXPECT_EQ(zf_model_info(m, &s), ZF_OK);
  return size_t(s.n_vocab);
}

void SetLoras(zf_session* s, const std::vector<const zf_lora_adapter*>& a, const std::vector<float>& scales) {
  ASSERT_EQ(zf_session_set_loras(s, a.data(), scales.data(), a.size()), ZF_OK) << zf_last_error();
}

// Every position's logits, tokens evaluated one at a time.
std::vector<std::vector<float>> EvalEach(zf_session* s, const std::vector<int32_t>& toks, size_t nv) {
  std::vector<std::vector<float>> out;
  for (int32_t t : toks) {
    std::vector<float> l(nv);
    EXPECT_EQ(zf_session_eval(s, &t, 1, l.data(), nv), ZF_OK) << zf_last_error();
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<float> EvalAll(zf_session* s, const std::vector<int32_t>& toks, size_t nv) {
  std::vector<float> l(nv);
  EXPECT_EQ(zf_session_eval(s, toks.data(), toks.size(), l.data(), nv), ZF_OK) << zf_last_error();
  return l;
}

int32_t Argmax(const std::vector<float>& l) { return int32_t(std::max_element(l.begin(), l.end()) - l.begin()); }

// n token ids of text-like variety.
std::vector<int32_t> Tokens(size_t n, int32_t salt) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 200 + int32_t((i * 7919 + size_t(salt) * 104729) % 9000);
  return t;
}

// The family tests' comparison: the cosine of the mean-centred logits (z-scores) over the golden's
// sampled ids, and the logits' standard deviation.
struct Compare {
  double cosine;
  double std_rel;
};
Compare CompareToGolden(const std::vector<float>& l, const Json& pos, const std::vector<int32_t>& sample) {
  double sum = 0, sq = 0;
  for (float v : l) sum += v;
  const double mean = sum / double(l.size());
  for (float v : l) sq += (v - mean) * (v - mean);
  const double sd = std::sqrt(sq / double(l.size()));
  const std::vector<double> ref = pos["z"].get<std::vector<double>>();
  double dot = 0, nz = 0, nu = 0;
  for (size_t i = 0; i < sample.size(); ++i) {
    const double z = (l[size_t(sample[i])] - mean) / sd;
    dot += z * ref[i];
    nz += z * z;
    nu += ref[i] * ref[i];
  }
  const double ref_sd = pos["std"].get<double>();
  return {dot / std::sqrt(nz * nu), std::fabs(sd - ref_sd) / ref_sd};
}

}  // namespace

TEST(Lora, LoadAndInfo) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const std::string a_path = Synth(path, "a", SynthArgs(g, "a"));
  const std::string b_path = Synth(path, "b", SynthArgs(g, "b"));
  ASSERT_FALSE(a_path.empty() || b_path.empty()) << "scripts/synth_lora.py failed";
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  LoraPtr a = LoadLora(m.get(), a_path);
  LoraPtr b = LoadLora(m.get(), b_path);
  ASSERT_TRUE(a && b);
  zf_lora_summary s;
  s.struct_size = sizeof s;
  ASSERT_EQ(zf_lora_info(a.get(), &s), ZF_OK) << zf_last_error();
  EXPECT_EQ(s.struct_size, sizeof s);
  EXPECT_EQ(s.rank, 8);
  EXPECT_EQ(s.alpha, 16.0f);
  EXPECT_EQ(s.n_weights, 30u * 7u);  // 30 layers x q, k, v, o, gate, up, down
  ASSERT_EQ(zf_lora_info(b.get(), &s), ZF_OK);
  EXPECT_EQ(s.rank, 4);
  EXPECT_EQ(s.alpha, 8.0f);
  EXPECT_EQ(s.n_weights, 30u * 3u);
  // An older caller's smaller struct: only its fields are written.
  zf_lora_summary small;
  std::memset(&small, 0x5a, sizeof small);
  small.struct_size = 8;
  ASSERT_EQ(zf_lora_info(a.get(), &small), ZF_OK);
  EXPECT_EQ(small.rank, 8);
  uint32_t untouched;
  std::memset(&untouched, 0x5a, sizeof untouched);
  EXPECT_EQ(small.n_weights, untouched);
}

TEST(Lora, LoadErrors) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  struct Case {
    const char* defect;
    zf_status status;
    const char* message;  // a part of zf_last_error()
  };
  const Case cases[] = {
      {"missing_b", ZF_ERR_FORMAT, "has .lora_a but no .lora_b"},
      {"bad_shape", ZF_ERR_INVALID_ARGUMENT, "but lora_a is [576, 8] and lora_b [9, "},
      {"arch", ZF_ERR_INVALID_ARGUMENT, "the adapter is for architecture 'gpt2', the model is 'llama'"},
      {"no_tensor", ZF_ERR_INVALID_ARGUMENT, "the model has no tensor 'blk.35.attn_q.weight'"},
      {"not_adapter", ZF_ERR_FORMAT, "general.type is 'model', not 'adapter'"},
      {"embd", ZF_ERR_UNSUPPORTED, "adapting 'token_embd.weight' is not supported"},
      {"bad_suffix", ZF_ERR_FORMAT, "tensor 'blk.0.attn_q.weight.lora_c' is neither a .lora_a nor a .lora_b"},
  };
  for (const Case& c : cases) {
    const std::string f = Synth(path, c.defect, {"--layers", "0,1", "--defect", c.defect});
    ASSERT_FALSE(f.empty());
    zf_lora_adapter* a = reinterpret_cast<zf_lora_adapter*>(1);
    EXPECT_EQ(zf_lora_load(m.get(), f.c_str(), &a), c.status) << c.defect << ": " << zf_last_error();
    EXPECT_EQ(a, nullptr);
    EXPECT_NE(std::string(zf_last_error()).find(c.message), std::string::npos) << c.defect << ": " << zf_last_error();
  }
  zf_lora_adapter* a = nullptr;
  EXPECT_EQ(zf_lora_load(m.get(), "/nonexistent/adapter.gguf", &a), ZF_ERR_IO);
  EXPECT_EQ(zf_lora_load(nullptr, "x", &a), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_lora_load(m.get(), nullptr, &a), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_lora_load(m.get(), "x", nullptr), ZF_ERR_INVALID_ARGUMENT);
  // A model file is not an adapter.
  EXPECT_EQ(zf_lora_load(m.get(), path.c_str(), &a), ZF_ERR_FORMAT);
  // Vocabulary-only models have no weights to adapt.
  const std::string ok = Synth(path, "ok01", {"--layers", "0,1"});
  ModelPtr vocab = Load(path, ZF_MODEL_VOCAB_ONLY);
  EXPECT_EQ(zf_lora_load(vocab.get(), ok.c_str(), &a), ZF_ERR_INVALID_ARGUMENT);
  // Set: another model's adapter, NULL arrays, a scale that is not finite.
  ModelPtr other = Load(path);
  LoraPtr mine = LoadLora(m.get(), ok);
  SessionPtr s = NewSession(other.get());
  const zf_lora_adapter* list[1] = {mine.get()};
  const float one = 1.0f, nan = std::nanf("");
  EXPECT_EQ(zf_session_set_loras(s.get(), list, &one, 1), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zf_last_error()).find("another model"), std::string::npos) << zf_last_error();
  SessionPtr s2 = NewSession(m.get());
  EXPECT_EQ(zf_session_set_loras(s2.get(), list, &nan, 1), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_set_loras(s2.get(), nullptr, &one, 1), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_set_loras(s2.get(), list, nullptr, 1), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_set_loras(nullptr, list, &one, 1), ZF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zf_session_set_loras(s2.get(), nullptr, nullptr, 0), ZF_OK);
}

// Scale 0 and a cleared set are the base model, bit for bit; a nonzero scale is not.
TEST(Lora, ScaleZeroIsBase) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const std::string a_path = Synth(path, "a", SynthArgs(g, "a"));
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  LoraPtr a = LoadLora(m.get(), a_path);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = g["cases"]["a"]["tokens"].get<std::vector<int32_t>>();
  SessionPtr base = NewSession(m.get());
  const auto want = EvalEach(base.get(), toks, nv);
  SessionPtr s = NewSession(m.get());
  SetLoras(s.get(), {a.get()}, {0.0f});
  const auto got = EvalEach(s.get(), toks, nv);
  for (size_t p = 0; p < toks.size(); ++p) {
    ASSERT_EQ(std::memcmp(got[p].data(), want[p].data(), nv * sizeof(float)), 0) << "scale 0, position " << p;
  }
  // Adapted, then cleared and reset: the base again.
  zf_session_reset(s.get());
  SetLoras(s.get(), {a.get()}, {1.0f});
  const std::vector<float> adapted = EvalAll(s.get(), toks, nv);
  EXPECT_NE(std::memcmp(adapted.data(), want.back().data(), nv * sizeof(float)), 0);
  ASSERT_EQ(zf_session_set_loras(s.get(), nullptr, nullptr, 0), ZF_OK);
  zf_session_reset(s.get());
  const std::vector<float> cleared = EvalAll(s.get(), toks, nv);
  EXPECT_EQ(std::memcmp(cleared.data(), want.back().data(), nv * sizeof(float)), 0);
}

// The adapted model's logits against llama.cpp's with the same adapters: every position within
// the 4-bit family tolerances (cosine of the centred logits >= 0.99, standard deviation within
// 3%), and every greedy token the same but at near-ties. The reference's tokens are fed (teacher
// forcing), so one near-tie does not change the positions after it.
constexpr double kTieMargin = 1.25;  // tests/capi/golden_test.cpp's
class LoraReference : public ::testing::TestWithParam<const char*> {};

TEST_P(LoraReference, MatchesLlamaCpp) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const Json& c = g["cases"][GetParam()];
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  ASSERT_EQ(nv, c["n_vocab"].get<size_t>());
  std::vector<LoraPtr> owned;
  std::vector<const zf_lora_adapter*> list;
  std::vector<float> scales;
  for (const Json& a : c["adapters"]) {
    const std::string name = a["file"].get<std::string>().substr(0, 1);  // "a.gguf" -> "a"
    const std::string f = Synth(path, name, SynthArgs(g, name.c_str()));
    ASSERT_FALSE(f.empty());
    owned.push_back(LoadLora(m.get(), f));
    ASSERT_TRUE(owned.back());
    list.push_back(owned.back().get());
    scales.push_back(a["scale"].get<float>());
  }
  const std::vector<int32_t> toks = c["tokens"].get<std::vector<int32_t>>();
  const std::vector<int32_t> sample = c["sample_ids"].get<std::vector<int32_t>>();
  const size_t n_prompt = c["n_prompt"].get<size_t>();
  SessionPtr s = NewSession(m.get());
  SetLoras(s.get(), list, scales);
  const auto got = EvalEach(s.get(), toks, nv);
  double worst_cos = 1.0, worst_std = 0.0, worst_tie = 0.0;
  size_t steps = 0, identical = 0;
  for (size_t p = 0; p < toks.size(); ++p) {
    const Compare r = CompareToGolden(got[p], c["positions"][p], sample);
    worst_cos = std::min(worst_cos, r.cosine);
    worst_std = std::max(worst_std, r.std_rel);
    EXPECT_GE(r.cosine, 0.99) << "position " << p;
    EXPECT_LE(r.std_rel, 0.03) << "position " << p;
    // Greedy: each generated token (and the one after the last) is zerfoo's argmax too, except at
    // near-ties (golden_test.cpp's rule and margin: the engines' rounding noise, measured on the
    // base model too, moves logits by up to ~0.3 here), where the reference's token must score
    // within kTieMargin of our best.
    if (p + 1 >= n_prompt) {
      const int32_t want = p + 1 < toks.size() ? toks[p + 1] : c["next"].get<int32_t>();
      const int32_t best = Argmax(got[p]);
      ++steps;
      if (best == want) {
        ++identical;
      } else {
        const double gap = got[p][size_t(best)] - got[p][size_t(want)];
        worst_tie = std::max(worst_tie, gap);
        EXPECT_LE(gap, kTieMargin) << "greedy token after position " << p << ": ours " << best << ", reference "
                                   << want << " is not a near-tie";
      }
    }
  }
  // The adapters matter: the base model's logits are further from the reference than the bar.
  SessionPtr base = NewSession(m.get());
  const auto plain = EvalEach(base.get(), toks, nv);
  double base_worst = 1.0;
  for (size_t p = 0; p < toks.size(); ++p) {
    base_worst = std::min(base_worst, CompareToGolden(plain[p], c["positions"][p], sample).cosine);
  }
  EXPECT_LT(base_worst, 0.99) << "the adapters hardly change the logits: the comparison would not see them";
  // Nearly every greedy token is identical (a near-tie now and then, not a drift).
  EXPECT_GE(identical + 2, steps);
  std::printf("[ lora     ] case %s: worst cosine %.6f, worst std diff %.3f%%, %zu/%zu greedy tokens identical "
              "(worst near-tie gap %.3f), base model: worst cosine %.6f\n",
              GetParam(), worst_cos, 100 * worst_std, identical, steps, worst_tie, base_worst);
}

INSTANTIATE_TEST_SUITE_P(Golden, LoraReference, ::testing::Values("a", "ab"));

// With an adapter: a prompt evaluated in one call, in chunks of 7, one token at a time, and after
// blocks taken from the prefix cache (from a session with the same adapter) gives the same bits;
// a session without the adapter takes none of those blocks, and one with it takes them.
TEST(Lora, ExactPrefillAndPrefixCache) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const std::string a_path = Synth(path, "a", SynthArgs(g, "a"));
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.prefix_cache_mib = 64;
  zf_model* raw = nullptr;
  ASSERT_EQ(zf_model_load(path.c_str(), &mp, &raw), ZF_OK) << zf_last_error();
  ModelPtr m(raw);
  LoraPtr a = LoadLora(m.get(), a_path);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(150, 3);
  auto hits = [&] {
    zf_cache_info c;
    c.struct_size = sizeof c;
    EXPECT_EQ(zf_model_cache_info(m.get(), &c), ZF_OK);
    return c.hit_tokens;
  };
  SessionPtr one = NewSession(m.get(), 1024);
  SetLoras(one.get(), {a.get()}, {0.75f});
  const std::vector<float> want = EvalEach(one.get(), toks, nv).back();  // stores 2 blocks
  SessionPtr chunks = NewSession(m.get(), 1024);
  SetLoras(chunks.get(), {a.get()}, {0.75f});
  const uint64_t h0 = hits();
  std::vector<float> got;
  for (size_t i = 0; i < toks.size(); i += 7) {
    const std::vector<int32_t> c(toks.begin() + std::ptrdiff_t(i), toks.begin() + std::ptrdiff_t(std::min(i + 7, toks.size())));
    got = EvalAll(chunks.get(), c, nv);
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "chunks of 7";
  // The base model's session: another key, no hit, the base logits.
  SessionPtr base = NewSession(m.get(), 1024);
  const std::vector<float> base_l = EvalAll(base.get(), toks, nv);
  EXPECT_NE(std::memcmp(base_l.data(), want.data(), nv * sizeof(float)), 0);
  const uint64_t h1 = hits();
  // Another scale: another key, no hit.
  SessionPtr other = NewSession(m.get(), 1024);
  SetLoras(other.get(), {a.get()}, {0.5f});
  (void)EvalAll(other.get(), toks, nv);
  EXPECT_EQ(hits(), h1);
  // The same adapter and scale: two blocks and the stored tail from the cache (every prompt
  // token but the last), the same bits.
  SessionPtr cached = NewSession(m.get(), 1024);
  SetLoras(cached.get(), {a.get()}, {0.75f});
  const std::vector<float> from_cache = EvalAll(cached.get(), toks, nv);
  EXPECT_EQ(hits(), h1 + toks.size() - 1);
  EXPECT_EQ(std::memcmp(from_cache.data(), want.data(), nv * sizeof(float)), 0) << "after cached blocks";
  (void)h0;
  // A conversation computed under another set neither takes nor stores blocks.
  SessionPtr mixed = NewSession(m.get(), 1024);
  (void)EvalAll(mixed.get(), std::vector<int32_t>(toks.begin(), toks.begin() + 10), nv);
  SetLoras(mixed.get(), {a.get()}, {0.75f});
  const uint64_t h2 = hits();
  (void)EvalAll(mixed.get(), std::vector<int32_t>(toks.begin() + 10, toks.end()), nv);
  EXPECT_EQ(hits(), h2);
}

// Handles freed in any order: the adapter keeps its model, a session keeps its adapters.
TEST(Lora, FreeOrder) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const std::string a_path = Synth(path, "a", SynthArgs(g, "a"));
  ModelPtr m = Load(path);
  ASSERT_TRUE(m);
  const size_t nv = Vocab(m.get());
  const std::vector<int32_t> toks = Tokens(20, 5);
  LoraPtr a = LoadLora(m.get(), a_path);
  SessionPtr ref = NewSession(m.get());
  SetLoras(ref.get(), {a.get()}, {1.0f});
  const std::vector<float> want = EvalAll(ref.get(), toks, nv);
  SessionPtr s = NewSession(m.get());
  SetLoras(s.get(), {a.get()}, {1.0f});
  a.reset();  // applied: the session keeps it
  const std::vector<float> got = EvalAll(s.get(), toks, nv);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0);
  // The model freed before its adapter.
  zf_lora_adapter* b = nullptr;
  ASSERT_EQ(zf_lora_load(m.get(), a_path.c_str(), &b), ZF_OK);
  ref.reset();
  s.reset();
  m.reset();
  zf_lora_summary info;
  info.struct_size = sizeof info;
  EXPECT_EQ(zf_lora_info(b, &info), ZF_OK);
  zf_lora_free(b);
  zf_lora_free(nullptr);
}

// Batched decode (zf_model_params.max_batch): four sessions decoding at once from four threads,
// with different adapter sets (none, a, b, a + b), each give the logits they give alone on a
// model without batching, bit for bit: their rows share steps, each with its own low-rank products.
TEST(Lora, BatchedMixedAdaptersEqualAlone) {
  ZF_REQUIRE_MODEL(path, "smollm2");
  const Json g = Golden();
  const std::string a_path = Synth(path, "a", SynthArgs(g, "a"));
  const std::string b_path = Synth(path, "b", SynthArgs(g, "b"));
  ModelPtr solo = Load(path);
  ModelPtr batched = Load(path, 0, 8);
  ASSERT_TRUE(solo && batched);
  const size_t nv = Vocab(solo.get());
  LoraPtr sa = LoadLora(solo.get(), a_path), sb = LoadLora(solo.get(), b_path);
  LoraPtr ba = LoadLora(batched.get(), a_path), bb = LoadLora(batched.get(), b_path);
  struct Set {
    std::vector<int> which;  // 0 = a, 1 = b
    std::vector<float> scales;
  };
  const Set sets[4] = {{{}, {}}, {{0}, {1.0f}}, {{1}, {0.7f}}, {{0, 1}, {0.5f, 1.0f}}};
  const auto apply = [](zf_session* s, const Set& set, zf_lora_adapter* a, zf_lora_adapter* b) {
    std::vector<const zf_lora_adapter*> list;
    for (int w : set.which) list.push_back(w == 0 ? a : b);
    ASSERT_EQ(zf_session_set_loras(s, list.data(), set.scales.data(), list.size()), ZF_OK) << zf_last_error();
  };
  constexpr size_t kPrompt = 12, kSteps = 24;
  std::vector<std::vector<std::vector<float>>> want(4), got(4);
  for (int i = 0; i < 4; ++i) {
    SessionPtr s = NewSession(solo.get());
    apply(s.get(), sets[i], sa.get(), sb.get());
    const std::vector<int32_t> prompt = Tokens(kPrompt, i + 1);
    std::vector<float> l = EvalAll(s.get(), prompt, nv);
    for (size_t k = 0; k < kSteps; ++k) {
      int32_t t = Argmax(l);
      ASSERT_EQ(zf_session_eval(s.get(), &t, 1, l.data(), nv), ZF_OK);
      want[size_t(i)].push_back(l);
    }
  }
  std::vector<SessionPtr> sessions;
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(NewSession(batched.get()));
    apply(sessions.back().get(), sets[i], ba.get(), bb.get());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      zf_session* s = sessions[size_t(i)].get();
      std::vector<float> l = EvalAll(s, Tokens(kPrompt, i + 1), nv);
      for (size_t k = 0; k < kSteps; ++k) {
        int32_t t = Argmax(l);
        EXPECT_EQ(zf_session_eval(s, &t, 1, l.data(), nv), ZF_OK);
        got[size_t(i)].push_back(l);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(got[i].size(), kSteps);
    for (size_t k = 0; k < kSteps; ++k) {
      ASSERT_EQ(std::memcmp(got[i][k].data(), want[i][k].data(), nv * sizeof(float)), 0)
          << "session " << i << " (adapter set " << i << "), step " << k;
    }
  }
}

// Every supported family on a tiny random F32 model built here in the family's GGUF layout
// (doc/families.md): the engine's logits at every position, through prefill and through
// token-by-token decode, against the plain-loop forward pass of reference_forward.h driven by the
// same description. This checks each family's blocks (fused views, QK-norms, no-rope layers,
// multipliers, softcaps, sliding windows, LongRoPE factors, experts) on every machine in CI;
// tests/family checks the descriptions themselves against llama.cpp's recordings.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gguf_builder.h"
#include "engine/backend.h"
#include "model/forward.h"
#include "model/forward_pool.h"
#include "model/model.h"
#include "model/registry.h"
#include "reference_forward.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"

namespace zf::model {
namespace {

using namespace zf::gguf::testutil;  // NOLINT: test builder vocabulary

struct Spec {
  std::string name, arch;
  int64_t E = 64, L = 2, H = 4, Hkv = 2, hd = 16, F = 96, V = 48;
  int64_t n_rot = 0;  // 0 = hd
  bool key_length = false, tied = false, qkv_bias = false, out_bias = false, fused_qkv = false, fused_up = false;
  bool qk_head = false, qk_full = false, pre_norms = true, post_norms = false, rope_freqs = false, longrope = false;
  int64_t experts = 0, used = 0, F_exp = 0;
  // gpt-oss's layout: attn_sinks, attn_output.bias, the pre-FFN norm as post_attention_norm,
  // router and expert biases (gate/up biases of sd 4, so some pre-activations pass the clamp 7).
  bool gpt_oss = false;
  std::vector<std::pair<std::string, Val>> kv;  // family keys, without the "<arch>." prefix
  // A family whose layout the fields above cannot say builds its file itself.
  std::vector<uint8_t> (*custom)(const Spec&) = nullptr;
  std::vector<int64_t> conv_layers;  // LFM2's short-convolution layers (head_count_kv 0), kernel l_cache
  int64_t l_cache = 3;
  int64_t dense_lead = 0;  // MoE models: leading dense layers
  bool probs_bias = false;  // exp_probs_b.bias on the MoE layers
  // Granite 4.0 hybrid: Mamba-2 layers (head_count_kv 0) of d_inner 2E, 4 heads of 32, 2 groups,
  // state 8, kernel 4; shared experts of F_shexp on MoE layers.
  std::vector<int64_t> ssm_layers;
  int64_t F_shexp = 0;
  int64_t ssm_group_count = -1;  // the ssm.group_count key's value when >= 0 (bad-file tests), 0 = no key
  bool mtp = false;  // Qwen 3.5: one multi-token-prediction block after the layers (nextn_predict_layers 1)
  // How tensor shapes are written: as listed, with trailing 1-dims dropped (llama-quantize,
  // through ggml_n_dims), or every 1-D tensor as [n, 1] (a converter writing a [1, n] torch weight).
  enum class Dims { kAsListed, kTrailingOnesDropped, kVectorsAsColumns } dims = Dims::kAsListed;
};

bool IsConvLayer(const Spec& s, int64_t il) {
  return std::find(s.conv_layers.begin(), s.conv_layers.end(), il) != s.conv_layers.end();
}
bool IsSsmLayer(const Spec& s, int64_t il) {
  return std::find(s.ssm_layers.begin(), s.ssm_layers.end(), il) != s.ssm_layers.end();
}
constexpr int64_t kSsmHeads = 4, kSsmGroups = 2, kSsmState = 8, kSsmConv = 4;

void PrintTo(const Spec& s, std::ostream* os) { *os << s.name; }

class Writer {
 public:
  explicit Writer(uint32_t seed, Spec::Dims dims = Spec::Dims::kAsListed) : rng_(seed), dims_(dims) {}
  // A tensor of normal values (mean, sd).
  void Add(GgufBuilder* b, const std::string& name, std::vector<int64_t> ne, float mean, float sd) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    if (dims_ == Spec::Dims::kTrailingOnesDropped) {
      while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    } else if (dims_ == Spec::Dims::kVectorsAsColumns && ne.size() == 1) {
      ne.push_back(1);
    }
    std::normal_distribution<float> dist(mean, sd);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng_);
    TensorSpec t;
    t.name = name;
    t.type = kTF32;
    t.ne = std::move(ne);
    t.data.resize(v.size() * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    b->Tensor(t);
  }
  void Mat(GgufBuilder* b, const std::string& name, int64_t in, int64_t out) {
    Add(b, name, {in, out}, 0.0f, 1.0f / std::sqrt(float(in)));
  }
  void Norm(GgufBuilder* b, const std::string& name, int64_t n) { Add(b, name, {n}, 1.0f, 0.1f); }

 private:
  std::mt19937 rng_;
  Spec::Dims dims_;
};

// The vocabulary every tiny model uses: SentencePiece pieces of no meaning.
void AddVocab(GgufBuilder* b, int64_t V) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int64_t i = 3; i < V; ++i) {
    tokens.push_back("\xE2\x96\x81t" + std::to_string(i));
    scores.push_back(-float(i));
    types.push_back(1);
  }
  b->Kv("tokenizer.ggml.model", val::Str("llama"))
      .Kv("tokenizer.ggml.tokens", val::StrArr(tokens))
      .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, scores))
      .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, types));
}

// A tiny dense Gemma 4 in its converter's layout: layers [sliding, sliding, full, sliding,
// full], the last two sharing the KV of layers 1 (sliding) and 2 (full); sliding layers 2 KV
// heads of 16, full layers 2 of 32 (KV rows 32 vs 64 wide); proportional rope on full layers (a
// quarter of the pairs rotate); no attn_v on full layers; 8 per-layer input floats per layer;
// a double-wide FFN on the sharing layers; layer_output_scale; window 4 < the 12 tokens.
// With s.experts (the 26B-A4B layout): 3 layers [sliding, sliding, full], no sharing, no
// per-layer inputs, experts with gate and up fused, a dense MLP beside them.
std::vector<uint8_t> BuildGemma4(const Spec& s) {
  GgufBuilder b;
  const std::string a = "gemma4";
  const bool moe = s.experts > 0;
  const int64_t E = s.E, L = moe ? 3 : 5, H = 4, P = moe ? 0 : 8, hd_swa = 16, hd_full = 32, n_shared = moe ? 0 : 2;
  const std::vector<uint8_t> swa = moe ? std::vector<uint8_t>{1, 1, 0} : std::vector<uint8_t>{1, 1, 0, 1, 0};
  std::vector<uint32_t> ff, hkv;
  for (int64_t il = 0; il < L; ++il) {
    ff.push_back(uint32_t(il >= L - n_shared ? 2 * s.F : s.F));
    hkv.push_back(2);
  }
  b.Kv("general.architecture", val::Str(a))
      .Kv(a + ".context_length", val::U32(64))
      .Kv(a + ".embedding_length", val::U32(uint32_t(E)))
      .Kv(a + ".block_count", val::U32(uint32_t(L)))
      .Kv(a + ".feed_forward_length", val::ArrOf<uint32_t>(kU32, ff))
      .Kv(a + ".attention.head_count", val::U32(uint32_t(H)))
      .Kv(a + ".attention.head_count_kv", val::ArrOf<uint32_t>(kU32, hkv))
      .Kv(a + ".attention.layer_norm_rms_epsilon", val::F32(1e-6f))
      .Kv(a + ".rope.freq_base", val::F32(1e6f))
      .Kv(a + ".rope.freq_base_swa", val::F32(10000.0f))
      .Kv(a + ".attention.key_length", val::U32(uint32_t(hd_full)))
      .Kv(a + ".attention.value_length", val::U32(uint32_t(hd_full)))
      .Kv(a + ".attention.key_length_swa", val::U32(uint32_t(hd_swa)))
      .Kv(a + ".attention.value_length_swa", val::U32(uint32_t(hd_swa)))
      .Kv(a + ".rope.dimension_count", val::U32(uint32_t(hd_full)))
      .Kv(a + ".rope.dimension_count_swa", val::U32(uint32_t(hd_swa)))
      .Kv(a + ".final_logit_softcapping", val::F32(3.0f))
      .Kv(a + ".attention.sliding_window", val::U32(4))
      .Kv(a + ".attention.sliding_window_pattern", val::ArrOf<uint8_t>(kBool, swa))
      .Kv(a + ".attention.shared_kv_layers", val::U32(uint32_t(n_shared)))
      .Kv(a + ".embedding_length_per_layer_input", val::U32(uint32_t(P)));
  if (moe) {
    b.Kv(a + ".expert_count", val::U32(uint32_t(s.experts)))
        .Kv(a + ".expert_used_count", val::U32(uint32_t(s.used)))
        .Kv(a + ".expert_feed_forward_length", val::U32(uint32_t(s.F_exp)));
  }
  AddVocab(&b, s.V);
  Writer w(uint32_t(std::hash<std::string>()(s.name)), s.dims);
  w.Add(&b, "token_embd.weight", {E, s.V}, 0.0f, 1.0f);
  if (P > 0) {
    w.Add(&b, "per_layer_token_embd.weight", {P * L, s.V}, 0.0f, 1.0f);
    w.Mat(&b, "per_layer_model_proj.weight", E, P * L);
    w.Norm(&b, "per_layer_proj_norm.weight", P);
  }
  w.Norm(&b, "output_norm.weight", E);
  {
    std::vector<float> f(size_t(hd_full / 2), 1e30f);
    for (int64_t i = 0; i < hd_full / 8; ++i) f[size_t(i)] = 1.0f;
    TensorSpec t;
    t.name = "rope_freqs.weight";
    t.type = kTF32;
    t.ne = {hd_full / 2};
    t.data.resize(f.size() * 4);
    std::memcpy(t.data.data(), f.data(), t.data.size());
    b.Tensor(t);
  }
  for (int64_t il = 0; il < L; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t hd = swa[size_t(il)] ? hd_swa : hd_full, F = ff[size_t(il)];
    w.Norm(&b, p + "attn_norm.weight", E);
    w.Mat(&b, p + "attn_q.weight", E, H * hd);
    w.Mat(&b, p + "attn_k.weight", E, 2 * hd);  // on the sharing layers too: bound, unused
    if (swa[size_t(il)]) w.Mat(&b, p + "attn_v.weight", E, 2 * hd);
    w.Norm(&b, p + "attn_q_norm.weight", hd);
    w.Norm(&b, p + "attn_k_norm.weight", hd);
    w.Mat(&b, p + "attn_output.weight", H * hd, E);
    w.Norm(&b, p + "post_attention_norm.weight", E);
    w.Norm(&b, p + "ffn_norm.weight", E);
    w.Mat(&b, p + "ffn_gate.weight", E, F);
    w.Mat(&b, p + "ffn_up.weight", E, F);
    w.Mat(&b, p + "ffn_down.weight", F, E);
    w.Norm(&b, p + "post_ffw_norm.weight", E);
    w.Add(&b, p + "layer_output_scale.weight", {1}, 1.0f, 0.3f);
    if (P > 0) {
      w.Mat(&b, p + "inp_gate.weight", E, P);
      w.Mat(&b, p + "proj.weight", P, E);
      w.Norm(&b, p + "post_norm.weight", E);
    }
    if (moe) {
      const int64_t fe = s.F_exp;
      w.Add(&b, p + "ffn_gate_inp.weight", {E, s.experts}, 0.0f, 0.5f);
      w.Norm(&b, p + "ffn_gate_inp.scale", E);
      w.Norm(&b, p + "pre_ffw_norm_2.weight", E);
      w.Norm(&b, p + "post_ffw_norm_1.weight", E);
      w.Norm(&b, p + "post_ffw_norm_2.weight", E);
      w.Add(&b, p + "ffn_gate_up_exps.weight", {E, 2 * fe, s.experts}, 0.0f, 1.0f / std::sqrt(float(E)));
      w.Add(&b, p + "ffn_down_exps.weight", {fe, E, s.experts}, 0.0f, 1.0f / std::sqrt(float(fe)));
      w.Add(&b, p + "ffn_down_exps.scale", {s.experts}, 1.0f, 0.3f);
    }
  }
  return b.Build();
}

// A tiny Qwen 3.5 in its converter's layout: 4 layers, gated DeltaNet on 0 and 2 (2 key heads,
// 4 value heads of 8 tiled over them, 4 taps; the dense model marks them with
// attention.recurrent_layers, the MoE one with full_attention_interval 2), gated attention on 1
// and 3 (attn_q rows per head [q | gate], per-head QK-norm, rope on 8 of 16 dims), every pre-FFN
// norm as post_attention_norm. With s.experts: softmax-routed experts plus the gated shared expert.
std::vector<uint8_t> BuildQwen35(const Spec& s) {
  GgufBuilder b;
  const std::string& a = s.arch;
  const int64_t E = s.E, L = 4, H = 4, Hkv = 2, hd = 16, d_conv = 4, Hk = 2, Hv = 4, dh = 8;
  const int64_t key_dim = Hk * dh, value_dim = Hv * dh, channels = 2 * key_dim + value_dim;
  const bool moe = s.experts > 0;
  b.Kv("general.architecture", val::Str(a))
      .Kv(a + ".context_length", val::U32(256))
      .Kv(a + ".embedding_length", val::U32(uint32_t(E)))
      .Kv(a + ".block_count", val::U32(uint32_t(L + (s.mtp ? 1 : 0))))
      .Kv(a + ".feed_forward_length", val::U32(uint32_t(s.F)))
      .Kv(a + ".attention.head_count", val::U32(uint32_t(H)))
      .Kv(a + ".attention.head_count_kv", val::U32(uint32_t(Hkv)))
      .Kv(a + ".attention.key_length", val::U32(uint32_t(hd)))
      .Kv(a + ".attention.value_length", val::U32(uint32_t(hd)))
      .Kv(a + ".attention.layer_norm_rms_epsilon", val::F32(1e-6f))
      .Kv(a + ".rope.freq_base", val::F32(10000.0f))
      .Kv(a + ".rope.dimension_count", val::U32(8))
      .Kv(a + ".rope.dimension_sections", val::ArrOf<int32_t>(kI32, std::vector<int32_t>{2, 1, 1, 0}))
      .Kv(a + ".ssm.conv_kernel", val::U32(uint32_t(d_conv)))
      .Kv(a + ".ssm.state_size", val::U32(uint32_t(dh)))
      .Kv(a + ".ssm.group_count", val::U32(uint32_t(Hk)))
      .Kv(a + ".ssm.time_step_rank", val::U32(uint32_t(Hv)))
      .Kv(a + ".ssm.inner_size", val::U32(uint32_t(value_dim)))
      .Kv(a + ".full_attention_interval", val::U32(moe ? 2 : 4));
  if (!moe) {
    std::vector<uint8_t> recurrent = {1, 0, 1, 0};
    if (s.mtp) recurrent.push_back(0);  // the converter writes one per block
    b.Kv(a + ".attention.recurrent_layers", val::ArrOf<uint8_t>(kBool, recurrent));
  }
  if (s.mtp) b.Kv(a + ".nextn_predict_layers", val::U32(1));
  if (moe) {
    b.Kv(a + ".expert_count", val::U32(uint32_t(s.experts)))
        .Kv(a + ".expert_used_count", val::U32(uint32_t(s.used)))
        .Kv(a + ".expert_feed_forward_length", val::U32(uint32_t(s.F_exp)))
        .Kv(a + ".expert_shared_feed_forward_length", val::U32(uint32_t(s.F)));
  }
  AddVocab(&b, s.V);
  Writer w(uint32_t(std::hash<std::string>()(s.name)), s.dims);
  w.Add(&b, "token_embd.weight", {E, s.V}, 0.0f, 1.0f);
  w.Norm(&b, "output_norm.weight", E);
  for (int64_t il = 0; il < L; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    w.Norm(&b, p + "attn_norm.weight", E);
    if (il % 2 == 0) {
      w.Mat(&b, p + "attn_qkv.weight", E, channels);
      w.Mat(&b, p + "attn_gate.weight", E, value_dim);
      w.Add(&b, p + "ssm_conv1d.weight", {d_conv, channels}, 0.0f, 0.5f);
      w.Add(&b, p + "ssm_dt.bias", {Hv}, -1.5f, 1.0f);
      w.Add(&b, p + "ssm_a", {Hv}, -2.0f, 0.5f);
      w.Mat(&b, p + "ssm_beta.weight", E, Hv);
      w.Mat(&b, p + "ssm_alpha.weight", E, Hv);
      w.Norm(&b, p + "ssm_norm.weight", dh);
      w.Mat(&b, p + "ssm_out.weight", value_dim, E);
    } else {
      w.Mat(&b, p + "attn_q.weight", E, 2 * H * hd);
      w.Mat(&b, p + "attn_k.weight", E, Hkv * hd);
      w.Mat(&b, p + "attn_v.weight", E, Hkv * hd);
      w.Norm(&b, p + "attn_q_norm.weight", hd);
      w.Norm(&b, p + "attn_k_norm.weight", hd);
      w.Mat(&b, p + "attn_output.weight", H * hd, E);
    }
    w.Norm(&b, p + "post_attention_norm.weight", E);
    if (moe) {
      const int64_t fe = s.F_exp;
      w.Add(&b, p + "ffn_gate_inp.weight", {E, s.experts}, 0.0f, 0.5f);
      w.Add(&b, p + "ffn_gate_exps.weight", {E, fe, s.experts}, 0.0f, 1.0f / std::sqrt(float(E)));
      w.Add(&b, p + "ffn_up_exps.weight", {E, fe, s.experts}, 0.0f, 1.0f / std::sqrt(float(E)));
      w.Add(&b, p + "ffn_down_exps.weight", {fe, E, s.experts}, 0.0f, 1.0f / std::sqrt(float(fe)));
      w.Add(&b, p + "ffn_gate_inp_shexp.weight", {E}, 0.0f, 0.3f);
      w.Mat(&b, p + "ffn_gate_shexp.weight", E, s.F);
      w.Mat(&b, p + "ffn_up_shexp.weight", E, s.F);
      w.Mat(&b, p + "ffn_down_shexp.weight", s.F, E);
    } else {
      w.Mat(&b, p + "ffn_gate.weight", E, s.F);
      w.Mat(&b, p + "ffn_up.weight", E, s.F);
      w.Mat(&b, p + "ffn_down.weight", s.F, E);
    }
  }
  if (s.mtp) {  // llama.cpp's qwen35 MTP block: a full-attention block plus the nextn projections
    const std::string p = "blk." + std::to_string(L) + ".";
    w.Norm(&b, p + "attn_norm.weight", E);
    w.Mat(&b, p + "attn_q.weight", E, 2 * H * hd);
    w.Mat(&b, p + "attn_k.weight", E, Hkv * hd);
    w.Mat(&b, p + "attn_v.weight", E, Hkv * hd);
    w.Norm(&b, p + "attn_q_norm.weight", hd);
    w.Norm(&b, p + "attn_k_norm.weight", hd);
    w.Mat(&b, p + "attn_output.weight", H * hd, E);
    w.Norm(&b, p + "post_attention_norm.weight", E);
    w.Mat(&b, p + "ffn_gate.weight", E, s.F);
    w.Mat(&b, p + "ffn_up.weight", E, s.F);
    w.Mat(&b, p + "ffn_down.weight", s.F, E);
    w.Mat(&b, p + "nextn.eh_proj.weight", 2 * E, E);
    w.Norm(&b, p + "nextn.enorm.weight", E);
    w.Norm(&b, p + "nextn.hnorm.weight", E);
    w.Norm(&b, p + "nextn.shared_head_norm.weight", E);
  }
  return b.Build();
}

std::vector<uint8_t> Build(const Spec& s) {
  if (s.custom != nullptr) return s.custom(s);
  GgufBuilder b;
  const std::string& a = s.arch;
  const int64_t hd = s.hd, nq = s.H * hd, nkv = s.Hkv * hd;
  b.Kv("general.architecture", val::Str(a))
      .Kv(a + ".context_length", val::U32(64))
      .Kv(a + ".embedding_length", val::U32(uint32_t(s.E)))
      .Kv(a + ".block_count", val::U32(uint32_t(s.L)))
      .Kv(a + ".feed_forward_length", val::U32(uint32_t(s.F)))
      .Kv(a + ".attention.head_count", val::U32(uint32_t(s.H)))
      .Kv(a + ".attention.head_count_kv", s.conv_layers.empty() && s.ssm_layers.empty() ? val::U32(uint32_t(s.Hkv)) : [&] {
        std::vector<int32_t> kv;
        for (int64_t il = 0; il < s.L; ++il) kv.push_back(IsConvLayer(s, il) || IsSsmLayer(s, il) ? 0 : int32_t(s.Hkv));
        return val::ArrOf<int32_t>(kI32, kv);
      }())
      .Kv(a + ".attention.layer_norm_rms_epsilon", val::F32(1e-5f))
      .Kv(a + ".rope.freq_base", val::F32(10000.0f));
  if (s.key_length) b.Kv(a + ".attention.key_length", val::U32(uint32_t(hd))).Kv(a + ".attention.value_length", val::U32(uint32_t(hd)));
  if (s.n_rot != 0) b.Kv(a + ".rope.dimension_count", val::U32(uint32_t(s.n_rot)));
  if (s.experts != 0) b.Kv(a + ".expert_count", val::U32(uint32_t(s.experts))).Kv(a + ".expert_used_count", val::U32(uint32_t(s.used)));
  for (const auto& kv : s.kv) b.Kv(a + "." + kv.first, kv.second);
  if (!s.ssm_layers.empty()) {
    b.Kv(a + ".ssm.conv_kernel", val::U32(uint32_t(kSsmConv)))
        .Kv(a + ".ssm.inner_size", val::U32(uint32_t(2 * s.E)))
        .Kv(a + ".ssm.state_size", val::U32(uint32_t(kSsmState)))
        .Kv(a + ".ssm.time_step_rank", val::U32(uint32_t(kSsmHeads)));
    const int64_t groups = s.ssm_group_count >= 0 ? s.ssm_group_count : kSsmGroups;
    if (groups > 0) b.Kv(a + ".ssm.group_count", val::U32(uint32_t(groups)));
  }
  if (s.F_shexp != 0) b.Kv(a + ".expert_shared_feed_forward_length", val::U32(uint32_t(s.F_shexp)));
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int64_t i = 3; i < s.V; ++i) {
    tokens.push_back("\xE2\x96\x81t" + std::to_string(i));
    scores.push_back(-float(i));
    types.push_back(1);
  }
  b.Kv("tokenizer.ggml.model", val::Str("llama"))
      .Kv("tokenizer.ggml.tokens", val::StrArr(tokens))
      .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, scores))
      .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, types));

  Writer w(uint32_t(std::hash<std::string>()(s.name)), s.dims);
  w.Add(&b, "token_embd.weight", {s.E, s.V}, 0.0f, 1.0f);
  w.Norm(&b, a == "lfm2" || a == "lfm2moe" ? "token_embd_norm.weight" : "output_norm.weight", s.E);
  if (!s.tied) w.Mat(&b, "output.weight", s.E, s.V);
  if (s.out_bias) w.Add(&b, "output.bias", {s.V}, 0.0f, 0.5f);
  const int64_t rot = s.n_rot != 0 ? s.n_rot : hd;
  if (s.rope_freqs) w.Add(&b, "rope_freqs.weight", {rot / 2}, 2.0f, 0.5f);
  if (s.longrope) {
    w.Add(&b, "rope_factors_long.weight", {rot / 2}, 3.0f, 0.5f);
    w.Add(&b, "rope_factors_short.weight", {rot / 2}, 1.0f, 0.1f);
  }
  for (int64_t il = 0; il < s.L; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const bool conv = IsConvLayer(s, il) || IsSsmLayer(s, il);
    if (IsSsmLayer(s, il)) {
      // The tensors follow a valid group count (bad ones are refused before tensors are read).
      const int64_t G = s.ssm_group_count > 0 && kSsmHeads % s.ssm_group_count == 0 ? s.ssm_group_count : kSsmGroups;
      const int64_t di = 2 * s.E, ch = di + 2 * G * kSsmState;
      w.Norm(&b, p + "attn_norm.weight", s.E);
      w.Mat(&b, p + "ssm_in.weight", s.E, di + ch + kSsmHeads);
      w.Add(&b, p + "ssm_conv1d.weight", {kSsmConv, ch}, 0.0f, 0.5f);
      w.Add(&b, p + "ssm_conv1d.bias", {ch}, 0.0f, 0.2f);
      w.Add(&b, p + "ssm_dt.bias", {kSsmHeads}, -1.0f, 1.0f);
      w.Add(&b, p + "ssm_a", {1, kSsmHeads}, -2.0f, 0.5f);
      w.Add(&b, p + "ssm_d", {1, kSsmHeads}, 1.0f, 0.3f);
      w.Add(&b, p + "ssm_norm.weight", {di / G, G}, 1.0f, 0.1f);
      w.Mat(&b, p + "ssm_out.weight", di, s.E);
    } else if (conv) {
      w.Norm(&b, p + "attn_norm.weight", s.E);
      w.Add(&b, p + "shortconv.conv.weight", {s.l_cache, s.E}, 0.0f, 0.5f);
      w.Mat(&b, p + "shortconv.in_proj.weight", s.E, 3 * s.E);
      w.Mat(&b, p + "shortconv.out_proj.weight", s.E, s.E);
    } else {
      if (s.pre_norms) w.Norm(&b, p + "attn_norm.weight", s.E);
      if (s.fused_qkv) {
        w.Mat(&b, p + "attn_qkv.weight", s.E, nq + 2 * nkv);
      } else {
        w.Mat(&b, p + "attn_q.weight", s.E, nq);
        w.Mat(&b, p + "attn_k.weight", s.E, nkv);
        w.Mat(&b, p + "attn_v.weight", s.E, nkv);
      }
      if (s.qkv_bias) {
        w.Add(&b, p + "attn_q.bias", {nq}, 0.0f, 0.3f);
        w.Add(&b, p + "attn_k.bias", {nkv}, 0.0f, 0.3f);
        w.Add(&b, p + "attn_v.bias", {nkv}, 0.0f, 0.3f);
      }
      if (s.qk_head) {
        w.Norm(&b, p + "attn_q_norm.weight", hd);
        w.Norm(&b, p + "attn_k_norm.weight", hd);
      }
      if (s.qk_full) {
        w.Norm(&b, p + "attn_q_norm.weight", nq);
        w.Norm(&b, p + "attn_k_norm.weight", nkv);
      }
      w.Mat(&b, p + "attn_output.weight", nq, s.E);
      if (s.gpt_oss) {
        w.Add(&b, p + "attn_output.bias", {s.E}, 0.0f, 0.3f);
        w.Add(&b, p + "attn_sinks.weight", {s.H}, 1.0f, 1.0f);
        w.Norm(&b, p + "post_attention_norm.weight", s.E);  // the pre-FFN norm
        const int64_t fe = s.F_exp;
        w.Add(&b, p + "ffn_gate_inp.bias", {s.experts}, 0.0f, 0.5f);
        w.Add(&b, p + "ffn_gate_exps.bias", {fe, s.experts}, 0.0f, 4.0f);
        w.Add(&b, p + "ffn_up_exps.bias", {fe, s.experts}, 0.0f, 4.0f);
        w.Add(&b, p + "ffn_down_exps.bias", {s.E, s.experts}, 0.0f, 0.3f);
      }
      if (s.post_norms) w.Norm(&b, p + "post_attention_norm.weight", s.E);
    }
    if (conv || (s.pre_norms && !s.gpt_oss)) w.Norm(&b, p + "ffn_norm.weight", s.E);
    if (s.experts != 0 && il >= s.dense_lead) {
      const int64_t fe = s.F_exp != 0 ? s.F_exp : s.F;
      w.Add(&b, p + "ffn_gate_inp.weight", {s.E, s.experts}, 0.0f, 0.5f);
      w.Add(&b, p + "ffn_gate_exps.weight", {s.E, fe, s.experts}, 0.0f, 1.0f / std::sqrt(float(s.E)));
      w.Add(&b, p + "ffn_up_exps.weight", {s.E, fe, s.experts}, 0.0f, 1.0f / std::sqrt(float(s.E)));
      w.Add(&b, p + "ffn_down_exps.weight", {fe, s.E, s.experts}, 0.0f, 1.0f / std::sqrt(float(fe)));
      if (s.probs_bias) w.Add(&b, p + "exp_probs_b.bias", {s.experts}, 0.0f, 0.3f);
      if (s.F_shexp != 0) {
        w.Mat(&b, p + "ffn_gate_shexp.weight", s.E, s.F_shexp);
        w.Mat(&b, p + "ffn_up_shexp.weight", s.E, s.F_shexp);
        w.Mat(&b, p + "ffn_down_shexp.weight", s.F_shexp, s.E);
      }
    } else if (s.fused_up) {
      w.Mat(&b, p + "ffn_up.weight", s.E, 2 * s.F);
      w.Mat(&b, p + "ffn_down.weight", s.F, s.E);
    } else {
      w.Mat(&b, p + "ffn_gate.weight", s.E, s.F);
      w.Mat(&b, p + "ffn_up.weight", s.E, s.F);
      w.Mat(&b, p + "ffn_down.weight", s.F, s.E);
    }
    if (s.post_norms) w.Norm(&b, p + "post_ffw_norm.weight", s.E);
  }
  return b.Build();
}

std::vector<Spec> Families() {
  std::vector<Spec> v;
  Spec s;
  s = Spec{};
  s.name = "llama"; s.arch = "llama"; s.rope_freqs = true;
  v.push_back(s);
  s = Spec{};
  s.name = "mixtral"; s.arch = "llama"; s.tied = true; s.experts = 4; s.used = 2; s.F = 48;
  v.push_back(s);
  s = Spec{};
  // Mistral Small 3.1 / 3.2's language model: llama blocks under its own name, Q narrower than
  // the model (32 heads of 128 in 5120 there).
  s.name = "mistral3"; s.arch = "mistral3"; s.H = 4; s.Hkv = 1; s.hd = 12; s.key_length = true;
  v.push_back(s);
  s = Spec{};
  s.name = "qwen2"; s.arch = "qwen2"; s.tied = true; s.qkv_bias = true; s.out_bias = true;
  v.push_back(s);
  s = Spec{};
  s.name = "qwen3"; s.arch = "qwen3"; s.H = 4; s.Hkv = 1; s.hd = 24; s.key_length = true; s.qk_head = true;
  v.push_back(s);
  s = Spec{};
  // Qwen2.5-VL / Qwen3-VL's language models: M-RoPE sections (text positions are equal in every
  // section, so the rotation is Qwen 2's / Qwen 3's); qwen3vl's deepstack only adds image rows.
  s.name = "qwen2vl"; s.arch = "qwen2vl"; s.tied = true; s.qkv_bias = true; s.out_bias = true;
  s.kv = {{"rope.dimension_sections", val::ArrOf<int32_t>(kI32, std::vector<int32_t>{2, 3, 3, 0})}};
  v.push_back(s);
  s = Spec{};
  s.name = "qwen3vl"; s.arch = "qwen3vl"; s.H = 4; s.Hkv = 1; s.hd = 24; s.key_length = true; s.qk_head = true;
  s.kv = {{"rope.dimension_sections", val::ArrOf<int32_t>(kI32, std::vector<int32_t>{4, 4, 4, 0})},
          {"n_deepstack_layers", val::U32(1)}};
  v.push_back(s);
  s = Spec{};
  s.name = "qwen3_yarn"; s.arch = "qwen3"; s.H = 4; s.Hkv = 1; s.hd = 24; s.key_length = true; s.qk_head = true;
  // Pairs 3..9 of 12 are blended (corr dims of 4096 positions, base 10000), the rest scaled or not.
  s.kv = {{"rope.scaling.type", val::Str("yarn")}, {"rope.scaling.factor", val::F32(4.0f)},
          {"rope.scaling.original_context_length", val::U32(4096)}};
  v.push_back(s);
  s = Spec{};
  s.name = "qwen3moe"; s.arch = "qwen3moe"; s.qk_head = true; s.experts = 6; s.used = 2; s.F_exp = 40;
  s.kv = {{"expert_feed_forward_length", val::U32(40)}};
  v.push_back(s);
  s = Spec{};
  s.name = "phi3"; s.arch = "phi3"; s.Hkv = 4; s.fused_qkv = true; s.fused_up = true; s.n_rot = 8; s.longrope = true;
  s.kv = {{"rope.scaling.attn_factor", val::F32(1.2f)}, {"rope.scaling.original_context_length", val::U32(32)},
          {"attention.sliding_window", val::U32(3)}};  // ignored, as by the reference
  v.push_back(s);
  s = Spec{};
  s.name = "gemma2"; s.arch = "gemma2"; s.L = 3; s.tied = true; s.post_norms = true; s.hd = 24; s.key_length = true;
  s.kv = {{"attention.sliding_window", val::U32(4)}, {"attn_logit_softcapping", val::F32(2.0f)},
          {"final_logit_softcapping", val::F32(3.0f)}};
  v.push_back(s);
  s = Spec{};
  s.name = "gemma3"; s.arch = "gemma3"; s.L = 6; s.tied = true; s.post_norms = true; s.qk_head = true;
  s.kv = {{"attention.sliding_window", val::U32(4)}};
  v.push_back(s);
  s = Spec{};
  s.name = "smollm3"; s.arch = "smollm3"; s.L = 4; s.tied = true;
  v.push_back(s);
  s = Spec{};
  s.name = "granite"; s.arch = "granite";
  s.kv = {{"logit_scale", val::F32(4.0f)}, {"residual_scale", val::F32(0.5f)}, {"embedding_scale", val::F32(2.0f)},
          {"attention.scale", val::F32(0.3f)}};
  v.push_back(s);
  s = Spec{};
  s.name = "olmo2"; s.arch = "olmo2"; s.pre_norms = false; s.post_norms = true; s.qk_full = true;
  v.push_back(s);
  s = Spec{};
  // Sinks, window 3 on layer 0 (full on 1), YaRN, biases, top-4 of 6 experts softmaxed over the
  // four, the clamped SwiGLU; Q (4 x 24) wider than E / H.
  s.name = "gpt_oss"; s.arch = "gpt-oss"; s.gpt_oss = true; s.hd = 24; s.key_length = true; s.qkv_bias = true;
  s.experts = 6; s.used = 4; s.F_exp = 40;
  s.kv = {{"expert_feed_forward_length", val::U32(40)}, {"attention.sliding_window", val::U32(3)},
          {"rope.scaling.type", val::Str("yarn")}, {"rope.scaling.factor", val::F32(32.0f)},
          {"rope.scaling.original_context_length", val::U32(16)}};
  v.push_back(s);
  s = Spec{};
  s.name = "gemma4"; s.arch = "gemma4"; s.custom = BuildGemma4;
  v.push_back(s);
  s = Spec{};
  s.name = "gemma4moe"; s.arch = "gemma4"; s.custom = BuildGemma4; s.experts = 6; s.used = 2; s.F_exp = 40;
  v.push_back(s);
  s = Spec{};
  s.name = "lfm2"; s.arch = "lfm2"; s.L = 4; s.conv_layers = {0, 2}; s.tied = true; s.qk_head = true;
  s.kv = {{"shortconv.l_cache", val::U32(3)}};
  v.push_back(s);
  s = Spec{};
  s.name = "lfm2moe"; s.arch = "lfm2moe"; s.L = 4; s.conv_layers = {0, 2}; s.tied = true; s.qk_head = true;
  s.experts = 6; s.used = 2; s.F_exp = 40; s.dense_lead = 1; s.probs_bias = true;
  s.kv = {{"shortconv.l_cache", val::U32(3)}, {"expert_feed_forward_length", val::U32(40)},
          {"leading_dense_block_count", val::U32(1)}, {"expert_gating_func", val::U32(2)}};
  v.push_back(s);
  s = Spec{};
  // Mamba-2 layers 0, 1 and 3 around a NoPE attention layer, Granite's multipliers.
  s.name = "granitehybrid"; s.arch = "granitehybrid"; s.L = 4; s.ssm_layers = {0, 1, 3}; s.tied = true;
  s.kv = {{"logit_scale", val::F32(4.0f)}, {"residual_scale", val::F32(0.5f)}, {"embedding_scale", val::F32(2.0f)},
          {"attention.scale", val::F32(0.3f)}, {"rope.scaling.finetuned", val::Bool(false)}};
  v.push_back(s);
  s = Spec{};
  s.name = "granitehybridmoe"; s.arch = "granitehybrid"; s.L = 3; s.ssm_layers = {0, 2}; s.tied = true;
  s.experts = 4; s.used = 2; s.F = 40; s.F_shexp = 56;
  s.kv = {{"logit_scale", val::F32(4.0f)}, {"residual_scale", val::F32(0.5f)}, {"embedding_scale", val::F32(2.0f)}};
  v.push_back(s);
  s = Spec{};
  s.name = "qwen35"; s.arch = "qwen35"; s.custom = BuildQwen35;
  v.push_back(s);
  s = Spec{};
  s.name = "qwen35_mtp"; s.arch = "qwen35"; s.custom = BuildQwen35; s.mtp = true;
  v.push_back(s);
  s = Spec{};
  s.name = "qwen35moe"; s.arch = "qwen35moe"; s.custom = BuildQwen35; s.experts = 6; s.used = 2; s.F_exp = 40;
  v.push_back(s);
  return v;
}

// The tiny model of Families() named `name` (an empty Spec if none is).
Spec Named(const std::string& name) {
  for (const Spec& s : Families()) {
    if (s.name == name) return s;
  }
  return Spec{};
}

std::string WriteTemp(const std::vector<uint8_t>& bytes, const std::string& name) {
  // Per process: ctest runs these tests in parallel processes, and rewriting a file another one
  // has memory-mapped kills that one (SIGBUS).
  std::string path = ::testing::TempDir() + "family_" + name + "_" + std::to_string(getpid()) + ".gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

// Largest |a - b| over the logits, relative to the reference's spread.
float RelErr(const std::vector<float>& got, const std::vector<float>& want) {
  double mean = 0.0, var = 0.0, err = 0.0;
  for (float x : want) mean += x;
  mean /= double(want.size());
  for (float x : want) var += (x - mean) * (x - mean);
  const double sd = std::sqrt(var / double(want.size()));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, double(std::fabs(got[i] - want[i])));
  return float(err / sd);
}

class FamilyReference : public ::testing::TestWithParam<Spec> {};

TEST_P(FamilyReference, EngineMatchesPlainLoopsAtEveryPosition) {
  const Spec& spec = GetParam();
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  o.n_threads = 2;
  Status st = Model::Load(WriteTemp(Build(spec), spec.name), o, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::vector<int32_t> tokens = {1, 5, 17, 9, 33, 2, 44, 12, 7, 21, 30, 3};
  const std::vector<std::vector<float>> want = testref::Forward(*m, tokens, 64);

  rt::SessionOptions so;
  so.n_ctx = 64;
  so.kv_type = engine::KvType::kF32;  // the reference keeps K/V in F32
  std::unique_ptr<rt::Session> decode, prefill;
  ASSERT_TRUE(rt::Session::Create(*m, so, &decode).ok());
  ASSERT_TRUE(rt::Session::Create(*m, so, &prefill).ok());
  std::vector<float> logits(size_t(m->desc().n_vocab));
  // Measured: <= 3e-6 of the logits' spread, 5e-4 for the GELU families (the engine, like
  // llama.cpp, reads GELU from an F16-rounded table; the plain loops use tanh). A wrong block (a
  // missing norm, scale or rope) moves logits by a large fraction of the spread.
  const float tol = 3e-3f;
  float worst = 0.0f;
  for (size_t t = 0; t < tokens.size(); ++t) {
    ASSERT_TRUE(decode->Eval(&tokens[t], 1, logits.data()).ok());
    const float e = RelErr(logits, want[t]);
    worst = std::max(worst, e);
    EXPECT_LT(e, tol) << spec.name << " decode position " << t;
  }
  ASSERT_TRUE(prefill->Eval(tokens.data(), tokens.size(), logits.data()).ok());
  const float e = RelErr(logits, want.back());
  EXPECT_LT(e, tol) << spec.name << " prefill, last position";
  std::printf("[ family %-9s ] worst |engine - reference| / sd(logits): decode %.2e, prefill %.2e\n", spec.name.c_str(),
              double(worst), double(e));
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, FamilyReference, ::testing::ValuesIn(Families()),
                         [](const ::testing::TestParamInfo<Spec>& i) { return i.param.name; });

// rope.scaling.type yarn as the reference reads it: freq_scale 1/factor, ext_factor 1, the
// original context from its key, a magnitude of get_mscale(4) / (1 + 0.1 ln 4) = 1 (to float
// rounding), and the YaRN op required of the engine.
TEST(FamilyReference, YarnHyperparameters) {
  Spec spec = Named("qwen3_yarn");
  ASSERT_EQ(spec.name, "qwen3_yarn");
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  ASSERT_TRUE(Model::Load(WriteTemp(Build(spec), "yarn_hp"), o, &m).ok());
  const RopeDesc& r = m->desc().layers[0].attn.rope;
  EXPECT_EQ(r.freq_scale, 0.25f);
  EXPECT_EQ(r.ext_factor, 1.0f);
  EXPECT_NEAR(r.attn_factor, 1.0f, 1e-6f);
  EXPECT_EQ(r.beta_fast, 32.0f);
  EXPECT_EQ(r.beta_slow, 1.0f);
  EXPECT_EQ(m->desc().n_ctx_orig, 4096);
  const std::vector<engine::Op> ops = RequiredOps(m->desc());
  EXPECT_NE(std::find(ops.begin(), ops.end(), engine::Op::kRopeYarn), ops.end());
}

std::unique_ptr<Model> LoadGemma4(const std::string& tag) {
  Spec spec = Named("gemma4");
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  o.n_threads = 2;
  const Status st = Model::Load(WriteTemp(Build(spec), tag), o, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  return m;
}

// Gemma 4's description as the reference's loader reads the file: the sharing layers read the
// cache of the last earlier layer of their kind and have none of their own; head sizes, rope
// and windows per kind; value heads normed; the ops a CUDA engine would need named.
TEST(Gemma4Reference, DescriptionSharesKvAndSizesHeadsPerKind) {
  std::unique_ptr<Model> m = LoadGemma4("gemma4_desc");
  ASSERT_TRUE(m);
  const ModelDesc& d = m->desc();
  ASSERT_EQ(d.n_layer, 5);
  EXPECT_EQ(d.NKvLayers(), 3);
  const int32_t kv_from[] = {-1, -1, -1, 1, 2}, slot[] = {0, 1, 2, 1, 2}, hd[] = {16, 16, 32, 16, 32};
  for (int32_t il = 0; il < 5; ++il) {
    const AttentionDesc& a = d.layers[size_t(il)].attn;
    const bool full = hd[il] == 32;
    EXPECT_EQ(a.kv_from, kv_from[il]) << il;
    EXPECT_EQ(d.KvSlot(il), slot[il]) << il;
    EXPECT_EQ(a.head_dim_k, hd[il]) << il;
    EXPECT_EQ(a.window, full ? 0 : 4) << il;
    EXPECT_EQ(a.rope.base, full ? 1e6f : 10000.0f) << il;
    EXPECT_EQ(a.rope.use_freq_factors, full) << il;
    EXPECT_EQ(a.scale, 1.0f);
    EXPECT_TRUE(a.v_norm);
    EXPECT_EQ(d.layers[size_t(il)].ffn.n_ff, il >= 3 ? 192 : 96) << il;
    // The full layers have no attn_v (their values are the keys); the sharing layers' K/V
    // weights are in the file but dropped after binding (never read, never copied).
    const LayerTensors& lt = m->weights().layers[size_t(il)];
    EXPECT_EQ(lt[LayerRole::kAttnV] == nullptr, full || il >= 3) << il;
    EXPECT_EQ(lt[LayerRole::kAttnK] == nullptr, il >= 3) << il;
  }
  EXPECT_EQ(d.n_embd_per_layer, 8);
  EXPECT_EQ(d.MaxKWidth(), 64);
  const std::vector<engine::Op> ops = RequiredOps(d);
  for (engine::Op op : {engine::Op::kStridedRows, engine::Op::kUnweightedNorm, engine::Op::kScale}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << engine::OpName(op);
  }
}

// The shared layers hold no KV, so what a session saves, loads and shares through the prefix
// cache is the own layers' rows only; each path gives the logits of a plain evaluation, bit
// for bit.
TEST(Gemma4Reference, StateAndPrefixCacheReproduceLogits) {
  std::unique_ptr<Model> m = LoadGemma4("gemma4_state");
  ASSERT_TRUE(m);
  const size_t nv = size_t(m->desc().n_vocab);
  std::vector<int32_t> toks(140);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = 3 + int32_t((i * 7919) % 45);
  rt::SessionOptions so;
  so.n_ctx = 256;
  std::unique_ptr<rt::Session> plain, saved, loaded, first, second;
  for (auto* s : {&plain, &saved, &loaded, &first, &second}) ASSERT_TRUE(rt::Session::Create(*m, so, s).ok());
  std::vector<float> want(nv), got(nv);
  ASSERT_TRUE(plain->Eval(toks.data(), toks.size(), want.data()).ok());

  // State: the first 100 tokens saved, loaded into a fresh session, the rest evaluated there.
  ASSERT_TRUE(saved->Eval(toks.data(), 100, got.data()).ok());
  size_t size = 0, written = 0;
  ASSERT_TRUE(saved->StateSize(&size).ok());
  std::vector<uint8_t> state(size);
  ASSERT_TRUE(saved->SaveState(state.data(), state.size(), &written).ok());
  ASSERT_TRUE(loaded->LoadState(state.data(), written).ok());
  ASSERT_TRUE(loaded->Eval(toks.data() + 100, toks.size() - 100, got.data()).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "after a state round trip";

  // Prefix cache: the second session copies the first's two 64-token blocks.
  rt::PrefixCache cache(64u << 20);
  first->set_prefix_cache(&cache);
  second->set_prefix_cache(&cache);
  ASSERT_TRUE(first->Eval(toks.data(), toks.size(), got.data()).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "storing blocks";
  ASSERT_TRUE(second->Eval(toks.data(), toks.size(), got.data()).ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), nv * sizeof(float)), 0) << "from cached blocks";
  EXPECT_GE(cache.stats().hit_tokens, 128u);
}

// device=CUDA is refused with every op in `ops` named (checked before any GPU is looked for:
// the INFO line of the fallback), device=AUTO loads on the CPU.
void ExpectCudaRefusedAndAutoOnCpu(const std::string& family, std::initializer_list<engine::Op> ops) {
  const std::string path = WriteTemp(Build(Named(family)), family + "_cuda");
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCuda;
  const Status st = Model::Load(path, o, &m);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  for (engine::Op op : ops) EXPECT_NE(st.message().find(engine::OpName(op)), std::string::npos) << st.message();
  o.device = Device::kAuto;
  ASSERT_TRUE(Model::Load(path, o, &m).ok());
  EXPECT_EQ(m->device(), Device::kCpu);
}

// The CUDA engine has none of the optional ops: it is refused naming the first one Gemma 4 needs.
TEST(Gemma4Reference, CudaRefusesAndAutoRunsOnTheCpu) {
  ExpectCudaRefusedAndAutoOnCpu("gemma4", {engine::Op::kStridedRows});
}

// Granite 4.0 hybrid files whose Mamba-2 sizes are missing or inconsistent are refused with a
// message naming the key or the sizes, before any tensor is read.
TEST(FamilyReference, MambaSizesAreChecked) {
  Spec spec = Named("granitehybrid");
  ASSERT_EQ(spec.name, "granitehybrid");
  LoadOptions o;
  o.device = Device::kCpu;
  std::unique_ptr<Model> m;
  spec.ssm_group_count = 0;
  Status st = Model::Load(WriteTemp(Build(spec), "granitehybrid_nogroups"), o, &m);
  EXPECT_EQ(st.code(), Code::kFormat) << st.message();
  EXPECT_NE(st.message().find("granitehybrid.ssm.group_count"), std::string::npos) << st.message();
  spec.ssm_group_count = 3;  // 4 heads in 3 groups
  st = Model::Load(WriteTemp(Build(spec), "granitehybrid_badgroups"), o, &m);
  EXPECT_EQ(st.code(), Code::kFormat) << st.message();
  EXPECT_NE(st.message().find("ssm.group_count=3"), std::string::npos) << st.message();
}

// The logits of `tokens` fed one at a time to a fresh CPU session of the file at `path`.
std::vector<float> TokenByTokenLogits(const std::string& path, const std::vector<int32_t>& tokens) {
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  o.n_threads = 2;
  const Status st = Model::Load(path, o, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok()) return {};
  rt::SessionOptions so;
  so.n_ctx = 64;
  std::unique_ptr<rt::Session> s;
  EXPECT_TRUE(rt::Session::Create(*m, so, &s).ok());
  const size_t n_vocab = size_t(m->desc().n_vocab);
  std::vector<float> out(tokens.size() * n_vocab);
  for (size_t t = 0; t < tokens.size(); ++t) EXPECT_TRUE(s->Eval(&tokens[t], 1, out.data() + t * n_vocab).ok());
  return out;
}

uint32_t FileDims(const std::vector<uint8_t>& bytes, const std::string& tensor) {
  std::unique_ptr<gguf::GgufFile> f;
  if (!gguf::GgufFile::FromMemory(bytes.data(), bytes.size(), &f).ok()) return 0;
  const gguf::TensorInfo* t = f->FindTensor(tensor);
  return t != nullptr ? t->n_dims : 0;
}

// Shapes compare as ggml compares them (4 dims, missing ones 1): llama-quantize writes a [n, 1]
// tensor as [n], and a converter writes a [1, n] torch weight as [n, 1] where [n] is expected.
// Granite 4.0 H with one SSM group (ssm_norm [d_inner, 1]) and Qwen 3.5 MoE (shared-expert gate
// [n_embd]) load in every such layout with bit-identical logits.
TEST(FamilyReference, TrailingUnitDimsAreAcceptedAsGgmlComparesShapes) {
  Spec granite = Named("granitehybridmoe");
  granite.name = "granitehybridmoe_g1";
  granite.ssm_group_count = 1;
  const std::vector<std::pair<Spec, std::string>> cases = {{granite, "blk.0.ssm_norm.weight"},
                                                           {Named("qwen35moe"), "blk.0.ffn_gate_inp_shexp.weight"}};
  const std::vector<int32_t> tokens = {1, 5, 17, 9, 33, 2, 44, 12};
  for (auto [spec, tensor] : cases) {
    SCOPED_TRACE(spec.name);
    const std::vector<uint8_t> listed = Build(spec);
    const std::vector<float> want = TokenByTokenLogits(WriteTemp(listed, spec.name + "_listed"), tokens);
    ASSERT_FALSE(want.empty());
    spec.dims = Spec::Dims::kTrailingOnesDropped;
    const std::vector<uint8_t> dropped = Build(spec);
    spec.dims = Spec::Dims::kVectorsAsColumns;
    const std::vector<uint8_t> columns = Build(spec);
    const bool is_vector = FileDims(listed, tensor) == 1;
    EXPECT_EQ(FileDims(dropped, tensor), 1u);
    EXPECT_EQ(FileDims(columns, tensor), is_vector ? 2u : FileDims(listed, tensor));
    EXPECT_NE(is_vector ? columns : dropped, listed);  // the layout under test differs from the listed one
    for (const auto& [bytes, tag] : {std::make_pair(&dropped, "_dropped"), std::make_pair(&columns, "_columns")}) {
      const std::vector<float> got = TokenByTokenLogits(WriteTemp(*bytes, spec.name + tag), tokens);
      ASSERT_EQ(got.size(), want.size()) << tag;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << tag;
    }
  }
  // A real mismatch (the same element count) is still refused, naming both shapes.
  std::vector<uint8_t> bytes = Build(granite);
  const std::string name = "blk.0.ssm_norm.weight";
  auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  ASSERT_NE(it, bytes.end());
  const size_t at = size_t(it - bytes.begin()) + name.size();  // n_dims, then ne
  ASSERT_EQ(Peek<uint32_t>(bytes, at), 2u);
  ASSERT_EQ(Peek<uint64_t>(bytes, at + 12), 1u);
  Poke<uint64_t>(&bytes, at + 4, Peek<uint64_t>(bytes, at + 4) / 2);
  Poke<uint64_t>(&bytes, at + 12, 2);
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  const Status st = Model::Load(WriteTemp(bytes, "granite_misshaped"), o, &m);
  EXPECT_EQ(st.code(), Code::kFormat) << st.message();
  EXPECT_NE(st.message().find("'blk.0.ssm_norm.weight' has shape [64, 2], expected [128, 1]"), std::string::npos)
      << st.message();
}

// The CUDA engine has no gated DeltaNet or attention output gate: both are named.
TEST(Qwen35Reference, CudaRefusesNamingTheMissingOpsAndAutoRunsOnTheCpu) {
  ExpectCudaRefusedAndAutoOnCpu("qwen35moe", {engine::Op::kGatedDeltaNet, engine::Op::kAttnOutputGate});
}

// The converter's multi-token-prediction block (nextn_predict_layers 1, block_count 5): in the
// file, not in the forward pass (the reference runs it only as a draft head); its tensors are
// the only ones left unbound. EngineMatchesPlainLoopsAtEveryPosition/qwen35_mtp checks the logits.
TEST(Qwen35Reference, MtpBlockIsNotALayer) {
  Spec spec = Named("qwen35_mtp");
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  const Status st = Model::Load(WriteTemp(Build(spec), "qwen35_mtp_desc"), o, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->desc().n_layer, 4);
  EXPECT_EQ(m->desc().n_layer_mtp, 1);
  EXPECT_EQ(m->desc().layers.size(), 4u);
}

// Bad sizes are refused with the keys named, never computed.
TEST(Qwen35Reference, InconsistentDeltaNetSizesAreRefused) {
  Spec spec = Named("qwen35");
  std::vector<uint8_t> bytes = Build(spec);
  // ssm.time_step_rank 4 -> 3: not a multiple of the 2 key heads.
  const std::string key = "qwen35.ssm.time_step_rank";
  auto it = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
  ASSERT_NE(it, bytes.end());
  uint32_t v = 0;
  std::memcpy(&v, &*(it + std::ptrdiff_t(key.size()) + 4), 4);
  ASSERT_EQ(v, 4u);
  v = 3;
  std::memcpy(&*(it + std::ptrdiff_t(key.size()) + 4), &v, 4);
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  const Status st = Model::Load(WriteTemp(bytes, "qwen35_bad"), o, &m);
  EXPECT_EQ(st.code(), Code::kFormat) << st.message();
  EXPECT_NE(st.message().find("ssm.time_step_rank=3"), std::string::npos) << st.message();
}

// Ministral 3's keys under mistral3 (the llama-4 attention temperature, YaRN's log multiplier)
// change the forward pass: refused by name, not run without them.
TEST(FamilyReference, Mistral3TemperatureScalingIsRefused) {
  for (const char* key : {"attention.temperature_scale", "rope.scaling.yarn_log_multiplier"}) {
    Spec s = Named("mistral3");
    ASSERT_EQ(s.arch, "mistral3");
    s.kv = {{key, val::F32(0.1f)}};
    std::unique_ptr<Model> m;
    LoadOptions o;
    o.device = Device::kCpu;
    const Status st = Model::Load(WriteTemp(Build(s), "mistral3_temp"), o, &m);
    EXPECT_EQ(st.code(), Code::kUnsupported) << key << ": " << st.message();
    EXPECT_NE(st.message().find(std::string("mistral3.") + key), std::string::npos) << st.message();
  }
}

TEST(FamilyReference, CoversEveryRegisteredArchitecture) {
  std::vector<std::string> tested;
  for (const Spec& s : Families()) tested.push_back(s.arch);
  for (const char* arch : SupportedArchs()) {
    if (std::string(arch) == "mistral") continue;  // the llama builder under another name
    // Encoders and embedding-only families: their pooled vectors are checked against
    // llama.cpp's in tests/capi/embed_test.cpp.
    const std::string a = arch;
    if (a == "bert" || a == "nomic-bert" || a == "modern-bert" || a == "gemma-embedding") continue;
    EXPECT_NE(std::find(tested.begin(), tested.end(), arch), tested.end()) << arch << " has no tiny-model check";
  }
}

// ---- Recurrent sequence state (issue #27: LFM2's short convolutions, Granite 4.0 hybrid's
// Mamba-2, Qwen 3.5's gated DeltaNet): every way a position can be reached gives the bits of
// evaluating the tokens one at a time from an empty session. ----

class RecurrentSession : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Spec spec;
    for (const Spec& s : Families()) {
      if (s.name == GetParam()) spec = s;
    }
    ASSERT_EQ(spec.name, GetParam());
    LoadOptions o;
    o.device = Device::kCpu;
    o.n_threads = 2;
    path_ = WriteTemp(Build(spec), spec.name + "_state");
    Status st = Model::Load(path_, o, &m_);
    ASSERT_TRUE(st.ok()) << st.message();
    std::mt19937 rng(7);
    for (int i = 0; i < 150; ++i) tokens_.push_back(3 + int32_t(rng() % 45));  // crosses two checkpoints
    n_vocab_ = size_t(m_->desc().n_vocab);
    std::unique_ptr<rt::Session> s = NewSession();
    for (size_t t = 0; t < tokens_.size(); ++t) {
      std::vector<float> l(n_vocab_);
      ASSERT_TRUE(s->Eval(&tokens_[t], 1, l.data()).ok());
      one_by_one_.push_back(std::move(l));
    }
  }
  std::unique_ptr<rt::Session> NewSession(int32_t n_ctx = 256) {
    rt::SessionOptions so;
    so.n_ctx = n_ctx;
    std::unique_ptr<rt::Session> s;
    EXPECT_TRUE(rt::Session::Create(*m_, so, &s).ok());
    return s;
  }
  // Evaluates tokens [from, to) in one call and checks the last logits against one_by_one_.
  void ExpectSame(rt::Session* s, size_t from, size_t to, const std::string& what) {
    std::vector<float> l(n_vocab_);
    ASSERT_TRUE(s->Eval(tokens_.data() + from, to - from, l.data()).ok()) << what;
    EXPECT_EQ(std::memcmp(l.data(), one_by_one_[to - 1].data(), n_vocab_ * sizeof(float)), 0)
        << what << ": logits of position " << to - 1 << " differ from the token-by-token evaluation";
  }
  // Ten blocks and 17 tokens of random ids, and a session with room for them.
  static std::vector<int32_t> LongPrompt(uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> toks;
    for (int i = 0; i < 10 * 64 + 17; ++i) toks.push_back(3 + int32_t(rng() % 45));
    return toks;
  }
  std::unique_ptr<rt::Session> LongSession() { return NewSession(1024); }
  // The session's saved state: its KV rows, history, state and every checkpoint it holds.
  static std::vector<uint8_t> Saved(rt::Session* s) {
    size_t size = 0, written = 0;
    EXPECT_TRUE(s->StateSize(&size).ok());
    std::vector<uint8_t> buf(size);
    EXPECT_TRUE(s->SaveState(buf.data(), buf.size(), &written).ok());
    buf.resize(written);
    return buf;
  }
  std::string path_;
  std::unique_ptr<Model> m_;
  std::vector<int32_t> tokens_;
  std::vector<std::vector<float>> one_by_one_;
  size_t n_vocab_ = 0;
};

TEST_P(RecurrentSession, DescriptionDeclaresTheState) {
  const ModelDesc& d = m_->desc();
  EXPECT_TRUE(d.HasRecurrentLayers());
  const std::string fam = GetParam();
  const size_t attn = fam == "granitehybrid" ? 2 : 1;
  EXPECT_EQ(d.layers[attn].mixer, MixerKind::kAttention);
  EXPECT_EQ(RecurrentStateFloats(d, d.layers[attn]), 0u);
  const std::vector<engine::Op> ops = RequiredOps(d);
  const auto needs = [&](engine::Op op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
  engine::Op op = engine::Op::kShortConv;
  if (fam == "lfm2") {
    EXPECT_EQ(d.layers[0].mixer, MixerKind::kShortConv);
    EXPECT_EQ(RecurrentStateFloats(d, d.layers[0]), size_t(2 * d.n_embd));  // (l_cache - 1) x channels
  } else if (fam == "granitehybrid") {
    op = engine::Op::kMamba2;
    EXPECT_EQ(d.layers[0].mixer, MixerKind::kMamba2);
    // (d_conv - 1) x (d_inner + 2 G N) + d_inner x N.
    const size_t di = size_t(2 * d.n_embd);
    EXPECT_EQ(RecurrentStateFloats(d, d.layers[0]), 3 * (di + 2 * 2 * 8) + di * 8);
    EXPECT_FALSE(d.layers[attn].attn.rope.enabled);  // rope.scaling.finetuned false
  } else {
    op = engine::Op::kGatedDeltaNet;
    EXPECT_EQ(d.layers[0].mixer, MixerKind::kGatedDeltaNet);
    EXPECT_EQ(d.layers[2].mixer, MixerKind::kGatedDeltaNet);
    EXPECT_TRUE(d.layers[1].attn.q_gate);
    // (d_conv - 1) x channels of the convolution, then per value head a [8][8] matrix.
    EXPECT_EQ(RecurrentStateFloats(d, d.layers[0]), size_t(3 * 64 + 4 * 8 * 8));
    EXPECT_TRUE(needs(engine::Op::kAttnOutputGate));
  }
  EXPECT_TRUE(needs(op));  // CUDA falls back by it
  // device=CUDA is refused naming the op (checked before any GPU is looked for).
  std::unique_ptr<Model> cuda;
  LoadOptions o;
  o.device = Device::kCuda;
  const Status st = Model::Load(path_, o, &cuda);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find(engine::OpName(op)), std::string::npos) << st.message();
}

TEST_P(RecurrentSession, OneChunkAndChunksOf7EqualTokenByToken) {
  std::unique_ptr<rt::Session> whole = NewSession();
  ExpectSame(whole.get(), 0, tokens_.size(), "one chunk");
  std::unique_ptr<rt::Session> chunks = NewSession();
  for (size_t p = 0; p < tokens_.size(); p += 7) {
    ExpectSame(chunks.get(), p, std::min(p + 7, tokens_.size()), "chunks of 7");
  }
}

TEST_P(RecurrentSession, TruncateThenEvalEqualsFreshEvaluation) {
  // Mid-block, on a checkpoint, before the first checkpoint, after the second, and a rollback
  // by 16 (speculative verification's longest).
  for (size_t keep : {100u, 64u, 5u, 130u, 134u, 0u}) {
    std::unique_ptr<rt::Session> s = NewSession();
    std::vector<float> l(n_vocab_);
    ASSERT_TRUE(s->Eval(tokens_.data(), tokens_.size(), l.data()).ok());
    ASSERT_TRUE(s->Truncate(keep).ok());
    ASSERT_EQ(size_t(s->n_past()), keep);
    ExpectSame(s.get(), keep, keep + 1, "truncated to " + std::to_string(keep) + ", one token");
    ExpectSame(s.get(), keep + 1, tokens_.size(), "truncated to " + std::to_string(keep) + ", the rest");
  }
}

TEST_P(RecurrentSession, VerifyDraftsThenRollBack) {
  std::unique_ptr<rt::Session> s = NewSession();
  ASSERT_TRUE(s->can_verify());
  std::vector<float> l(n_vocab_);
  ASSERT_TRUE(s->Eval(tokens_.data(), 120, l.data()).ok());
  // 12 drafted rows crossing the checkpoint at 128: each row's logits are the one-token ones.
  std::vector<float> every(12 * n_vocab_);
  ASSERT_TRUE(s->EvalEvery(tokens_.data() + 120, 12, every.data()).ok());
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(std::memcmp(every.data() + i * n_vocab_, one_by_one_[120 + i].data(), n_vocab_ * sizeof(float)), 0)
        << "verified row " << i;
  }
  ASSERT_TRUE(s->Truncate(125).ok());  // 5 accepted: back to the verification's start, 5 re-evaluated
  ExpectSame(s.get(), 125, tokens_.size(), "after the rollback");
}

TEST_P(RecurrentSession, SaveLoadRoundTripAndChecks) {
  std::unique_ptr<rt::Session> s = NewSession();
  std::vector<float> l(n_vocab_);
  ASSERT_TRUE(s->Eval(tokens_.data(), 100, l.data()).ok());
  size_t size = 0, written = 0;
  ASSERT_TRUE(s->StateSize(&size).ok());
  std::vector<uint8_t> buf(size);
  ASSERT_TRUE(s->SaveState(buf.data(), buf.size(), &written).ok());
  std::unique_ptr<rt::Session> loaded = NewSession();
  ASSERT_TRUE(loaded->LoadState(buf.data(), buf.size()).ok());
  ExpectSame(loaded.get(), 100, 101, "loaded state, next token");
  ASSERT_TRUE(loaded->Truncate(70).ok());  // through the loaded checkpoint at 64
  ExpectSame(loaded.get(), 70, tokens_.size(), "loaded state, truncated");
  // The recurrent section is checked: a cut buffer and a non-finite state are refused.
  std::unique_ptr<rt::Session> other = NewSession();
  EXPECT_EQ(other->LoadState(buf.data(), buf.size() - 4).code(), Code::kFormat);
  std::vector<uint8_t> bad = buf;
  const float nan = std::nanf("");
  std::memcpy(bad.data() + bad.size() - 4, &nan, 4);
  EXPECT_EQ(other->LoadState(bad.data(), bad.size()).code(), Code::kFormat);
}

// A long history keeps only some checkpoints (session.h: the newest blocks, older ones sparser);
// truncation restores the nearest one left and is still exact, also after a save/load.
TEST_P(RecurrentSession, ThinnedCheckpointsStayExact) {
  std::mt19937 rng(11);
  std::vector<int32_t> toks;
  for (int i = 0; i < 12 * 64; ++i) toks.push_back(3 + int32_t(rng() % 45));
  rt::SessionOptions so;
  so.n_ctx = 1024;
  auto fresh_logits = [&](size_t n) {  // the logits after toks[0, n) evaluated in one call
    std::unique_ptr<rt::Session> s;
    EXPECT_TRUE(rt::Session::Create(*m_, so, &s).ok());
    std::vector<float> l(n_vocab_);
    EXPECT_TRUE(s->Eval(toks.data(), n, l.data()).ok());
    return l;
  };
  std::unique_ptr<rt::Session> s;
  ASSERT_TRUE(rt::Session::Create(*m_, so, &s).ok());
  std::vector<float> l(n_vocab_);
  ASSERT_TRUE(s->Eval(toks.data(), toks.size(), l.data()).ok());
  // 12 blocks: the last 4, and of the older ones blocks 4, 6 and 8 (j + 1 a multiple of 2 or 4).
  EXPECT_EQ(s->n_checkpoints(), 7u);
  size_t size = 0, written = 0;
  ASSERT_TRUE(s->StateSize(&size).ok());
  std::vector<uint8_t> buf(size);
  ASSERT_TRUE(s->SaveState(buf.data(), buf.size(), &written).ok());
  for (size_t keep : {200u, 700u, 5u}) {  // far behind a dropped checkpoint, near the end, at the start
    ASSERT_TRUE(s->Truncate(keep).ok());
    ASSERT_TRUE(s->Eval(toks.data() + keep, 1, l.data()).ok());
    EXPECT_EQ(std::memcmp(l.data(), fresh_logits(keep + 1).data(), n_vocab_ * sizeof(float)), 0) << "kept " << keep;
    ASSERT_TRUE(s->Eval(toks.data() + keep + 1, toks.size() - keep - 1, l.data()).ok());
  }
  std::unique_ptr<rt::Session> loaded;
  ASSERT_TRUE(rt::Session::Create(*m_, so, &loaded).ok());
  ASSERT_TRUE(loaded->LoadState(buf.data(), buf.size()).ok());
  EXPECT_EQ(loaded->n_checkpoints(), 7u);
  ASSERT_TRUE(loaded->Truncate(300).ok());
  ASSERT_TRUE(loaded->Eval(toks.data() + 300, 1, l.data()).ok());
  EXPECT_EQ(std::memcmp(l.data(), fresh_logits(301).data(), n_vocab_ * sizeof(float)), 0) << "loaded, kept 300";
}

// One long Eval copies only the checkpoints still held when it returns (Session::Append); the
// session must end as one fed block by block, which takes every one: the same checkpoints (the
// saved state holds them all) and the same state.
TEST_P(RecurrentSession, LongEvalKeepsTheCheckpointsOfBlockByBlock) {
  const std::vector<int32_t> toks = LongPrompt(5);
  const auto saved = [&](const std::vector<size_t>& cuts, size_t* held) {
    std::unique_ptr<rt::Session> s = LongSession();
    std::vector<float> l(n_vocab_);
    size_t from = 0;
    for (size_t to : cuts) {
      EXPECT_TRUE(s->Eval(toks.data() + from, to - from, l.data()).ok());
      from = to;
    }
    *held = s->n_checkpoints();
    return Saved(s.get());
  };
  std::vector<size_t> blocks;
  for (size_t to = 30; to < toks.size(); to += 64) blocks.push_back(to);  // off the boundaries
  blocks.push_back(toks.size());
  size_t held_long = 0, held_blocks = 0, held_two = 0;
  const std::vector<uint8_t> long_eval = saved({toks.size()}, &held_long);
  EXPECT_EQ(held_long, 6u);  // 10 blocks: the last 4, and of the older ones blocks 4 and 6
  EXPECT_EQ(saved(blocks, &held_blocks), long_eval);
  EXPECT_EQ(held_blocks, held_long);
  EXPECT_EQ(saved({200, toks.size()}, &held_two), long_eval);  // a second long call on top
  EXPECT_EQ(held_two, held_long);
}

// A step passes block boundaries without ending there (Session::PlanCopies): the recurrent ops
// copy the state out at each kept boundary inside the step. Those checkpoints must be the bits a
// step ending on the boundary leaves: a 10-block prompt in one call against block-by-block
// calls, compared through Truncate to kept boundaries (the restored state, saved) and the next
// token's logits; and through a prefix cache, which stores every block's state of the one call.
TEST_P(RecurrentSession, CheckpointsInsideOneStepEqualStepsEndingThere) {
  const std::vector<int32_t> toks = LongPrompt(9);
  std::vector<float> l_one(n_vocab_), l_blocks(n_vocab_);
  for (size_t keep : {576u, 384u, 256u}) {  // boundaries whose checkpoint stays (of 10 blocks: the last 4, 4 and 6)
    std::unique_ptr<rt::Session> one = LongSession(), blocks = LongSession();
    ASSERT_TRUE(one->Eval(toks.data(), toks.size(), l_one.data()).ok());
    for (size_t p = 0; p < toks.size(); p += 64) {
      ASSERT_TRUE(blocks->Eval(toks.data() + p, std::min<size_t>(64, toks.size() - p), l_blocks.data()).ok());
    }
    ASSERT_EQ(std::memcmp(l_one.data(), l_blocks.data(), n_vocab_ * sizeof(float)), 0);
    EXPECT_EQ(one->n_checkpoints(), blocks->n_checkpoints());
    EXPECT_EQ(Saved(one.get()), Saved(blocks.get()));
    ASSERT_TRUE(one->Truncate(keep).ok());
    ASSERT_TRUE(blocks->Truncate(keep).ok());
    EXPECT_EQ(Saved(one.get()), Saved(blocks.get())) << "truncated to " << keep;
    ASSERT_TRUE(one->Eval(toks.data() + keep, toks.size() - keep, l_one.data()).ok());
    ASSERT_TRUE(blocks->Eval(toks.data() + keep, toks.size() - keep, l_blocks.data()).ok());
    EXPECT_EQ(std::memcmp(l_one.data(), l_blocks.data(), n_vocab_ * sizeof(float)), 0) << "truncated to " << keep;
  }
  // Every block's state from one call, stored in the cache: a second session takes the 10 blocks
  // and evaluates the 17 tokens after them to the same logits.
  rt::PrefixCache cache(64u << 20);
  std::unique_ptr<rt::Session> first = LongSession(), second = LongSession(), plain = LongSession();
  first->set_prefix_cache(&cache);
  second->set_prefix_cache(&cache);
  ASSERT_TRUE(plain->Eval(toks.data(), toks.size(), l_one.data()).ok());
  ASSERT_TRUE(first->Eval(toks.data(), toks.size(), l_blocks.data()).ok());
  EXPECT_EQ(std::memcmp(l_one.data(), l_blocks.data(), n_vocab_ * sizeof(float)), 0);
  for (size_t to : {size_t(200), toks.size()}) {  // after 3 blocks from the cache, and after all 10
    std::unique_ptr<rt::Session> fresh = LongSession();
    std::vector<float> want(n_vocab_);
    ASSERT_TRUE(fresh->Eval(toks.data(), to, want.data()).ok());
    ASSERT_TRUE(second->Truncate(0).ok());
    const uint64_t hits = cache.stats().hit_tokens;
    ASSERT_TRUE(second->Eval(toks.data(), to, l_blocks.data()).ok());
    EXPECT_EQ(cache.stats().hit_tokens - hits, to / 64 * 64) << "to " << to;
    EXPECT_EQ(std::memcmp(want.data(), l_blocks.data(), n_vocab_ * sizeof(float)), 0) << "to " << to;
  }
}

// Drafted rows crossing a block boundary leave its checkpoint (copied inside the verification's
// step): Truncate to that boundary restores it.
TEST_P(RecurrentSession, VerificationLeavesTheCheckpointItPasses) {
  std::unique_ptr<rt::Session> s = NewSession();
  std::vector<float> l(n_vocab_);
  ASSERT_TRUE(s->Eval(tokens_.data(), 120, l.data()).ok());
  std::vector<float> every(12 * n_vocab_);
  ASSERT_TRUE(s->EvalEvery(tokens_.data() + 120, 12, every.data()).ok());
  EXPECT_EQ(s->n_checkpoints(), 2u);
  ASSERT_TRUE(s->Truncate(128).ok());
  ExpectSame(s.get(), 128, tokens_.size(), "truncated to the boundary the verification passed");
}

TEST_P(RecurrentSession, PrefixCacheCarriesTheStateOfEachBlock) {
  rt::PrefixCache cache(64u << 20);
  std::unique_ptr<rt::Session> first = NewSession(), second = NewSession();
  first->set_prefix_cache(&cache);
  second->set_prefix_cache(&cache);
  std::vector<float> l(n_vocab_);
  ASSERT_TRUE(first->Eval(tokens_.data(), tokens_.size(), l.data()).ok());
  ExpectSame(second.get(), 0, tokens_.size(), "after two cached blocks");
  EXPECT_EQ(cache.stats().hit_tokens, 128u);
}

INSTANTIATE_TEST_SUITE_P(Models, RecurrentSession, ::testing::Values("lfm2", "granitehybrid", "qwen35"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Qwen3-VL's deepstack through Forward::RunEmbd: rows of n_embd x (1 + n_deepstack) floats, the
// first slice the input, slice il + 1 added to layer il's output (llama.cpp's qwen3vl graph),
// against the plain loops; a token's row with zero slices (the reference pads token rows so) gives
// the token's logits bit for bit.
TEST(FamilyReference, Qwen3vlDeepstackRowsMatchPlainLoops) {
  const Spec spec = Named("qwen3vl");
  std::unique_ptr<Model> m;
  LoadOptions o;
  o.device = Device::kCpu;
  o.n_threads = 2;
  const Status st = Model::Load(WriteTemp(Build(spec), "qwen3vl_deepstack"), o, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  const ModelDesc& d = m->desc();
  ASSERT_EQ(d.n_deepstack, 1);
  ASSERT_EQ(d.n_embd_inp(), 2 * d.n_embd);
  const std::vector<int32_t> tokens = {1, 5, 17, 9, 33};
  const size_t T = tokens.size(), W = size_t(d.n_embd_inp()), E = size_t(d.n_embd);
  std::mt19937 rng(46);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<testref::Vec> rows(T, testref::Vec(W)), token_rows(T, testref::Vec(W, 0.0f));
  for (testref::Vec& r : rows)
    for (float& v : r) v = nd(rng);
  const float* embd = testref::F32(m->weights()[GlobalRole::kTokenEmbd]);
  for (size_t t = 0; t < T; ++t) std::copy(embd + size_t(tokens[t]) * E, embd + size_t(tokens[t] + 1) * E, token_rows[t].begin());
  std::vector<testref::Vec> no_slices = rows;
  for (testref::Vec& r : no_slices) std::fill(r.begin() + std::ptrdiff_t(E), r.end(), 0.0f);
  const std::vector<testref::Vec> want = testref::Forward(*m, tokens, 64, &rows);
  const std::vector<testref::Vec> without = testref::Forward(*m, tokens, 64, &no_slices);

  const int32_t n_ctx = 64;
  ForwardPool::Lease lease;
  ASSERT_TRUE(m->forwards()->Acquire(ForwardPool::Key{2, true}, &lease).ok());
  const float* rope = Forward::RopeFactors(*m, n_ctx);
  const auto run = [&](const std::vector<testref::Vec>* in, std::vector<float>* logits) {
    std::unique_ptr<engine::KvCache> kv;
    ASSERT_TRUE(lease.backend().CreateKv(d.NKvLayers(), n_ctx, d.MaxKWidth(), d.MaxVWidth(), engine::KvType::kF32, &kv).ok());
    const Forward::SeqState s{kv.get(), nullptr, rope};
    logits->assign(size_t(d.n_vocab), 0.0f);
    if (in == nullptr) {
      lease.forward().Run(s, tokens.data(), int32_t(T), 0, logits->data(), nullptr);
      return;
    }
    std::vector<float> flat;
    for (const testref::Vec& r : *in) flat.insert(flat.end(), r.begin(), r.end());
    lease.forward().RunEmbd(s, flat.data(), int32_t(T), 0, false, logits->data());
  };
  std::vector<float> got, from_tokens, tokens_as_rows;
  run(&rows, &got);
  const float e = RelErr(got, want.back());
  EXPECT_LT(e, 3e-3f);
  EXPECT_GT(RelErr(got, without.back()), 0.05f);  // the slices move the logits: they are not skipped
  run(nullptr, &from_tokens);
  run(&token_rows, &tokens_as_rows);
  EXPECT_EQ(tokens_as_rows, from_tokens);
  std::printf("[ family qwen3vl   ] deepstack rows: |engine - reference| / sd(logits) %.2e (without the slices %.2e)\n",
              double(e), double(RelErr(got, without.back())));
}

}  // namespace
}  // namespace zf::model

// The tensor-role table and the binding that iterates it.
#include "model/tensor_roles.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "gguf/tensor_shape.h"
#include "quant/quant.h"

namespace zf::model {
namespace {

enum class Need { kAbsent, kOptional, kRequired };

struct Shape {
  int64_t ne[3] = {0, 0, 0};
  uint32_t n_dims = 0;
};
Shape Vec(int64_t n) { return Shape{{n, 0, 0}, 1}; }
Shape Mat(int64_t in, int64_t out) { return Shape{{in, out, 0}, 2}; }
Shape Experts(int64_t in, int64_t out, int64_t n) { return Shape{{in, out, n}, 3}; }

Need If(bool c, Need n = Need::kRequired) { return c ? n : Need::kAbsent; }

// Q's rows: with a per-head output gate (q_gate) each head's [q | gate].
int64_t QRows(const LayerDesc& l) { return int64_t{l.attn.n_head} * l.attn.head_dim_k * (l.attn.q_gate ? 2 : 1); }
int64_t KRows(const LayerDesc& l) { return int64_t{l.attn.n_head_kv} * l.attn.head_dim_k; }
int64_t VRows(const LayerDesc& l) { return int64_t{l.attn.n_head_kv} * l.attn.head_dim_v; }
bool Dense(const LayerDesc& l) { return l.ffn.kind != FfnKind::kMoe; }
// A dense gated MLP: the layer's FFN, or the one beside a MoE layer's experts (Gemma 4).
bool HasDense(const LayerDesc& l) { return Dense(l) || l.ffn.n_ff_dense > 0; }
int64_t DenseFf(const LayerDesc& l) { return Dense(l) ? l.ffn.n_ff : l.ffn.n_ff_dense; }
bool FusedExps(const LayerDesc& l) { return !Dense(l) && l.ffn.fused_gate_up; }
bool ShortConv(const LayerDesc& l) { return l.mixer == MixerKind::kShortConv; }
bool Mamba2(const LayerDesc& l) { return l.mixer == MixerKind::kMamba2; }
bool DeltaNet(const LayerDesc& l) { return l.mixer == MixerKind::kGatedDeltaNet; }
bool Ssm(const LayerDesc& l) { return Mamba2(l) || DeltaNet(l); }  // the shared ssm_* names
bool SharedExperts(const LayerDesc& l) { return !Dense(l) && l.ffn.n_ff_shared > 0; }
// The attention mixer's own tensors (Q/K/V, output, their biases and norms): absent in a layer
// with another mixer, whatever the attention description says.
bool AttentionRole(LayerRole r) { return r >= LayerRole::kAttnQ && r <= LayerRole::kAttnKNorm; }
bool LayerNormBias(const LayerDesc& l, bool has_norm) { return has_norm && l.norm.kind == NormKind::kLayer; }
Need OwnKv(const LayerDesc& l) { return l.attn.kv_from < 0 ? Need::kRequired : Need::kOptional; }
int64_t PerLayerWidth(const ModelDesc& d) { return int64_t{d.n_embd_per_layer} * d.n_layer; }

struct LayerRoleSpec {
  LayerRole role;
  const char* name;  // after "blk.N."
  Need (*need)(const LayerDesc&);
  Shape (*shape)(const ModelDesc&, const LayerDesc&);
};

using D = const ModelDesc&;
using L = const LayerDesc&;

// clang-format off
const LayerRoleSpec kLayerRoles[] = {
  {LayerRole::kAttnNorm, "attn_norm.weight", [](L l) { return If(l.norm.pre_attn); }, [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kAttnNormBias, "attn_norm.bias", [](L l) { return If(LayerNormBias(l, l.norm.pre_attn), Need::kOptional); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kAttnQ, "attn_q.weight", [](L l) { return If(!l.attn.fused_qkv); }, [](D d, L l) { return Mat(d.n_embd, QRows(l)); }},
  // A layer sharing another's KV projects only Q: its K/V weights, when the file has them, are unused.
  {LayerRole::kAttnK, "attn_k.weight", [](L l) { return If(!l.attn.fused_qkv, OwnKv(l)); },
   [](D d, L l) { return Mat(d.n_embd, KRows(l)); }},
  {LayerRole::kAttnV, "attn_v.weight", [](L l) { return If(!l.attn.fused_qkv, l.attn.v_optional ? Need::kOptional : OwnKv(l)); },
   [](D d, L l) { return Mat(d.n_embd, VRows(l)); }},
  {LayerRole::kAttnQkv, "attn_qkv.weight", [](L l) { return If(l.attn.fused_qkv); },
   [](D d, L l) { return Mat(d.n_embd, QRows(l) + KRows(l) + VRows(l)); }},
  {LayerRole::kAttnQkvBias, "attn_qkv.bias", [](L l) { return If(l.attn.fused_qkv && l.attn.bias_qkv, Need::kOptional); },
   [](D, L l) { return Vec(QRows(l) + KRows(l) + VRows(l)); }},
  {LayerRole::kAttnOut, "attn_output.weight", [](L) { return Need::kRequired; },
   [](D d, L l) { return Mat(int64_t{l.attn.n_head} * l.attn.head_dim_v, d.n_embd); }},
  {LayerRole::kAttnQBias, "attn_q.bias", [](L l) { return If(l.attn.bias_qkv, Need::kOptional); },
   [](D, L l) { return Vec(QRows(l)); }},
  {LayerRole::kAttnKBias, "attn_k.bias", [](L l) { return If(l.attn.bias_qkv, Need::kOptional); },
   [](D, L l) { return Vec(KRows(l)); }},
  {LayerRole::kAttnVBias, "attn_v.bias", [](L l) { return If(l.attn.bias_qkv, Need::kOptional); },
   [](D, L l) { return Vec(VRows(l)); }},
  {LayerRole::kAttnOutBias, "attn_output.bias", [](L l) { return If(l.attn.bias_out, Need::kOptional); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kAttnQNorm, "attn_q_norm.weight", [](L l) { return If(l.attn.qk_norm != QkNorm::kNone); },
   [](D, L l) { return Vec(l.attn.qk_norm == QkNorm::kFullWidth ? QRows(l) : l.attn.head_dim_k); }},
  {LayerRole::kAttnKNorm, "attn_k_norm.weight", [](L l) { return If(l.attn.qk_norm != QkNorm::kNone, OwnKv(l)); },
   [](D, L l) { return Vec(l.attn.qk_norm == QkNorm::kFullWidth ? KRows(l) : l.attn.head_dim_k); }},
  {LayerRole::kPostAttnNorm, "post_attention_norm.weight",
   [](L l) { return If(l.norm.post_attn || (l.norm.pre_ffn && l.norm.ffn_norm_named_post_attention)); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnNorm, "ffn_norm.weight", [](L l) { return If(l.norm.pre_ffn && !l.norm.ffn_norm_named_post_attention); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnNormBias, "ffn_norm.bias", [](L l) { return If(LayerNormBias(l, l.norm.pre_ffn), Need::kOptional); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnGate, "ffn_gate.weight",
   [](L l) { return If((l.ffn.kind == FfnKind::kGated && !l.ffn.fused_gate_up) || l.ffn.n_ff_dense > 0); },
   [](D d, L l) { return Mat(d.n_embd, DenseFf(l)); }},
  {LayerRole::kFfnUp, "ffn_up.weight", [](L l) { return If(HasDense(l)); },
   [](D d, L l) { return Mat(d.n_embd, DenseFf(l) * (Dense(l) && l.ffn.fused_gate_up ? 2 : 1)); }},
  {LayerRole::kFfnDown, "ffn_down.weight", [](L l) { return If(HasDense(l)); }, [](D d, L l) { return Mat(DenseFf(l), d.n_embd); }},
  {LayerRole::kPostFfnNorm, "post_ffw_norm.weight", [](L l) { return If(l.norm.post_ffn); }, [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnUpBias, "ffn_up.bias", [](L l) { return If(Dense(l) && l.ffn.bias, Need::kOptional); },
   [](D, L l) { return Vec(int64_t{l.ffn.n_ff} * (l.ffn.fused_gate_up ? 2 : 1)); }},
  {LayerRole::kFfnDownBias, "ffn_down.bias", [](L l) { return If(Dense(l) && l.ffn.bias, Need::kOptional); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kAttnOutNorm, "attn_output_norm.weight", [](L l) { return If(l.norm.after_residual_attn); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kAttnOutNormBias, "attn_output_norm.bias",
   [](L l) { return If(LayerNormBias(l, l.norm.after_residual_attn), Need::kOptional); }, [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kLayerOutNorm, "layer_output_norm.weight", [](L l) { return If(l.norm.after_residual_ffn); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kLayerOutNormBias, "layer_output_norm.bias",
   [](L l) { return If(LayerNormBias(l, l.norm.after_residual_ffn), Need::kOptional); }, [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnGateInp, "ffn_gate_inp.weight", [](L l) { return If(!Dense(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.ffn.n_expert); }},
  {LayerRole::kFfnGateExps, "ffn_gate_exps.weight", [](L l) { return If(!Dense(l) && !FusedExps(l)); },
   [](D d, L l) { return Experts(d.n_embd, l.ffn.n_ff, l.ffn.n_expert); }},
  {LayerRole::kFfnGateUpExps, "ffn_gate_up_exps.weight", [](L l) { return If(FusedExps(l)); },
   [](D d, L l) { return Experts(d.n_embd, 2 * int64_t{l.ffn.n_ff}, l.ffn.n_expert); }},
  {LayerRole::kFfnDownExpsScale, "ffn_down_exps.scale", [](L l) { return If(!Dense(l), Need::kOptional); },
   [](D, L l) { return Vec(l.ffn.n_expert); }},
  {LayerRole::kFfnGateInpScale, "ffn_gate_inp.scale", [](L l) { return If(!Dense(l) && l.ffn.router_scaled_norm); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnPreNorm2, "pre_ffw_norm_2.weight", [](L l) { return If(l.ffn.n_ff_dense > 0); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnPostNorm1, "post_ffw_norm_1.weight", [](L l) { return If(l.ffn.n_ff_dense > 0); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnPostNorm2, "post_ffw_norm_2.weight", [](L l) { return If(l.ffn.n_ff_dense > 0); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kFfnUpExps, "ffn_up_exps.weight", [](L l) { return If(!Dense(l) && !FusedExps(l)); },
   [](D d, L l) { return Experts(d.n_embd, l.ffn.n_ff, l.ffn.n_expert); }},
  {LayerRole::kFfnDownExps, "ffn_down_exps.weight", [](L l) { return If(!Dense(l)); },
   [](D d, L l) { return Experts(l.ffn.n_ff, d.n_embd, l.ffn.n_expert); }},
  {LayerRole::kAttnSinks, "attn_sinks.weight", [](L l) { return If(l.attn.sinks); }, [](D, L l) { return Vec(l.attn.n_head); }},
  {LayerRole::kFfnGateInpBias, "ffn_gate_inp.bias", [](L l) { return If(!Dense(l) && l.ffn.router_bias); },
   [](D, L l) { return Vec(l.ffn.n_expert); }},
  // Expert biases are F32 matrices (one row per expert), read in place by the forward pass.
  {LayerRole::kFfnGateExpsBias, "ffn_gate_exps.bias", [](L l) { return If(!Dense(l) && l.ffn.expert_bias); },
   [](D, L l) { return Mat(l.ffn.n_ff, l.ffn.n_expert); }},
  {LayerRole::kFfnUpExpsBias, "ffn_up_exps.bias", [](L l) { return If(!Dense(l) && l.ffn.expert_bias); },
   [](D, L l) { return Mat(l.ffn.n_ff, l.ffn.n_expert); }},
  {LayerRole::kFfnDownExpsBias, "ffn_down_exps.bias", [](L l) { return If(!Dense(l) && l.ffn.expert_bias); },
   [](D d, L l) { return Mat(d.n_embd, l.ffn.n_expert); }},
  {LayerRole::kPerLayerInpGate, "inp_gate.weight", [](L l) { return If(l.per_layer_input); },
   [](D d, L) { return Mat(d.n_embd, d.n_embd_per_layer); }},
  {LayerRole::kPerLayerProj, "proj.weight", [](L l) { return If(l.per_layer_input); },
   [](D d, L) { return Mat(d.n_embd_per_layer, d.n_embd); }},
  {LayerRole::kPerLayerPostNorm, "post_norm.weight", [](L l) { return If(l.per_layer_input); },
   [](D d, L) { return Vec(d.n_embd); }},
  {LayerRole::kLayerOutScale, "layer_output_scale.weight", [](L l) { return If(l.out_scale, Need::kOptional); },
   [](D, L) { return Vec(1); }},
  // The kernel is [l_cache, n_embd] F32 (rows of 2-4 values: llama-quantize leaves it F32).
  {LayerRole::kShortConvConv, "shortconv.conv.weight", [](L l) { return If(ShortConv(l)); },
   [](D d, L l) { return Mat(l.conv.l_cache, d.n_embd); }},
  {LayerRole::kShortConvInProj, "shortconv.in_proj.weight", [](L l) { return If(ShortConv(l)); },
   [](D d, L) { return Mat(d.n_embd, 3 * int64_t{d.n_embd}); }},
  {LayerRole::kShortConvOutProj, "shortconv.out_proj.weight", [](L l) { return If(ShortConv(l)); },
   [](D d, L) { return Mat(d.n_embd, d.n_embd); }},
  {LayerRole::kFfnExpProbsBias, "exp_probs_b.bias", [](L l) { return If(!Dense(l) && l.ffn.selection_bias); },
   [](D, L l) { return Vec(l.ffn.n_expert); }},
  // Shared experts: one gated FFN of n_ff_shared beside the routed ones, for every token (Qwen3.5:
  // scaled by sigmoid(ffn_gate_inp_shexp x)).
  {LayerRole::kFfnGateShexp, "ffn_gate_shexp.weight", [](L l) { return If(SharedExperts(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.ffn.n_ff_shared); }},
  {LayerRole::kFfnUpShexp, "ffn_up_shexp.weight", [](L l) { return If(SharedExperts(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.ffn.n_ff_shared); }},
  {LayerRole::kFfnDownShexp, "ffn_down_shexp.weight", [](L l) { return If(SharedExperts(l)); },
   [](D d, L l) { return Mat(l.ffn.n_ff_shared, d.n_embd); }},
  {LayerRole::kFfnGateInpShexp, "ffn_gate_inp_shexp.weight", [](L l) { return If(SharedExperts(l) && l.ffn.shared_gate); },
   [](D d, L) { return Vec(d.n_embd); }},
  // Mamba-2 and gated DeltaNet share the converter's ssm_* names, with shapes of their own;
  // ssm_a / ssm_d carry no ".weight" suffix. The conv kernel, A, D and the norms stay F32
  // (llama-quantize leaves them).
  {LayerRole::kSsmIn, "ssm_in.weight", [](L l) { return If(Mamba2(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.ssm.InProj()); }},
  {LayerRole::kSsmConv1d, "ssm_conv1d.weight", [](L l) { return If(Ssm(l)); },
   [](D, L l) { return Mamba2(l) ? Mat(l.ssm.d_conv, l.ssm.Channels()) : Mat(l.delta.d_conv, l.delta.channels()); }},
  {LayerRole::kSsmConv1dBias, "ssm_conv1d.bias", [](L l) { return If(Mamba2(l), Need::kOptional); },
   [](D, L l) { return Vec(l.ssm.Channels()); }},
  {LayerRole::kSsmDtBias, "ssm_dt.bias", [](L l) { return If(Ssm(l)); },
   [](D, L l) { return Vec(Mamba2(l) ? l.ssm.n_head : l.delta.n_v_heads); }},
  {LayerRole::kSsmA, "ssm_a", [](L l) { return If(Ssm(l)); },
   [](D, L l) { return Mamba2(l) ? Mat(1, l.ssm.n_head) : Vec(l.delta.n_v_heads); }},
  {LayerRole::kSsmD, "ssm_d", [](L l) { return If(Mamba2(l)); }, [](D, L l) { return Mat(1, l.ssm.n_head); }},
  {LayerRole::kSsmNorm, "ssm_norm.weight", [](L l) { return If(Ssm(l)); },
   [](D, L l) {  // shapes are computed for every layer
     return Mamba2(l) ? Mat(l.ssm.d_inner / std::max(1, l.ssm.n_group), l.ssm.n_group) : Vec(l.delta.head_v_dim);
   }},
  {LayerRole::kSsmOut, "ssm_out.weight", [](L l) { return If(Ssm(l)); },
   [](D d, L l) { return Mat(Mamba2(l) ? l.ssm.d_inner : l.delta.value_dim(), d.n_embd); }},
  {LayerRole::kDeltaQkv, "attn_qkv.weight", [](L l) { return If(DeltaNet(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.delta.channels()); }},
  {LayerRole::kDeltaGate, "attn_gate.weight", [](L l) { return If(DeltaNet(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.delta.value_dim()); }},
  {LayerRole::kSsmBeta, "ssm_beta.weight", [](L l) { return If(DeltaNet(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.delta.n_v_heads); }},
  {LayerRole::kSsmAlpha, "ssm_alpha.weight", [](L l) { return If(DeltaNet(l)); },
   [](D d, L l) { return Mat(d.n_embd, l.delta.n_v_heads); }},
};

struct GlobalRoleSpec {
  GlobalRole role;
  const char* name;
  Need (*need)(D);
  Shape (*shape)(D);
};

// Frequency factors cover the rotated dims of the layers that use them (Gemma 4: full layers only).
int64_t HalfRot(D d) {
  for (const LayerDesc& l : d.layers) {
    if (l.attn.rope.use_freq_factors) return l.attn.rope.n_rot / 2;
  }
  return d.layers.empty() ? 0 : d.layers[0].attn.rope.n_rot / 2;
}

const GlobalRoleSpec kGlobalRoles[] = {
  {GlobalRole::kTokenEmbd, "token_embd.weight", [](D) { return Need::kRequired; }, [](D d) { return Mat(d.n_embd, d.n_vocab); }},
  {GlobalRole::kOutputNorm, "output_norm.weight", [](D d) { return If(d.has_output_norm); }, [](D d) { return Vec(d.n_embd); }},
  {GlobalRole::kOutputNormBias, "output_norm.bias",
   [](D d) { return If(d.has_output_norm && d.output_norm_kind == NormKind::kLayer, Need::kOptional); },
   [](D d) { return Vec(d.n_embd); }},
  {GlobalRole::kOutput, "output.weight", [](D d) { return If(d.has_output_head && !d.tied_output, Need::kOptional); },
   [](D d) { return Mat(d.n_embd, d.n_vocab); }},
  {GlobalRole::kOutputBias, "output.bias", [](D d) { return If(d.has_output_head && d.output_bias, Need::kOptional); },
   [](D d) { return Vec(d.n_vocab); }},
  {GlobalRole::kPosEmbd, "position_embd.weight", [](D d) { return If(d.pos_embd == PositionEmbd::kAbsolute); },
   [](D d) { return Mat(d.n_embd, d.n_ctx_train); }},
  {GlobalRole::kTokenTypes, "token_types.weight", [](D d) { return If(d.n_token_types > 0, Need::kOptional); },
   [](D d) { return Mat(d.n_embd, d.n_token_types); }},
  {GlobalRole::kInputNorm, "token_embd_norm.weight", [](D d) { return If(d.input_norm); }, [](D d) { return Vec(d.n_embd); }},
  {GlobalRole::kInputNormBias, "token_embd_norm.bias", [](D d) { return If(d.input_norm && d.input_norm_bias); }, [](D d) { return Vec(d.n_embd); }},
  // Without `<arch>.pooling_type` = rank the head is still bound when present (llama.cpp loads
  // it optionally); only rank pooling uses it. A decoder reranker (Qwen3-Reranker) keeps its
  // vocabulary head and has cls.output only (the yes / no rows of its output matrix).
  {GlobalRole::kCls, "cls.weight", [](D d) { return If(!d.has_output_head, Need::kOptional); },
   [](D d) { return Mat(d.n_embd, d.n_embd); }},
  {GlobalRole::kClsBias, "cls.bias", [](D d) { return If(!d.has_output_head, Need::kOptional); }, [](D d) { return Vec(d.n_embd); }},
  {GlobalRole::kClsOut, "cls.output.weight", [](D) { return Need::kOptional; },
   [](D d) { return Mat(d.n_embd, d.n_cls_out); }},
  {GlobalRole::kClsOutBias, "cls.output.bias", [](D) { return Need::kOptional; },
   [](D d) { return Vec(d.n_cls_out); }},
  {GlobalRole::kDense2, "dense_2.weight", [](D d) { return If(d.n_dense > 0, Need::kOptional); },
   [](D d) { return Mat(d.n_embd, d.n_dense); }},
  {GlobalRole::kDense3, "dense_3.weight", [](D d) { return If(d.n_dense > 0, Need::kOptional); },
   [](D d) { return Mat(d.n_dense, d.n_embd); }},
  {GlobalRole::kPerLayerTokenEmbd, "per_layer_token_embd.weight", [](D d) { return If(d.n_embd_per_layer > 0); },
   [](D d) { return Mat(PerLayerWidth(d), d.n_vocab); }},
  {GlobalRole::kPerLayerModelProj, "per_layer_model_proj.weight", [](D d) { return If(d.n_embd_per_layer > 0); },
   [](D d) { return Mat(d.n_embd, PerLayerWidth(d)); }},
  {GlobalRole::kPerLayerProjNorm, "per_layer_proj_norm.weight", [](D d) { return If(d.n_embd_per_layer > 0); },
   [](D d) { return Vec(d.n_embd_per_layer); }},
  {GlobalRole::kRopeFreqs, "rope_freqs.weight", [](D) { return Need::kOptional; }, [](D d) { return Vec(HalfRot(d)); }},
  {GlobalRole::kRopeFactorsLong, "rope_factors_long.weight", [](D) { return Need::kOptional; },
   [](D d) { return Vec(HalfRot(d)); }},
  {GlobalRole::kRopeFactorsShort, "rope_factors_short.weight", [](D) { return Need::kOptional; },
   [](D d) { return Vec(HalfRot(d)); }},
};
// clang-format on

Status Bind(const gguf::GgufFile& f, const std::string& name, Need need, const Shape& want, const Tensor** out) {
  *out = nullptr;
  if (need == Need::kAbsent) return Status::Ok();
  const Tensor* t = f.FindTensor(name);
  if (t == nullptr) {
    if (need == Need::kOptional) return Status::Ok();
    return FormatError("missing tensor '" + name + "' (expected shape " + gguf::ShapeString(want.ne, want.n_dims) + ")");
  }
  // As ggml compares: all four dims, missing ones 1 (llama-quantize writes [n, 1] as [n]).
  if (!gguf::HasShape(*t, want.ne, want.n_dims)) {
    return FormatError("tensor '" + name + "' has shape " + gguf::ShapeString(t->ne, t->n_dims) + ", expected " +
                       gguf::ShapeString(want.ne, want.n_dims));
  }
  if (want.n_dims == 1 && t->type != GgmlType::F32) {
    return Unsupported("tensor '" + name + "' is " + TypeName(t->type) + "; norms, biases and factors must be F32");
  }
  if (want.n_dims >= 2 && !quant::IsSupported(t->type)) {
    return Unsupported("tensor '" + name + "' has type " + std::string(TypeName(t->type)) +
                       ", which this build cannot compute with");
  }
  *out = t;
  return Status::Ok();
}

Status BindInto(Weights* w, const gguf::GgufFile& f, const std::string& name, Need need, const Shape& want,
                const Tensor** out) {
  ZF_RETURN_IF_ERROR(Bind(f, name, need, want, out));
  if (*out == nullptr) return Status::Ok();
  w->bound.push_back(*out);  // the file's own tensor: the CUDA upload and the unused check use it
  if ((*out)->n_dims != want.n_dims) {  // the same bytes under the role's rank (code reads n_dims)
    Tensor v = **out;
    v.n_dims = want.n_dims;
    w->views.push_back(v);
    *out = &w->views.back();
  }
  return Status::Ok();
}

// A 2-D view of rows [r0, r0 + rows) of matrix `t`, or of expert `e`'s slice of a 3-D tensor.
const Tensor* View(Weights* w, const Tensor& t, int64_t e, int64_t r0, int64_t rows, const std::string& tag) {
  const size_t row_bytes = RowSize(t.type, t.ne[0]);
  Tensor v = t;
  v.n_dims = 2;
  v.ne[1] = rows;
  v.ne[2] = v.ne[3] = 1;
  const size_t off = (size_t(e) * size_t(t.ne[1]) + size_t(r0)) * row_bytes;
  v.data = t.data + off;
  v.offset = t.offset + off;
  v.nbytes = size_t(rows) * row_bytes;
  w->names.push_back(std::string(t.name) + "[" + tag + "]");
  v.name = w->names.back();
  w->views.push_back(v);
  return &w->views.back();
}

// Elements [i0, i0 + n) of a 1-D F32 tensor.
const Tensor* VectorView(Weights* w, const Tensor& t, int64_t i0, int64_t n, const std::string& tag) {
  Tensor v = t;
  v.ne[0] = n;
  v.data = t.data + size_t(i0) * sizeof(float);
  v.offset = t.offset + size_t(i0) * sizeof(float);
  v.nbytes = size_t(n) * sizeof(float);
  w->names.push_back(std::string(t.name) + "[" + tag + "]");
  v.name = w->names.back();
  w->views.push_back(v);
  return &w->views.back();
}

}  // namespace

Status BindWeights(const gguf::GgufFile& f, const ModelDesc& d, Weights* w) {
  for (const GlobalRoleSpec& s : kGlobalRoles) {
    const bool renamed = s.role == GlobalRole::kOutputNorm && !d.output_norm_name.empty();
    ZF_RETURN_IF_ERROR(BindInto(w, f, renamed ? d.output_norm_name : s.name, s.need(d), s.shape(d),
                                &w->global[size_t(s.role)]));
  }
  if (d.has_output_head && w->global[size_t(GlobalRole::kOutput)] == nullptr) {
    w->global[size_t(GlobalRole::kOutput)] = w->global[size_t(GlobalRole::kTokenEmbd)];  // tied embeddings
  }
  w->layers.assign(size_t(d.n_layer), LayerTensors{});
  for (int32_t il = 0; il < d.n_layer; ++il) {
    const LayerDesc& ld = d.layers[size_t(il)];
    LayerTensors& lt = w->layers[size_t(il)];
    const std::string prefix = "blk." + std::to_string(il) + ".";
    if (ld.ffn.kind == FfnKind::kMoe && f.FindTensor(prefix + "ffn_gate_exps.weight") == nullptr &&
        f.FindTensor(prefix + "ffn_gate.0.weight") != nullptr) {
      return Unsupported("tensor '" + prefix + "ffn_gate.0.weight': one tensor per expert is the old Mixtral GGUF layout, "
                         "which is not supported (convert the model again to get 3-D ffn_*_exps tensors)");
    }
    for (const LayerRoleSpec& s : kLayerRoles) {
      const Need need = AttentionRole(s.role) && !ld.attention() ? Need::kAbsent : s.need(ld);
      ZF_RETURN_IF_ERROR(BindInto(w, f, prefix + s.name, need, s.shape(d, ld), &lt[s.role]));
    }
    if (const Tensor* k = lt[LayerRole::kShortConvConv]; k != nullptr && k->type != GgmlType::F32) {
      return Unsupported("tensor '" + prefix + "shortconv.conv.weight' is " + TypeName(k->type) + "; it must be F32");
    }
    for (LayerRole r : {LayerRole::kSsmConv1d, LayerRole::kSsmA, LayerRole::kSsmD, LayerRole::kSsmNorm}) {
      if (lt[r] != nullptr && lt[r]->type != GgmlType::F32) {
        return Unsupported("tensor '" + std::string(lt[r]->name) + "' is " + TypeName(lt[r]->type) + "; it must be F32");
      }
    }
    if (ld.norm.pre_ffn && ld.norm.ffn_norm_named_post_attention && !ld.norm.post_attn) {
      lt[LayerRole::kFfnNorm] = lt[LayerRole::kPostAttnNorm];  // the pre-FFN norm under its file name
      lt[LayerRole::kPostAttnNorm] = nullptr;
    }
    for (LayerRole r : {LayerRole::kFfnGateExpsBias, LayerRole::kFfnUpExpsBias, LayerRole::kFfnDownExpsBias}) {
      if (lt[r] != nullptr && lt[r]->type != GgmlType::F32) {
        return Unsupported("tensor '" + std::string(lt[r]->name) + "' is " + TypeName(lt[r]->type) +
                           "; expert biases must be F32");
      }
    }
    if (ld.attn.kv_from >= 0) {  // bound (the file may have them) but never read: no copies made
      lt[LayerRole::kAttnK] = lt[LayerRole::kAttnV] = lt[LayerRole::kAttnKNorm] = nullptr;
      lt[LayerRole::kAttnKBias] = lt[LayerRole::kAttnVBias] = nullptr;
    }
    if (ld.attn.fused_qkv) {
      const Tensor& qkv = *lt[LayerRole::kAttnQkv];
      lt[LayerRole::kAttnQ] = View(w, qkv, 0, 0, QRows(ld), "q");
      lt[LayerRole::kAttnK] = View(w, qkv, 0, QRows(ld), KRows(ld), "k");
      lt[LayerRole::kAttnV] = View(w, qkv, 0, QRows(ld) + KRows(ld), VRows(ld), "v");
      if (const Tensor* b = lt[LayerRole::kAttnQkvBias]) {  // a fused bias wins over separate ones
        lt[LayerRole::kAttnQBias] = VectorView(w, *b, 0, QRows(ld), "q");
        lt[LayerRole::kAttnKBias] = VectorView(w, *b, QRows(ld), KRows(ld), "k");
        lt[LayerRole::kAttnVBias] = VectorView(w, *b, QRows(ld) + KRows(ld), VRows(ld), "v");
      }
    }
    if (ld.ffn.kind != FfnKind::kMoe && ld.ffn.fused_gate_up) {
      const Tensor& up = *lt[LayerRole::kFfnUp];
      lt[LayerRole::kFfnGate] = View(w, up, 0, 0, ld.ffn.n_ff, "gate");
      lt[LayerRole::kFfnUp] = View(w, up, 0, ld.ffn.n_ff, ld.ffn.n_ff, "up");
    }
    if (ld.ffn.kind == FfnKind::kMoe) {
      const Tensor& dn = *lt[LayerRole::kFfnDownExps];
      for (int32_t e = 0; e < ld.ffn.n_expert; ++e) {
        const std::string tag = std::to_string(e);
        if (FusedExps(ld)) {  // each expert's rows [gate | up]
          const Tensor& gu = *lt[LayerRole::kFfnGateUpExps];
          lt.expert_gate.push_back(View(w, gu, e, 0, ld.ffn.n_ff, tag + ".gate"));
          lt.expert_up.push_back(View(w, gu, e, ld.ffn.n_ff, ld.ffn.n_ff, tag + ".up"));
        } else {
          const Tensor& g = *lt[LayerRole::kFfnGateExps];
          const Tensor& u = *lt[LayerRole::kFfnUpExps];
          lt.expert_gate.push_back(View(w, g, e, 0, g.ne[1], tag));
          lt.expert_up.push_back(View(w, u, e, 0, u.ne[1], tag));
        }
        lt.expert_down.push_back(View(w, dn, e, 0, dn.ne[1], tag));
      }
    }
  }
  // A tensor no role bound would be silently ignored, and the model computed without it: refuse.
  std::unordered_set<const Tensor*> used(w->bound.begin(), w->bound.end());
  const auto mtp_block = [&](std::string_view name) {  // "blk.N." with N past the run layers
    if (d.n_layer_mtp == 0 || name.substr(0, 4) != "blk.") return false;
    int64_t il = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) il = il * 10 + (name[i] - '0');
    return i > 4 && i < name.size() && name[i] == '.' && il >= d.n_layer && il < int64_t{d.n_layer} + d.n_layer_mtp;
  };
  for (const Tensor& t : f.tensors()) {
    if (used.count(&t) != 0 || (d.tied_output && t.name == "output.weight") || mtp_block(t.name)) continue;
    return Unsupported("tensor '" + std::string(t.name) + "' has no role in the '" + d.arch +
                       "' model description (a layout variant zerfoo does not implement)");
  }
  return Status::Ok();
}

std::vector<const Tensor*> Weights::Matrices() const {
  std::vector<const Tensor*> out;
  std::unordered_set<const Tensor*> seen;
  const auto add = [&](const Tensor* t) {
    if (t != nullptr && t->n_dims == 2 && seen.insert(t).second) out.push_back(t);
  };
  add((*this)[GlobalRole::kOutput]);
  add((*this)[GlobalRole::kCls]);
  add((*this)[GlobalRole::kClsOut]);
  add((*this)[GlobalRole::kPerLayerModelProj]);
  for (const LayerTensors& l : layers) {
    for (LayerRole r : {LayerRole::kAttnQ, LayerRole::kAttnK, LayerRole::kAttnV, LayerRole::kAttnOut, LayerRole::kFfnGate,
                        LayerRole::kFfnUp, LayerRole::kFfnDown, LayerRole::kFfnGateInp, LayerRole::kPerLayerInpGate,
                        LayerRole::kPerLayerProj, LayerRole::kShortConvInProj, LayerRole::kShortConvOutProj,
                        LayerRole::kFfnGateShexp, LayerRole::kFfnUpShexp, LayerRole::kFfnDownShexp, LayerRole::kSsmIn,
                        LayerRole::kSsmOut, LayerRole::kDeltaQkv, LayerRole::kDeltaGate, LayerRole::kSsmBeta,
                        LayerRole::kSsmAlpha}) {
      add(l[r]);
    }
    for (size_t e = 0; e < l.expert_gate.size(); ++e) {
      add(l.expert_gate[e]);
      add(l.expert_up[e]);
      add(l.expert_down[e]);
    }
  }
  return out;
}

std::vector<const Tensor**> Weights::VectorRefs() {
  std::vector<const Tensor**> out;
  for (const Tensor*& t : global) {
    if (t != nullptr && t->n_dims == 1) out.push_back(&t);
  }
  for (LayerTensors& l : layers) {
    for (const Tensor*& t : l.t) {
      if (t != nullptr && t->n_dims == 1) out.push_back(&t);
    }
    // Read on the host at run time like a vector (never multiplied as a matrix).
    if (l[LayerRole::kShortConvConv] != nullptr) out.push_back(&l[LayerRole::kShortConvConv]);
    for (LayerRole r : {LayerRole::kSsmConv1d, LayerRole::kSsmA, LayerRole::kSsmD, LayerRole::kSsmNorm}) {
      if (l[r] != nullptr && l[r]->n_dims != 1) out.push_back(&l[r]);  // 1-D ones are in already
    }
  }
  return out;
}

}  // namespace zf::model

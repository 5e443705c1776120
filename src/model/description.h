// The model description: what every layer computes, filled by the family's builder
// (model/arch_*.cpp) from GGUF metadata. Binding (tensor_roles), the forward pass (forward.cpp)
// and the engines' weight copies read only this; nothing downstream switches on the family name.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops.h"

namespace zf::model {

using engine::Activation;
using engine::Gating;
using engine::RopeStyle;

enum class NormKind : int32_t { kRms, kLayer };

// Position information added to the input vectors (besides any rope inside attention).
enum class PositionEmbd : int32_t {
  kNone,
  kAbsolute,  // position_embd.weight [n_embd, n_ctx_train]: row p added at position p (BERT)
};

// How an embedding pass turns a sequence's token states into one vector: `<arch>.pooling_type`
// as the GGUF stores it (llama.cpp's values, stable).
enum class Pooling : int32_t {
  kUnspecified = -1,  // the file says nothing
  kNone = 0,          // one vector per token
  kMean = 1,          // the mean of every token's state
  kCls = 2,           // the first token's state
  kLast = 3,          // the last token's state
  kRank = 4,          // the first token through the classification head (rerankers): scores
};

// Where a layer normalizes Q and K after the projections.
enum class QkNorm : int32_t {
  kNone,
  kPerHead,    // one [head_dim] weight applied to every head (gemma3, qwen3)
  kFullWidth,  // one [n_head * head_dim] weight over the whole projection (olmo2)
};

struct RopeDesc {
  bool enabled = true;  // false: this layer applies no rotary embedding (smollm3's every 4th)
  RopeStyle style = RopeStyle::kNorm;
  int32_t n_rot = 0;        // rotated dimensions at the start of each head (partial rotary < head_dim)
  float base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling: positions multiplied by this
  float attn_factor = 1.0f; // cos/sin magnitude (LongRoPE; YaRN's, see hparams.cpp)
  // YaRN (engine::RopeParams): 0 = off; 1 for rope.scaling.type yarn. The betas are the
  // reference's defaults (it reads rope.scaling.yarn_beta_* only for families we do not run).
  float ext_factor = 0.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // Per-frequency divisors from a tensor: rope_freqs (llama3 scaling) or, for LongRoPE,
  // rope_factors_long / _short chosen by the session's context (see ModelDesc::n_ctx_orig).
  bool use_freq_factors = false;
};

struct AttentionDesc {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  float scale = 0.0f;    // multiplies q·k; 0 = 1/sqrt(head_dim_k)
  float softcap = 0.0f;  // tanh cap of the scores; 0 = off
  // Sliding window in positions, 0 = none: with causal attention a position sees the last
  // `window` positions; without, those at most window / 2 away on either side (the reference's
  // symmetric window, EmbeddingGemma).
  int32_t window = 0;
  bool causal = true;    // false: every position of the step sees every other one (encoders)
  RopeDesc rope;
  QkNorm qk_norm = QkNorm::kNone;
  bool fused_qkv = false;  // one attn_qkv matrix, rows [Q | K | V]
  bool bias_qkv = false;   // optional q/k/v biases are bound when present
  bool bias_out = false;
  bool sinks = false;      // attn_sinks [n_head]: a learned logit per head in the softmax denominator
  // Gemma 4: attn_v may be absent (attention_k_eq_v), the values are then the key projection
  // (taken before K's norm and rope); v_norm: each value head RMS-normalized without a weight.
  bool v_optional = false;
  bool v_norm = false;
  // KV shared across layers: -1 = this layer stores its own K/V; else the (earlier) layer whose
  // cached rows it attends over. Such a layer has no KV cache of its own and projects only Q.
  int32_t kv_from = -1;
  // Qwen3.5's gated attention: attn_q's rows are per head [q | gate] (2 * head_dim_k each); the
  // attention output is multiplied by sigmoid(gate) before attn_output.
  bool q_gate = false;
};

enum class FfnKind : int32_t {
  kGated,  // down(act(gate x) * up x)
  kPlain,  // down(act(up x))
  kMoe,    // sum over the top-k experts of weight_e * gated expert FFN, (+ shared experts)
};

struct FfnDesc {
  FfnKind kind = FfnKind::kGated;
  Activation act = Activation::kSilu;
  int32_t n_ff = 0;            // inner size (per expert for MoE)
  bool bias = false;           // optional ffn_up.bias [n_ff] / ffn_down.bias [n_embd] (dense FFNs)
  bool fused_gate_up = false;  // one ffn_up matrix, rows [gate | up] (MoE: ffn_gate_up_exps per expert)
  // MoE.
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  Gating gating = Gating::kSoftmax;
  bool norm_topk = false;       // renormalize the selected experts' weights to sum to 1
  float expert_weight_scale = 1.0f;
  int32_t n_ff_shared = 0;      // shared expert inner size; 0 = none
  bool router_bias = false;     // ffn_gate_inp.bias [n_expert] added to the router's logits
  // ffn_{gate,up}_exps.bias [n_ff, n_expert] and ffn_down_exps.bias [n_embd, n_expert]: each
  // selected expert's row added after its product (gpt-oss).
  bool expert_bias = false;
  // Gemma 4's MoE block: a dense gated MLP (ffn_gate/up/down of n_ff_dense; input ffn_norm,
  // output post_ffw_norm_1) beside the experts (input pre_ffw_norm_2, output post_ffw_norm_2),
  // the two summed before post_ffw_norm. 0 = none.
  int32_t n_ff_dense = 0;
  // The router reads rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale (the residual stream, not
  // the FFN's normed input).
  bool router_scaled_norm = false;
  // exp_probs_b.bias [n_expert]: added to the scores for choosing the top-k only (the weights
  // stay the unbiased scores), as LFM2-MoE's router does.
  bool selection_bias = false;
  // The shared expert's output times sigmoid(ffn_gate_inp_shexp . x), one scalar per token
  // (qwen2moe, Qwen3.5-MoE); only with n_ff_shared > 0.
  bool shared_gate = false;
};

struct NormDesc {
  NormKind kind = NormKind::kRms;
  float eps = 1e-5f;
  bool pre_attn = true;   // attn_norm before attention
  bool pre_ffn = true;    // ffn_norm before the FFN
  bool post_attn = false; // post_attention_norm on the attention output, before the residual
  bool post_ffn = false;  // post_ffw_norm on the FFN output, before the residual
  // BERT's post-LN: the residual stream itself is normalized after the add, attn_output_norm
  // after attention and layer_output_norm after the FFN (this layer's kind, with biases).
  bool after_residual_attn = false;
  bool after_residual_ffn = false;
  // The pre-FFN norm is stored as post_attention_norm (gpt-oss's converter name for it).
  bool ffn_norm_named_post_attention = false;
};

// What mixes positions in a layer: attention over the sequence's KV rows, or a recurrent block
// whose per-sequence state (model/recurrent_state.h) is declared by RecurrentStateFloats.
enum class MixerKind : int32_t {
  kAttention,
  // LFM2's gated short convolution: in_proj -> [b | c | x], y = c * conv(b * x) over the last
  // l_cache positions (a causal depthwise convolution), out_proj. State: the last l_cache - 1
  // values of b * x, [l_cache - 1][n_embd].
  kShortConv,
  // Mamba-2 (Granite 4.0 hybrid): ssm_in -> [z | xBC | dt]; xBC through a causal depthwise
  // convolution of d_conv taps (+ bias, SiLU) -> [x | B | C]; per head a selective scan
  // s = exp(softplus(dt + dt_b) * A) s + softplus(..) B x, y = C s + D x; y * silu(z), an RMS
  // norm per group, ssm_out. State: the last d_conv - 1 conv inputs, [d_conv - 1][d_inner +
  // 2 n_group d_state], then the scan's [n_head][head_dim][d_state].
  kMamba2,
  // Gated DeltaNet (Qwen3.5's linear attention): attn_qkv -> [q | k | v] through a causal
  // depthwise convolution of d_conv taps and SiLU; q, k L2-normalized per head; per value head a
  // decay g = exp(ssm_a * softplus(alpha + ssm_dt)) and a write strength beta = sigmoid(beta_in);
  // the state S [d_k][d_v]: S = g S + k (beta (v - g S^T k))^T, output S^T q / sqrt(d_k); then
  // an RMS norm per head (ssm_norm) times silu(attn_gate x), ssm_out. State: the convolution's last
  // d_conv - 1 input rows, then S of every value head.
  kGatedDeltaNet,
};

struct ShortConvDesc {
  int32_t l_cache = 0;  // kernel length (shortconv.l_cache): the current position and l_cache - 1 before it
};

struct Mamba2Desc {
  int32_t d_conv = 0;   // ssm.conv_kernel
  int32_t d_inner = 0;  // ssm.inner_size (n_head * head_dim)
  int32_t d_state = 0;  // ssm.state_size
  int32_t n_head = 0;   // ssm.time_step_rank (Mamba-2's head count)
  int32_t n_group = 0;  // ssm.group_count (B / C groups, and the output norm's groups)
  int32_t Channels() const { return d_inner + 2 * n_group * d_state; }  // the convolution's width
  int32_t InProj() const { return 2 * d_inner + 2 * n_group * d_state + n_head; }  // ssm_in's rows
};

// Sizes of a gated DeltaNet layer (ssm.* keys). Value head h reads key head h % n_k_heads (the
// converter stores the value heads tiled over the key heads).
struct DeltaNetDesc {
  int32_t d_conv = 0;      // ssm.conv_kernel
  int32_t n_k_heads = 0;   // ssm.group_count
  int32_t n_v_heads = 0;   // ssm.time_step_rank
  int32_t head_k_dim = 0;  // ssm.state_size
  int32_t head_v_dim = 0;  // ssm.inner_size / n_v_heads
  int32_t key_dim() const { return n_k_heads * head_k_dim; }
  int32_t value_dim() const { return n_v_heads * head_v_dim; }
  int32_t channels() const { return 2 * key_dim() + value_dim(); }  // the convolution's [q | k | v]
};

struct LayerDesc {
  MixerKind mixer = MixerKind::kAttention;
  AttentionDesc attn;    // kAttention only
  ShortConvDesc conv;    // kShortConv only
  Mamba2Desc ssm;        // kMamba2 only
  DeltaNetDesc delta;    // kGatedDeltaNet only
  FfnDesc ffn;
  NormDesc norm;
  // Gemma 4's per-layer input (ModelDesc::n_embd_per_layer > 0), after the FFN's residual:
  // x += post_norm(proj(gelu(inp_gate x) * per_layer_input[layer])).
  bool per_layer_input = false;
  // An optional layer_output_scale [1] multiplies the layer's output (the whole residual stream).
  bool out_scale = false;
  bool attention() const { return mixer == MixerKind::kAttention; }
};

struct ModelDesc {
  std::string arch;  // general.architecture
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  std::vector<LayerDesc> layers;  // [n_layer]
  // Blocks after the n_layer run ones (nextn_predict_layers: multi-token-prediction heads): their
  // tensors are in the file and left unbound.
  int32_t n_layer_mtp = 0;

  // Input: token_embd row (times embed_scale), plus position_embd's row (pos_embd), plus row 0
  // of token_types [n_embd, n_token_types] when n_token_types > 0 (every token is "sentence A",
  // as the reference does), then token_embd_norm (a LayerNorm with bias) when input_norm.
  PositionEmbd pos_embd = PositionEmbd::kNone;
  int32_t n_token_types = 0;
  bool input_norm = false;
  bool input_norm_bias = true;  // token_embd_norm.bias (ModernBERT's LayerNorms have none)
  float input_norm_eps = 1e-12f;
  // Gemma 4's per-layer token embeddings: n_embd_per_layer floats per layer and token, made of
  // per_layer_token_embd's row (times sqrt(n_embd_per_layer)) plus the RMS-normed projection
  // per_layer_model_proj of the scaled input embedding (times 1/sqrt(n_embd)), the sum times
  // 1/sqrt(2). 0 = none.
  int32_t n_embd_per_layer = 0;

  // Output: output_norm (when has_output_norm), then the vocabulary head (when has_output_head).
  // Encoders have neither: their last layer's states are the embeddings; generation refuses them.
  bool has_output_norm = true;
  bool has_output_head = true;
  NormKind output_norm_kind = NormKind::kRms;
  float output_norm_eps = 1e-5f;
  float embed_scale = 1.0f;        // token embeddings multiplied by this
  float residual_scale = 1.0f;     // block outputs multiplied by this before the residual add
  float logit_scale = 1.0f;        // final logits multiplied by this
  float final_logit_softcap = 0.0f;
  bool tied_output = false;        // the output head is token_embd even if output.weight exists
  bool output_bias = false;        // an optional output.bias [n_vocab] is added to the logits

  // Rope frequency factors: rope_freqs when the file has it (llama3 scaling), else LongRoPE's
  // rope_factors_long when a session's context exceeds n_ctx_orig, else rope_factors_short.
  int32_t n_ctx_orig = 0;  // rope.scaling.original_context_length (default: context_length)
  // M-RoPE (qwen2vl / qwen3vl): rope.dimension_sections, how many rotated pairs take a token's
  // t / h / w / e position; all zero = plain rope. mrope_interleaved: Qwen3-VL's order (pairs
  // cycle t, h, w) rather than consecutive sections. A text token's components are equal, so
  // for text this is the plain rope of the layers' style.
  std::array<int32_t, 4> mrope_sections{};
  bool mrope_interleaved = false;
  // Qwen3-VL deepstack (n_deepstack_layers): an image row is (1 + n_deepstack) x n_embd floats,
  // the first slice the input and slice k + 1 added to layer k's output; token rows add nothing.
  int32_t n_deepstack = 0;
  // Floats per input row of embedding input (zf_session_eval_embeddings): n_embd, and a slice
  // per deepstack layer.
  int32_t n_embd_inp() const { return n_embd * (1 + n_deepstack); }

  // Embeddings: the file's pooling, and the classification head of rerankers (cls.weight
  // [n_embd, n_embd] + tanh when present, then cls.output.weight [n_embd, n_cls_out], biases
  // when present). Rank pooling feeds it the first token's state, or the last one when the
  // attention is causal (decoder rerankers such as Qwen3-Reranker: the only row that has seen
  // the whole pair). cls_softmax: the scores go through a softmax (Qwen3-Reranker's yes / no
  // logits become probabilities).
  Pooling pooling = Pooling::kUnspecified;
  int32_t n_cls_out = 1;
  bool cls_softmax = false;
  // Sentence-transformers Dense projections after pooling (EmbeddingGemma): dense_2.weight
  // [n_embd -> n_dense], then dense_3.weight [n_dense -> n_embd], no biases; 0 = none.
  int32_t n_dense = 0;

  uint64_t n_params = 0;  // total weight elements (zf_model_info)

  // The output norm's tensor name when it is not output_norm.weight (LFM2 stores it as
  // token_embd_norm.weight).
  std::string output_norm_name;

  // The largest KV widths over the layers (cache sizing: a narrower layer's rows are padded).
  int32_t MaxKWidth() const;
  int32_t MaxVWidth() const;
  // KV cache layers: one per layer with its own K/V (kv_from < 0), in layer order; KvSlot(il)
  // is the cache layer that layer il stores to or, sharing, reads from.
  int32_t NKvLayers() const;
  int32_t KvSlot(int32_t il) const;
  // True when a layer keeps a recurrent state (RecurrentStateFloats > 0): such a sequence cannot
  // be rolled back by dropping KV rows alone (runtime/session.h, doc/state.md).
  bool HasRecurrentLayers() const;
  // M-RoPE (mrope_sections): whether image rows take 2D positions; and whether a text token's
  // positions (t, t, t, 0 as the reference gives them) rotate every pair as plain rope at t
  // would (false when some rotated pair falls in the e section, or outside the interleaved
  // cycles: Qwen3-VL's last pairs): then text runs through the sectioned rope as well.
  bool mrope() const { return mrope_sections[0] + mrope_sections[1] + mrope_sections[2] + mrope_sections[3] > 0; }
  bool MropeTextPlain() const;
};

// Floats of one sequence's recurrent state for layer `l` (0 for an attention layer, whose state
// is its KV rows). A new recurrent kind declares its state here (Mamba-2's conv + SSM state,
// gated DeltaNet's conv + [heads][d_k][d_v] matrix) and gets snapshots, rollback, session
// state and the prefix cache through the same per-layer buffer.
size_t RecurrentStateFloats(const ModelDesc& d, const LayerDesc& l);

// The optional engine ops (engine/ops.h) this model's forward pass calls; an engine lacking one
// cannot run it.
std::vector<engine::Op> RequiredOps(const ModelDesc& d);

}  // namespace zf::model

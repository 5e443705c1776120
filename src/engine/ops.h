// The vocabulary of the compute interface (engine/backend.h): op parameters and the kinds a
// model description chooses between. Defined here, not in model/, so that the engines depend
// on nothing above them; model/ builds its per-layer description from these.
#pragma once

#include <array>
#include <cstdint>

namespace zf::engine {

// Where a model computes. kAuto: CUDA when the driver, our kernel library and a GPU are there
// and the engine supports the model, else the CPU (with a log line saying why).
enum class Device : int32_t { kAuto = 0, kCpu = 1, kCuda = 2 };

// Which pairs of a head's dimensions RoPE rotates together.
enum class RopeStyle : int32_t {
  kNorm,  // adjacent pairs (x[2i], x[2i+1]): the llama family (its GGUF Q/K are permuted for this)
  kNeox,  // halves (x[i], x[i + n_rot/2]): gemma, qwen, phi3, olmo2
};

// Activation of an FFN: gated (act(gate) * up) or applied alone (plain MLP).
//   kSwigluOai (gpt-oss experts, needs Op::kSwigluOai): with g = min(gate, limit) and
//   u = clamp(up, -limit, limit), g / (1 + exp(-alpha g)) * (u + 1), alpha and limit below (the
//   reference's constants, not in the file).
enum class Activation : int32_t { kSilu, kGeluTanh, kSwigluOai };
constexpr float kSwigluOaiAlpha = 1.702f;
constexpr float kSwigluOaiLimit = 7.0f;

// MoE router: how expert weights are made from the router's logits.
//   kSoftmax: softmax over all experts, top-k of that; kSigmoid: sigmoid of each logit;
//   kSoftmaxWeight (gpt-oss): top-k of the raw logits, then a softmax over the k selected.
enum class Gating : int32_t { kSoftmax, kSigmoid, kSoftmaxWeight };

// Ops beyond the core set that not every engine implements (Backend::Supports). A model whose
// description needs one that the chosen engine lacks is refused by that engine (CPU fallback
// under device=AUTO, an error naming the op under device=CUDA): it never moves silently.
enum class Op : int32_t {
  kLayerNorm,   // mean-centred norm with optional bias
  kScale,       // x *= s, and x += s * y (residual / logit multipliers)
  kPlainFfn,    // act(x) without a gate
  kMoe,         // router top-k and expert matmuls (reads the router's logits on the host)
  kRopeFactors, // per-frequency divisors and a cos/sin multiplier (LongRoPE, llama3)
  kNonCausal,   // attention over every position of the step (AttentionParams::causal = false)
  kRopeYarn,    // YaRN: per-frequency blend of scaled and unscaled angles (RopeParams::ext_factor)
  kAttnSinks,   // a learned per-head logit in the softmax denominator (AttentionParams::sinks)
  kSwigluOai,   // Activation::kSwigluOai (the clamped SwiGLU of gpt-oss's experts)
  kStridedRows, // row copies between buffers of different strides (Backend::CopyRows): per-layer
                // inputs, KV rows narrower than the cache's
  kUnweightedNorm,  // RmsNorm without a weight (w == nullptr)
  kShortConv,   // LFM2's gated short convolution with a per-sequence state (Backend::ShortConv)
  kMamba2,      // Mamba-2's convolution + selective scan with a per-sequence state (Backend::Mamba2)
  kGatedDeltaNet,   // Qwen3.5's linear attention with a per-sequence state (Backend::GatedDeltaNet)
  kAttnOutputGate,  // x *= sigmoid(gate) (Backend::SigmoidGate: Qwen3.5's gated attention output)
  kRopeSections,    // M-RoPE: four positions per token over dimension sections (RopeParams::sections)
  kCount
};
const char* OpName(Op op);

struct RopeParams {
  int32_t n_rot = 0;                    // rotated dimensions at the start of each head
  float base = 10000.0f;
  float freq_scale = 1.0f;              // position multiplier (linear scaling)
  const float* freq_factors = nullptr;  // optional [n_rot/2] divisors of each frequency
  float attn_factor = 1.0f;             // multiplies cos and sin (LongRoPE's magnitude scale)
  RopeStyle style = RopeStyle::kNorm;
  // YaRN (needs Op::kRopeYarn when ext_factor != 0), as the reference's rope op takes it: the
  // angles of dimension pair i blend freq_scale * theta (interpolated) and theta (extrapolated)
  // by a ramp that is 1 below the correction dimension of beta_fast and 0 above that of
  // beta_slow (dims whose wavelength fits n_ctx_orig beta times); ext_factor scales the ramp,
  // and cos/sin get the extra magnitude 1 + 0.1 ln(1 / freq_scale).
  float ext_factor = 0.0f;
  int32_t n_ctx_orig = 0;   // the context the model was trained for before scaling
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // M-RoPE (Qwen2-VL, Qwen3-VL; needs Op::kRopeSections): when a section is non-zero, pos holds
  // four positions per token (t, h, w, e) and dimension pair i rotates by the position of its
  // sector i % (sum of sections): consecutive sections, or (interleaved, Qwen3-VL) pairs cycling
  // t, h, w while within 3 x that section's size, e beyond. Each position's angle advances per
  // pair as a plain rope's does, so equal positions give plain rope's bits.
  std::array<int32_t, 4> sections{};
  bool interleaved = false;
  bool sectioned() const { return sections[0] + sections[1] + sections[2] + sections[3] > 0; }
};

// YaRN's correction range [low, high] of dimension-pair indices for these params (the
// reference's corr_dims: floor of beta_fast's, ceil of beta_slow's, clamped to [0, n_rot - 1]).
void RopeYarnCorrDims(const RopeParams& rp, float* low, float* high);
// Which of a token's four positions (0..3 = t, h, w, e) rotates dimension pair `pair` under
// rp.sections (the reference's sector rule, ggml_mrope_cache_init). rp.sectioned() required.
int32_t MropeComponent(const RopeParams& rp, int32_t pair);

// A copy of a recurrent layer's state as it is after the first `rows` (1..n_tok) of an op's
// positions, in the state's own layout (Backend::ShortConv, Mamba2, GatedDeltaNet): a session's
// checkpoints at the block boundaries inside one step, so the step need not end on them.
struct StateSnapshot {
  int32_t rows;
  float* state;
};
// The snapshots an op call writes, in increasing rows (none: n == 0).
struct StateSnapshots {
  const StateSnapshot* at = nullptr;
  int32_t n = 0;
};

// A gated DeltaNet layer's sizes and small tensors (Backend::GatedDeltaNet). Value head h reads
// key head h % n_k_heads.
struct DeltaNetParams {
  int32_t d_conv = 0;       // convolution taps (the current position and d_conv - 1 before it)
  int32_t n_k_heads = 0;
  int32_t n_v_heads = 0;
  int32_t head_k_dim = 0;
  int32_t head_v_dim = 0;
  float eps = 1e-6f;        // of the L2 norms of q and k: x / sqrt(sum x^2 + eps)
  const float* conv = nullptr;     // [channels][d_conv], each channel's taps oldest first
  const float* dt_bias = nullptr;  // [n_v_heads]
  const float* a = nullptr;        // [n_v_heads] (negative: -exp(A_log))
  int32_t channels() const { return 2 * n_k_heads * head_k_dim + n_v_heads * head_v_dim; }
};

struct AttentionParams {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  float scale = 1.0f;    // multiplies q·k
  float softcap = 0.0f;  // 0 = off
  // 0 = no window; else a position sees the last `window` positions (causal) or, non-causal,
  // the keys at most window / 2 positions away on either side (symmetric sliding window).
  int32_t window = 0;
  // false (encoders, engines that Support(kNonCausal) only): each of a step's queries sees every
  // key up to the step's last position, later ones included. Embedding passes evaluate a whole
  // sequence in one step from position 0, so that is the whole sequence.
  bool causal = true;
  // Causal models only: the step's queries also see the step's later keys (a bidirectional span,
  // Gemma 3's image tokens: llama.cpp decodes them with causal attention off); a window still
  // reaches behind each query as in causal attention (llama.cpp's mask keeps later keys).
  bool bidirectional_step = false;
  // Attention sinks (needs Op::kAttnSinks): [n_head] raw logits, one per query head, that join
  // each row's softmax denominator as exp(sink - max) (the max taken over the scores and the
  // sink) without a value row; nullptr = none.
  const float* sinks = nullptr;
};

// Mamba-2 (Op::kMamba2, Backend::Mamba2): sizes and the layer's small F32 tensors, read on the
// host. channels = d_inner + 2 n_group d_state; head_dim = d_inner / n_head.
struct Mamba2Params {
  int32_t d_conv = 0, d_inner = 0, d_state = 0, n_head = 0, n_group = 0;
  float eps = 1e-5f;                // the group RMS norm's
  const float* conv_w = nullptr;    // [channels][d_conv], oldest tap first
  const float* conv_b = nullptr;    // [channels] or nullptr
  const float* dt_bias = nullptr;   // [n_head]
  const float* a = nullptr;         // [n_head] (negative: -exp(A_log))
  const float* d = nullptr;         // [n_head] skip
  const float* norm_w = nullptr;    // [d_inner]: n_group groups of d_inner / n_group; nullptr = no norm
};

}  // namespace zf::engine

// Names of the optional ops, for the messages that refuse a model on an engine lacking one, and
// the rope parameters derived from RopeParams that every engine computes alike.
#include "engine/ops.h"

#include <algorithm>
#include <cmath>

namespace zf::engine {

const char* OpName(Op op) {
  switch (op) {
    case Op::kLayerNorm: return "LayerNorm";
    case Op::kScale: return "scaled residuals/logits";
    case Op::kPlainFfn: return "ungated FFN";
    case Op::kMoe: return "mixture of experts";
    case Op::kRopeFactors: return "LongRoPE scaling";
    case Op::kNonCausal: return "non-causal attention";
    case Op::kRopeYarn: return "YaRN rope scaling";
    case Op::kAttnSinks: return "attention sinks";
    case Op::kSwigluOai: return "clamped SwiGLU (gpt-oss experts)";
    case Op::kStridedRows: return "strided row copies (per-layer inputs, per-layer KV widths)";
    case Op::kUnweightedNorm: return "RMS norm without a weight";
    case Op::kShortConv: return "short convolution (recurrent state)";
    case Op::kMamba2: return "Mamba-2 selective scan (recurrent state)";
    case Op::kGatedDeltaNet: return "gated DeltaNet (recurrent state)";
    case Op::kAttnOutputGate: return "sigmoid-gated attention output";
    case Op::kRopeSections: return "M-RoPE sections";
    case Op::kCount: break;
  }
  return "unknown op";
}

int32_t MropeComponent(const RopeParams& rp, int32_t pair) {
  const int32_t s0 = rp.sections[0], s1 = rp.sections[1], s2 = rp.sections[2];
  const int32_t sector = pair % (s0 + s1 + s2 + rp.sections[3]);
  if (rp.interleaved) {  // Qwen3-VL: t, h, w cycling, each while within 3 x its section
    if (sector % 3 == 1 && sector < 3 * s1) return 1;
    if (sector % 3 == 2 && sector < 3 * s2) return 2;
    if (sector % 3 == 0 && sector < 3 * s0) return 0;
    return 3;
  }
  return sector < s0 ? 0 : sector < s0 + s1 ? 1 : sector < s0 + s1 + s2 ? 2 : 3;
}

void RopeYarnCorrDims(const RopeParams& rp, float* low, float* high) {
  // The dimension whose rotation count over n_ctx_orig positions is n_turns:
  // n_rot * ln(n_ctx_orig / (2 pi n_turns)) / (2 ln base), in the reference's float operations.
  const auto dim = [&](float n_turns) {
    const float turn = n_turns * 2.0f * 3.14159265358979323846f;
    return float(rp.n_rot) * std::log(float(rp.n_ctx_orig) / turn) / (2.0f * std::log(rp.base));
  };
  *low = std::max(0.0f, std::floor(dim(rp.beta_fast)));
  *high = std::min(float(rp.n_rot - 1), std::ceil(dim(rp.beta_slow)));
}

}  // namespace zf::engine

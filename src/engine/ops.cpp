// Names of the optional ops, for the messages that refuse a model on an engine lacking one.
#include "engine/ops.h"

namespace zf::engine {

const char* OpName(Op op) {
  switch (op) {
    case Op::kLayerNorm: return "LayerNorm";
    case Op::kScale: return "scaled residuals/logits";
    case Op::kPlainFfn: return "ungated FFN";
    case Op::kMoe: return "mixture of experts";
    case Op::kRopeFactors: return "LongRoPE scaling";
    case Op::kNonCausal: return "non-causal attention";
    case Op::kCount: break;
  }
  return "unknown op";
}

}  // namespace zf::engine

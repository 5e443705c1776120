// The ViT blocks' tensors (v.blk.N.*) of the families whose blocks are VitBlocks: see
// mmproj_tensors.h's VitBlockLayout.
#include <utility>

#include "gguf/gguf.h"
#include "vision/mmproj_tensors.h"

namespace zf::vision {

Status NormWeights(const gguf::GgufFile& f, const std::string& name, int64_t n, bool bias, std::set<std::string>* used,
                   LayerNormW* out) {
  ZF_RETURN_IF_ERROR(Floats(f, name + ".weight", {n}, used, &out->w));
  return bias ? Floats(f, name + ".bias", {n}, used, &out->b) : Status::Ok();
}

namespace {

// q, k and v as views on the rows of the fused attn_qkv (3 E rows: q's, k's, v's) and its bias.
Status FusedQkv(const gguf::GgufFile& f, const std::string& p, int64_t E, bool bias, std::set<std::string>* used,
                VitBlock* b) {
  Linear qkv;
  ZF_RETURN_IF_ERROR(Matrix(f, p + "attn_qkv", E, 3 * E, used, &qkv, bias));
  Linear* parts[3] = {&b->q, &b->k, &b->v};
  for (int i = 0; i < 3; ++i) {
    Linear& l = *parts[i];
    l.type = qkv.type;
    l.in = E;
    l.out = E;
    l.stride = qkv.stride;
    l.w = qkv.w + size_t(i) * size_t(E) * qkv.stride;
    if (bias) l.b.assign(qkv.b.begin() + i * E, qkv.b.begin() + (i + 1) * E);
  }
  return Status::Ok();
}

}  // namespace

Status LoadVitBlocks(const gguf::GgufFile& f, const VisionHparams& hp, const VitBlockLayout& layout,
                     std::set<std::string>* used, std::vector<VitBlock>* blocks) {
  const int64_t E = hp.n_embd, F = hp.n_ff;
  const bool bias = layout.linear_bias;
  blocks->resize(size_t(hp.n_layer));
  for (int32_t i = 0; i < hp.n_layer; ++i) {
    VitBlock& b = (*blocks)[size_t(i)];
    const std::string p = "v.blk." + std::to_string(i) + ".";
    ZF_RETURN_IF_ERROR(NormWeights(f, p + "ln1", E, layout.norm_bias, used, &b.ln1));
    if (layout.fused_qkv && f.FindTensor(p + "attn_qkv.weight") != nullptr) {
      ZF_RETURN_IF_ERROR(FusedQkv(f, p, E, bias, used, &b));
    } else {
      ZF_RETURN_IF_ERROR(Matrix(f, p + "attn_q", E, E, used, &b.q, bias));
      ZF_RETURN_IF_ERROR(Matrix(f, p + "attn_k", E, E, used, &b.k, bias));
      ZF_RETURN_IF_ERROR(Matrix(f, p + "attn_v", E, E, used, &b.v, bias));
    }
    ZF_RETURN_IF_ERROR(Matrix(f, p + "attn_out", E, E, used, &b.o, bias));
    ZF_RETURN_IF_ERROR(NormWeights(f, p + "ln2", E, layout.norm_bias, used, &b.ln2));
    if (layout.gated) ZF_RETURN_IF_ERROR(Matrix(f, p + "ffn_gate", E, F, used, &b.gate, bias));
    // Older conversions swapped the FFN's names (clip.cpp swaps them back): ffn_down reading E.
    const gguf::TensorInfo* down = f.FindTensor(p + "ffn_down.weight");
    const bool swapped = layout.swapped_ffn && down != nullptr && down->ne[0] == E && F != E;
    ZF_RETURN_IF_ERROR(Matrix(f, p + (swapped ? "ffn_down" : "ffn_up"), E, F, used, &b.up, bias));
    ZF_RETURN_IF_ERROR(Matrix(f, p + (swapped ? "ffn_up" : "ffn_down"), F, E, used, &b.down, bias));
  }
  return Status::Ok();
}

}  // namespace zf::vision

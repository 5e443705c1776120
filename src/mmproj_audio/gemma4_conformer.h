// Gemma 4's audio tower (clip.projector_type gemma4a, libmtmd's clip_graph_gemma4a): a
// conformer over Gemma 4's own log-mel (see Gemma4Mel):
//   mel [T][n_mel] -> two 3x3 stride-2 2D convolutions (padding 1), each with a LayerNorm over
//   its channels (weight only) and ReLU -> [T/4][channels x freq] -> a.input_projection
//   -> blocks: x += 0.5 FFN(x) (RMS norm, up, SiLU, down, RMS norm); x += attention: RMS norm,
//      q/k/v, per-dimension q and k scales, chunked local causal attention (each position sees
//      itself and the 11 before it) with a sinusoidal relative-position term projected by
//      attn_k_rel, scores softcapped at 50, attn_out + bias, RMS norm; x += the convolution
//      module: RMS norm, conv_pw1, GLU, causal depthwise conv (5 taps) + bias, RMS norm, SiLU,
//      conv_pw2; x += 0.5 FFN_1(x); RMS norm (ln2)
//   -> a.pre_encode.out (optional) -> RMS norm x mm.a.soft_emb_norm -> mm.a.input_projection.
// Every product clip.cpp takes through build_mm honours the weight's clamp scalars
// (NAME.input_min/max, NAME.output_min/max: Gemma4ClippableLinear). RMS norms use 1e-6
// (clip.cpp hard-codes it for gemma4a, whatever the file says).
#pragma once

#include <cfloat>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "speech/whisper_model.h"

namespace zf::mmproj_audio {

struct Reader;

// A product with Gemma4ClippableLinear's optional clamps on its input and output.
struct ClampedProduct {
  speech::Linear l;
  float in_min = -FLT_MAX, in_max = FLT_MAX, out_min = -FLT_MAX, out_max = FLT_MAX;
};

struct ConformerBlock {
  // FFN halves (ffn_*, ffn_*_1); post norms may be absent.
  std::vector<float> ffn_norm, ffn_post_norm, ffn1_norm, ffn1_post_norm;
  ClampedProduct ffn_up, ffn_down, ffn1_up, ffn1_down;
  // Attention.
  std::vector<float> attn_norm, attn_post_norm, q_scale_dims, k_scale_dims;  // optional but q/k/v/o
  ClampedProduct q, k, v, o;
  speech::Linear k_rel;  // empty w: no relative-position term
  // Convolution module: pre norm (the file's conv_norm), GLU pointwise, depthwise [ch][5], post
  // norm (the file's norm_conv: clip.cpp reads the two names crossed), pointwise back.
  std::vector<float> conv_pre_norm, conv_post_norm, dw, dw_b;
  ClampedProduct pw1, pw2;
  std::vector<float> out_norm;  // ln2 (optional)
};

struct Gemma4AudioTower {
  int32_t n_mel = 0, n_embd = 0, n_head = 0, n_ff = 0;
  int32_t ch[2] = {0, 0};  // the two convolutions' output channels
  std::vector<float> conv_w[2];  // [out][in][3 (time)][3 (freq)]
  bool conv_f16[2] = {false, false};  // F16 kernels: ggml's im2col rounds the input to F16 too
  std::vector<float> conv_norm[2];
  ClampedProduct inp_proj, out_proj, mm_proj;  // out_proj optional (empty w)
  std::vector<float> soft_emb_norm;           // optional
  std::vector<ConformerBlock> blocks;
  int32_t proj_width() const { return int32_t(mm_proj.l.out); }

  // The tower's tensors (n_mel, n_embd, n_head, n_ff and the block count from the file's keys).
  static Status Load(Reader& r, int32_t n_mel, int32_t n_embd, int32_t n_ff, int32_t n_layer, int32_t n_head,
                     std::unique_ptr<Gemma4AudioTower>* out);
  // Rows a mel of n_frames gives: two stride-2 convolutions.
  static int64_t Rows(int64_t n_frames);
};

// mel: [n_frames][n_mel] (time-major) -> Rows(n_frames) rows of proj_width floats, on n_threads.
void EncodeGemma4Audio(const Gemma4AudioTower& t, const float* mel, int64_t n_frames, int32_t n_threads,
                       std::vector<float>* out);

}  // namespace zf::mmproj_audio

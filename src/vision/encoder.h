// The SigLIP vision encoder and its projector on the CPU, as libmtmd computes them (Gemma 3's
// below; Idefics3 differs as its ProjectorSpec says: pixel shuffle, then mm.model.fc):
//   patches (14 x 14 convolution as a product over im2col rows) + bias + learned positions,
//   pre-LN ViT blocks (LayerNorm, q/k/v with biases, softmax attention over every patch, output
//   projection, residual; LayerNorm, up + GELU + down, residual), the final LayerNorm,
//   4 x 4 average pooling (64 x 64 patches -> 16 x 16 tokens), RMS norm times the soft-embedding
//   weight, and the input projection to the language model's width.
// Products run on the file's blocks (activations converted to the weight's dot type, as ggml
// does): speech/'s F16 GEMM for F16 weights (x86 AVX2/AVX-512), the quant kernels' Q8_0 GEMM
// or GEMV otherwise; attention as libmtmd's default flash attention computes it on the CPU (K
// and V in F16, everything else F32); GELU is ggml's F16 table. Work is split over a thread pool.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "common/status.h"
#include "vision/image.h"
#include "vision/mmproj.h"

namespace zf::engine {
class ThreadPool;
}

namespace zf::vision {

struct ClampedLinear;  // vision/gemma4v.h

// The sum of x[0..n) (or of their squares) in double, as ggml's norms take it (in another order).
double SumInDouble(const float* x, int64_t n, bool squares);
// A row of dim floats centred and scaled to unit variance (ggml_norm: sums in double).
void NormalizeRow(float* x, int64_t dim, float eps);

// One encode at a time per encoder (it owns its thread pool and scratch); the Mmproj is
// read-only and may serve several encoders.
class VisionEncoder {
 public:
  VisionEncoder(const Mmproj& mmproj, int32_t n_threads);
  ~VisionEncoder();

  // The image's embeddings: hparams().n_tokens() rows of hparams().proj_width floats per
  // encoder input (TileImages: one, or the tiles and the overview), in placement order; *grid
  // (may be null): the tile grid, for Layout().
  Status Encode(const Image& image, std::vector<float>* embd, TileGrid* grid = nullptr);
  // One encoder input's rows from preprocessed pixels (image_size^2 x 3 floats, Normalize's).
  Status EncodePixels(const std::vector<float>& pixels, std::vector<float>* embd);
  // Vit::kPixtral: a w x h image's rows (vision/pixtral.cpp), [IMG_BREAK] rows included.
  Status EncodePixtral(const std::vector<float>& pixels, int32_t w, int32_t h, std::vector<float>* embd);
  // Vit::kGemma4v: a w x h image's rows (vision/gemma4v.cpp).
  Status EncodeGemma4v(const std::vector<float>& pixels, int32_t w, int32_t h, std::vector<float>* embd);
  // Vit::kQwen25vl, kQwen3vl: a w x h image's rows (vision/qwen_vl.cpp).
  Status EncodeQwenVl(const std::vector<float>& pixels, int32_t w, int32_t h, std::vector<float>* embd);
  // Vit::kLfm2: a w x h image's rows (vision/lfm2_vl.cpp).
  Status EncodeLfm2(const std::vector<float>& pixels, int32_t w, int32_t h, std::vector<float>* embd);

 private:
  void MatMul(const Linear& l, const float* x, int64_t n_tok, float* y);
  // Products of one input (q, k, v; gate, up) at once: y = l(x) for each; the input rounded to
  // F16 once and all tiles in one task list where the weights are F16.
  struct Product {
    const Linear* l;
    float* y;
  };
  void MatMuls(std::initializer_list<Product> products, const float* x, int64_t n_tok);
  void LayerNorm(const LayerNormW& n, float* x, int64_t n_tok, int64_t dim = 0);  // in place; rows of dim (0: n_embd)
  void Gelu(float* x, int64_t n);
  // scale multiplies q.k (0: 1 / sqrt(head width)). segments: token counts summing to T, each
  // run of tokens attending among itself (Qwen2.5-VL's windows); null: all T together.
  void Attention(const float* q, const float* k, const float* v, int64_t T, float* out, float scale = 0.0f,
                 const std::vector<int32_t>* segments = nullptr);
  // The product of x clamped to the input range, y clamped (Gemma4ClippableLinear).
  void ClampedMatMul(const ClampedLinear& c, const float* x, int64_t n_tok, float* y);
  void RmsNorm(const std::vector<float>& w, float* x, int64_t n_tok);  // in place, rows of n_embd
  // The patch convolution of W x H normalized pixels (R G B interleaved): (W / P) * (H / P)
  // rows of n_embd, row-major over the patch grid, with the convolution's bias.
  std::vector<float> PatchEmbed(const std::vector<float>& px, int64_t W, int64_t H);
  // The SigLIP blocks over T rows of n_embd in place (LayerNorm, attention, LayerNorm, GELU MLP,
  // each with its residual).
  void SiglipBlocks(std::vector<float>* x, int64_t T);

  const Mmproj& m_;
  std::unique_ptr<engine::ThreadPool> pool_;
  std::vector<uint8_t> act_;     // activations in a weight's dot type
  std::vector<float> f16_in_;    // F16-rounded activations for the F16 GEMM
  std::vector<uint16_t> k16_, vt16_;  // attention's K and V^T per head in F16
};

}  // namespace zf::vision

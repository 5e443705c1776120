// Whisper's weights (from a WhisperFile) and its two networks on the CPU:
//   encoder: conv1d(k3) + GELU, conv1d(k3, stride 2) + GELU, + sinusoidal positions, pre-LN
//            transformer blocks, final LayerNorm -> [n_audio_ctx][n_audio_state]
//   decoder: token + learned positions, pre-LN blocks of self-attention (KV cache),
//            cross-attention over the window's encoder output (its K/V computed once per
//            window), MLP; final LayerNorm; logits against the token embedding.
// Products use the quant kernels on the file's blocks (F16 / Q4_0..Q8_0 weights, activations
// converted to the weight's dot type as ggml does), split over a thread pool.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "speech/whisper_file.h"

namespace zf::engine {
class ThreadPool;
}

namespace zf::speech {

struct Linear {
  GgmlType type = GgmlType::F32;
  int64_t in = 0, out = 0;
  size_t stride = 0;              // bytes per output row
  std::vector<uint8_t> w;         // out rows of `in` elements, in the file's blocks
  std::vector<float> b;           // empty: no bias
};

struct Norm {
  std::vector<float> w, b;
};

struct Block {
  Norm attn_ln;
  Linear q, k, v, o;
  Norm cross_ln;  // decoder only
  Linear cq, ck, cv, co;
  Norm mlp_ln;
  Linear fc1, fc2;
};

// Where a Whisper-style encoder differs from whisper.cpp's: libmtmd's audio projectors
// (ultravox, qwen2a, voxtral) run the same network with the exact GELU, the file's LayerNorm
// epsilon, and (qwen2a, voxtral) pairs of positions averaged before the final LayerNorm.
struct EncoderStyle {
  bool gelu_erf = false;  // 0.5 x (1 + erf(x / sqrt 2)) in F32 (ggml_gelu_erf), not the F16 table
  float eps = 1e-5f;      // every LayerNorm's epsilon
  bool pool2 = false;     // average positions 2i and 2i + 1 before the final LayerNorm
};

class WhisperModel {
 public:
  static Status Load(const std::string& path, std::unique_ptr<WhisperModel>* out);
  static Status FromFile(const WhisperFile& file, std::unique_ptr<WhisperModel>* out);
  // An encoder without a decoder (hp's text fields 0) whose weights the caller fills: conv1,
  // conv2, enc_pos (n_audio_ctx rows), enc, enc_ln.
  static std::unique_ptr<WhisperModel> EncoderOnly(const WhisperHparams& hp, const EncoderStyle& style);

  const WhisperHparams& hparams() const { return hp_; }
  const EncoderStyle& style() const { return style_; }
  const std::vector<float>& mel_filters() const { return mel_filters_; }
  const std::vector<std::string>& vocab() const { return vocab_; }

  // Weights (read-only after load).
  Linear conv1, conv2;  // rows = out channels, each [in_ch][3]
  std::vector<float> enc_pos;  // [n_audio_ctx][n_audio_state]
  std::vector<Block> enc;
  Norm enc_ln;
  std::vector<float> dec_pos;  // [n_text_ctx][n_text_state]
  Linear tok_emb;              // [n_vocab] rows of n_text_state
  std::vector<Block> dec;
  Norm dec_ln;

 private:
  WhisperHparams hp_;
  EncoderStyle style_;
  std::vector<float> mel_filters_;
  std::vector<std::string> vocab_;
};

// A model's working state for one transcription at a time: thread pool, scratch, the window's
// cross-attention K/V and the decoder's self-attention cache.
// One decoder sequence's self-attention cache: K [layer][head][d][n_text_ctx] (F16 values held as
// F32) and V (F16), both transposed, filled up to n_past. Beam search and best-of keep one per
// sequence and swap it into the runner to decode that sequence.
struct DecoderCache {
  std::vector<float> kt;
  std::vector<uint16_t> vt;
  int32_t n_past = 0;
};

class WhisperRunner {
 public:
  WhisperRunner(const WhisperModel& model, int32_t n_threads);
  ~WhisperRunner();

  // mel: [n_mels][mel_stride], frames [offset, offset + 2*n_audio_ctx) (zeros past n_len).
  // Leaves the encoder output in encoder_out() (n_audio_ctx rows, half with style().pool2) and
  // the cross K/V ready for decoding.
  void Encode(const float* mel, int32_t n_len, int32_t mel_stride, int32_t offset);
  const std::vector<float>& encoder_out() const { return enc_out_; }

  // The encoder's building blocks for a projector after it (on this runner's pool): y = x W^T
  // (+ bias) over n_tok rows, as the encoder's own products; the style's GELU in place.
  void Product(const Linear& l, const float* x, int64_t n_tok, float* y) { MatMul(l, x, n_tok, y); }
  void Gelu(float* x, int64_t n) { GeluRow(x, n); }

  // Clears the self-attention cache (a new sequence).
  void ResetDecoder() { self_.n_past = 0; }
  int32_t n_past() const { return self_.n_past; }
  // Exchanges the runner's cache with `c` (O(1)); an empty `c` gets sized on its first use.
  void SwapCache(DecoderCache& c) { std::swap(self_, c); }
  // dst = src over src's n_past positions (the rest of dst is left as it is).
  void CopyCache(const DecoderCache& src, DecoderCache* dst) const;
  // Feeds `token` at position n_past (which then grows by one); logits: n_vocab floats, or null
  // for a prompt token whose logits are not needed.
  Status Decode(int32_t token, float* logits);

  // One row of a batched decoder step: `token` of the sequence whose cache is `cache`; logits:
  // n_vocab floats, or null when not needed.
  struct Row {
    int32_t token = 0;
    DecoderCache* cache = nullptr;
    float* logits = nullptr;
    const WhisperRunner* cross = nullptr;  // whose window it attends to (null: this runner's)
  };
  // Feeds n rows through one decoder pass: each weight matrix is read once for all of them. The
  // rows of one cache must be consecutive; they take positions n_past, n_past + 1, ... (a prompt)
  // and that cache's n_past grows by their count. Several caches are several sequences (beams,
  // samples) at their own positions; they share the window's cross-attention K/V. Every row's
  // result is bit for bit what Decode gives it alone (the products are exact per row:
  // quant::f16::avx2::DotRowsF16, or quant::Gemv per row).
  Status DecodeBatch(const Row* rows, int32_t n);
  // DecodeBatch's checks of the rows (tokens, caches, order, room), changing nothing.
  Status CheckRows(const Row* rows, int32_t n) const;

 private:
  void MatMul(const Linear& l, const float* x, int64_t n_tok, float* y);
  // The decoder's products: per token row the value quant::Gemv gives that row alone.
  void MatMulExact(const Linear& l, const float* x, int64_t n_tok, float* y);
  void GeluRow(float* x, int64_t n);  // ggml's GELU, split over the pool
  void LayerNorm(const Norm& n, const float* x, int64_t n_tok, int64_t dim, float* y);
  // Per head: scores of the queries against T keys (transposed, F16-rounded F32 [d][kt_stride])
  // times `scale`, softmax, and the weighted sum of V (F16 transposed [d][vstride]) into out.
  // Queries and probabilities are rounded to F16 for the products, as ggml does.
  void Attend(const float* q, int64_t n_q, int64_t q_stride, const float* kt, int64_t kt_stride, int64_t kt_head,
              const uint16_t* vt, int64_t vstride, int64_t vstride_head, int64_t T, int32_t n_head, int64_t d,
              float scale, float* out, int64_t out_stride);
  // Attend's work for one query and head h; s, p16: T scratch values.
  static void AttendHead(const float* qi, const float* kt, int64_t kt_stride, int64_t kt_head, const uint16_t* vt,
                         int64_t vstride, int64_t vstride_head, int64_t T, int64_t h, int64_t d, float scale, float* out,
                         float* s, uint16_t* p16);

  // The encoder's self-attention as two F16 GEMMs per head and block of queries (x86 AVX2): q
  // [T][n] (rounded to F16 in place), k and v [T][n]; out [T][n].
  void EncoderAttentionGemm(float* q, const float* k, const float* v, float* out);

  const WhisperModel& m_;
  std::unique_ptr<engine::ThreadPool> pool_;
  std::vector<float> enc_out_;
  // Cross K [layer][head][d][n_audio_ctx] (F16 values held as F32 for the axpy scores) and V
  // [layer][head][d][n_audio_ctx] (F16), both transposed.
  std::vector<float> cross_kt_;
  std::vector<uint16_t> cross_vt_;
  // Self-attention cache of the sequence being decoded, the same layouts over n_text_ctx positions.
  DecoderCache self_;
  std::vector<uint8_t> act_;  // activations in the weights' dot type
  std::vector<float> gemm_in_;  // F16-rounded activations for the F16 GEMM
  std::vector<float> bx_, bh_, bq_, bk_, bv_, ba_, bff_, blog_;  // DecodeBatch's [rows][dim] buffers
};

}  // namespace zf::speech

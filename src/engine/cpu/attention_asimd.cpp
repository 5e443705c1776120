// NEON attention kernels, every aarch64 CPU (see attention_kernels.h; loops in
// attention_drivers.h): the AVX2 kernels' register tiles at 4 lanes, four vectors wide. S = Q
// K^T in tiles of 4 query rows x 16 keys (per head dimension, 4 loads of K^T feed 16 FMAs by
// the rows' query values) and O = P V in tiles of 4 rows x 16 value dimensions: 16 accumulators
// of the 32 vector registers. No masked loads: value dimensions past the last tile of 16 go 4
// at a time (the callers' head sizes are multiples of 4; RunDecode checks), softmax tails
// through a padded vector. Results differ from the scalar reference by float rounding only.
//
// Why: on aarch64 the portable per-row path made the softmax's expf, the value AXPYs and the
// q.k calls the largest decode costs after the matmuls (bench/aarch64_profile.sh), and they
// grow with the context.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "engine/cpu/attention_drivers.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/cpu/vec_math_neon.h"
#include "quant/neon_inline.h"

namespace zf::engine::attn {
namespace {

using vecn::Exp;

// S[a..a+3][j0 .. j0+63] for keys j0.. (all 64 computed; K^T is padded), 16 keys at a time.
inline void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss) {
  const float* q0 = b.q + int64_t{a} * b.d_k;
  for (int64_t jj = j0; jj < j0 + 64; jj += 16) {
    float32x4_t acc[4][4];
    for (auto& row : acc) for (float32x4_t& v : row) v = vdupq_n_f32(0.0f);
    const float* kt = b.kt + jj;
    for (int32_t d = 0; d < b.d_k; ++d) {
      const float* kd = kt + d * b.kt_stride;
      float32x4_t k[4];
      for (int c = 0; c < 4; ++c) k[c] = vld1q_f32(kd + 4 * c);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const float qv = q0[i * b.d_k + d];
        for (int c = 0; c < 4; ++c) acc[i][c] = vfmaq_n_f32(acc[i][c], k[c], qv);
      }
    }
    for (int i = 0; i < 4; ++i) {
      for (int c = 0; c < 4; ++c) vst1q_f32(s + (a + i) * ss + jj + 4 * c, acc[i][c]);
    }
  }
}

// Softmax of x[0, n) in place after scaling (and the softcap): exp(s - max), unnormalized;
// returns the sum and the max in *mx_out (Softmax: 1 / sum). A finite sink joins the max and the
// sum (attention sinks) without a value; -INFINITY (no sink) adds nothing.
float SoftmaxSumImpl(float* x, int64_t n, float scale, float softcap, float sink, float* mx_out) {
  if (softcap > 0.0f) {
    for (int64_t j = 0; j < n; ++j) x[j] = softcap * std::tanh(x[j] * scale / softcap);
  } else {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) vst1q_f32(x + j, vmulq_n_f32(vld1q_f32(x + j), scale));
    for (; j < n; ++j) x[j] *= scale;
  }
  float32x4_t mx = vdupq_n_f32(-INFINITY);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) mx = vmaxq_f32(mx, vld1q_f32(x + j));
  float m = vmaxvq_f32(mx);
  for (int64_t t = j; t < n; ++t) m = std::max(m, x[t]);
  m = std::max(m, sink);
  const float32x4_t mv = vdupq_n_f32(m);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (j = 0; j + 4 <= n; j += 4) {
    const float32x4_t e = Exp(vsubq_f32(vld1q_f32(x + j), mv));
    vst1q_f32(x + j, e);
    sum = vaddq_f32(sum, e);
  }
  float tail = 0.0f;
  if (j < n) {  // the tail through a padded vector (same Exp as the body)
    float t4[4] = {m, m, m, m};
    for (int64_t t = 0; t < n - j; ++t) t4[t] = x[j + t];
    vst1q_f32(t4, Exp(vsubq_f32(vld1q_f32(t4), mv)));
    for (int64_t t = 0; t < n - j; ++t) x[j + t] = t4[t], tail += t4[t];
  }
  *mx_out = m;
  return vaddvq_f32(sum) + tail + (sink > -INFINITY ? std::exp(sink - m) : 0.0f);
}

float Softmax(float* x, int64_t n, float scale, float softcap, float sink) {
  float mx;
  return 1.0f / SoftmaxSumImpl(x, n, scale, softcap, sink, &mx);
}

// out[i][e0 .. e0 + 4 kV) = inv[i] * ((acc_in ? out[i] : 0) + sum over keys j in [ulo, uhi] of
// p[i][j] * V[j][e0 ..]) for the na (<= 4) rows of a tile (inv null: stored unscaled, a partial
// sum over one chunk of keys).
template <int kV>
void ValueTile(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t e0, int32_t na,
               const float* inv, float* const* out, bool acc_in) {
  float32x4_t acc[4][kV];
  for (auto& row : acc) for (float32x4_t& v : row) v = vdupq_n_f32(0.0f);
  for (int i = 0; acc_in && i < na; ++i) {
    for (int c = 0; c < kV; ++c) acc[i][c] = vld1q_f32(out[i] + e0 + 4 * c);
  }
  const float* v = b.v + e0;
  for (int32_t j = ulo; j <= uhi; ++j) {
    const float* vj = v + j * b.v_stride;
    float32x4_t vv[kV];
    for (int c = 0; c < kV; ++c) vv[c] = vld1q_f32(vj + 4 * c);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // padding rows have weight 0 (attention_drivers.h)
      const float w = p[i * ss + j];
      for (int c = 0; c < kV; ++c) acc[i][c] = vfmaq_n_f32(acc[i][c], vv[c], w);
    }
  }
  for (int i = 0; i < na; ++i) {
    for (int c = 0; c < kV; ++c) {
      vst1q_f32(out[i] + e0 + 4 * c, inv != nullptr ? vmulq_n_f32(acc[i][c], inv[i]) : acc[i][c]);
    }
  }
}

// Raw scores of NQ heads: s[h][j] = q_h . k_j (d_k % 8 == 0). Each key row is converted once
// for all heads.
template <int NQ>
void DecodeScores(const DecodeGroup& g) {
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint16_t* k = g.k + j * g.k_stride;
    float32x4_t acc[NQ][2];
    for (auto& row : acc) for (float32x4_t& a : row) a = vdupq_n_f32(0.0f);
    for (int32_t d = 0; d < g.d_k; d += 8) {
      const float32x4_t k0 = quant::F16x4(k + d), k1 = quant::F16x4(k + d + 4);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const float* q = g.q + h * g.d_k + d;
        acc[h][0] = vfmaq_f32(acc[h][0], vld1q_f32(q), k0);
        acc[h][1] = vfmaq_f32(acc[h][1], vld1q_f32(q + 4), k1);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) g.s[h * g.n_keys + j] = vaddvq_f32(vaddq_f32(acc[h][0], acc[h][1]));
  }
}

// out[h][e0 .. e0 + 4 kV) = inv[h] * sum_j p[h][j] v_j[e0 ..]: each value row converted once,
// the NQ x kV accumulators in registers.
template <int NQ, int kV>
void DecodeValueTile(const DecodeGroup& g, const float* inv, int32_t e0) {
  float32x4_t acc[NQ][kV];
  for (auto& row : acc) for (float32x4_t& a : row) a = vdupq_n_f32(0.0f);
  for (int32_t j = 0; j < g.n_keys; ++j) {
    const uint16_t* v = g.v + j * g.v_stride + e0;
    float32x4_t vv[kV];
    for (int c = 0; c < kV; ++c) vv[c] = quant::F16x4(v + 4 * c);
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      const float w = g.s[h * g.n_keys + j];
      for (int c = 0; c < kV; ++c) acc[h][c] = vfmaq_n_f32(acc[h][c], vv[c], w);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < NQ; ++h) {
    for (int c = 0; c < kV; ++c) vst1q_f32(g.out[h] + e0 + 4 * c, vmulq_n_f32(acc[h][c], inv[h]));
  }
}

// Vector width 4: the ops of the shared loops (attention_drivers.h).
struct AsimdOps {
  static void ScoreTile(const Block& b, int32_t a, int64_t j0, float* s, int64_t ss) {
    attn::ScoreTile(b, a, j0, s, ss);
  }
  static float Softmax(float* x, int64_t n, float scale, float softcap, float sink) {
    return attn::Softmax(x, n, scale, softcap, sink);
  }
  static float SoftmaxSum(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
    return SoftmaxSumImpl(x, n, scale, softcap, sink, mx);
  }
  static void ValueTiles(const Block& b, const float* p, int64_t ss, int32_t ulo, int32_t uhi, int32_t na,
                         const float* inv, float* const* out, bool acc_in) {
    int32_t e0 = 0;  // 16 value dimensions at a time, then 4, then one at a time
    for (; e0 + 16 <= b.d_v; e0 += 16) ValueTile<4>(b, p, ss, ulo, uhi, e0, na, inv, out, acc_in);
    for (; e0 + 4 <= b.d_v; e0 += 4) ValueTile<1>(b, p, ss, ulo, uhi, e0, na, inv, out, acc_in);
    for (; e0 < b.d_v; ++e0) {
      for (int32_t i = 0; i < na; ++i) {
        float sum = acc_in ? out[i][e0] : 0.0f;
        for (int32_t j = ulo; j <= uhi; ++j) sum += p[i * ss + j] * b.v[j * b.v_stride + e0];
        out[i][e0] = inv != nullptr ? inv[i] * sum : sum;
      }
    }
  }
  template <int NQ>
  static void DecodeScores(const DecodeGroup& g) {
    attn::DecodeScores<NQ>(g);
  }
  template <int NQ>
  static void DecodeValues(const DecodeGroup& g, const float* inv) {  // d_v % 4 == 0
    int32_t e0 = 0;
    for (; e0 + 16 <= g.d_v; e0 += 16) DecodeValueTile<NQ, 4>(g, inv, e0);
    for (; e0 < g.d_v; e0 += 4) DecodeValueTile<NQ, 1>(g, inv, e0);
  }
};

}  // namespace

void RunDecodeAsimd(const DecodeGroup& g) { RunDecodeWith<AsimdOps>(g); }
float SoftmaxSumAsimd(float* x, int64_t n, float scale, float softcap, float sink, float* mx) {
  return SoftmaxSumImpl(x, n, scale, softcap, sink, mx);
}
void RunBlockAsimd(const Block& b) { RunBlockWith<AsimdOps>(b); }

}  // namespace zf::engine::attn

#endif  // __aarch64__

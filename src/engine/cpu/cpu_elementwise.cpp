// CPU row-wise ops: norms, residual adds and scales, rope, activations, softcap.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/activation_kernels.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/split_work.h"
#include "quant/quant.h"

namespace zf::engine {

namespace {
// One row: the sum of squares in double (8 partial sums: independent chains the compiler can
// keep in vector lanes; the order change is far below float precision).
void RmsNormRow(const float* x, const float* w, int32_t n, float eps, float* y) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += double(x[i + j]) * double(x[i + j]);
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += double(x[i]) * double(x[i]);
  sum += ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float scale = 1.0f / std::sqrt(float(sum / n) + eps);
  if (w == nullptr) {
    for (int32_t k = 0; k < n; ++k) y[k] = x[k] * scale;
  } else {
    for (int32_t k = 0; k < n; ++k) y[k] = x[k] * scale * w[k];
  }
}
// R consecutive rows of a LayerNorm: per row the mean and variance as sequential double sums
// (the reference's order), the R rows' chains interleaved.
template <int R>
void LayerNormRows(const float* x, const float* w, const float* b, int32_t n, float eps, float* y) {
  double sum[R] = {};
  for (int32_t i = 0; i < n; ++i) {
    for (int j = 0; j < R; ++j) sum[j] += x[int64_t{j} * n + i];
  }
  float mean[R];
  for (int j = 0; j < R; ++j) mean[j] = float(sum[j] / n);
  double var[R] = {};
  for (int32_t i = 0; i < n; ++i) {
    for (int j = 0; j < R; ++j) {
      const float d = x[int64_t{j} * n + i] - mean[j];
      var[j] += double(d) * double(d);
    }
  }
  for (int j = 0; j < R; ++j) {
    const float inv = 1.0f / std::sqrt(float(var[j] / n) + eps);
    const float* xr = x + int64_t{j} * n;
    float* yr = y + int64_t{j} * n;
    for (int32_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean[j]) * inv * w[i] + (b != nullptr ? b[i] : 0.0f);
  }
}
}  // namespace

void CpuBackend::RmsNorm(const float* x, const float* w, int32_t rows, int32_t n, float eps, float* y) {
  // Only very large calls are split across threads: a norm is a light pass over memory (tens of
  // microseconds for a 512-token prefill), less than what waking a worker on a busy machine can
  // cost.
  if (int64_t{rows} * n >= (int64_t{1} << 21)) {
    pool_->ParallelFor(rows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) RmsNormRow(x + r * n, w, n, eps, y + r * n);
    });
    return;
  }
  for (int32_t r = 0; r < rows; ++r) RmsNormRow(x + int64_t{r} * n, w, n, eps, y + int64_t{r} * n);
}

// The light elementwise ops below share their work as engine/cpu/split_work.h says.
void CpuBackend::AddBias(float* x, const float* b, int32_t rows, int32_t n) {
  SplitRows(pool_, rows, n, kSplitElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int32_t i = 0; i < n; ++i) x[r * n + i] += b[i];
    }
  });
}

void CpuBackend::Add(float* x, const float* y, int64_t n) {
  SplitElements(pool_, n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] += y[i];
  });
}

void CpuBackend::AddScaled(float* x, const float* y, int64_t n, float s) {
  SplitElements(pool_, n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] += s * y[i];
  });
}

void CpuBackend::CopyRows(const float* src, int64_t src_stride, int32_t rows, int32_t width, float* dst,
                          int64_t dst_stride) {
  for (int32_t r = 0; r < rows; ++r) std::copy(src + r * src_stride, src + r * src_stride + width, dst + r * dst_stride);
}

void CpuBackend::Scale(float* x, int64_t n, float s) {
  SplitElements(pool_, n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] *= s;
  });
}

void CpuBackend::LayerNorm(const float* x, const float* w, const float* b, int32_t rows, int32_t n, float eps,
                           float* y) {
  // Two sequential double sums per row (the reference's order): a few microseconds a row, so a
  // prefill step's rows are split across the threads from a few dozen rows on, and taken four at
  // a time so that the rows' dependent chains of additions overlap (each row's sums in its own
  // order, so the same bits as one row at a time).
  SplitRows(pool_, rows, n, kSplitElements / 4, [&](int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) LayerNormRows<4>(x + r * n, w, b, n, eps, y + r * n);
    for (; r < r1; ++r) LayerNormRows<1>(x + r * n, w, b, n, eps, y + r * n);
  });
}

void CpuBackend::Rope(float* x, int32_t n_tok, int32_t n_heads, int32_t head_dim, const int32_t* pos,
                      const RopeParams& rp) {
  const int32_t half = rp.n_rot / 2;
  const float theta_scale = std::pow(rp.base, -2.0f / float(rp.n_rot));
  const size_t nth = size_t(pool_->size());
  // Per thread: the cos/sin of one position's angles (sized once: no allocation per call).
  if (rope_cs_.size() < nth * size_t(half) * 2) {
    rope_cs_.resize(nth * size_t(half) * 2);
    rope_key_ = RopeKey{};
  }
  // One token: the angles of the last single-token call are reused when nothing changed (the
  // caller computes slot 0; any other call may overwrite it, so it forgets the key).
  const RopeKey key{n_tok == 1 ? pos[0] : -1, rp.n_rot, rp.base, rp.freq_scale, rp.attn_factor, rp.freq_factors,
                    rp.ext_factor, rp.n_ctx_orig, rp.beta_fast, rp.beta_slow};
  float yarn_low = 0.0f, yarn_high = 0.0f;
  if (rp.ext_factor != 0.0f) RopeYarnCorrDims(rp, &yarn_low, &yarn_high);
  // YaRN's magnitude for the blended angles, as the reference applies it.
  const float yarn_mscale = rp.attn_factor * (1.0f + 0.1f * std::log(1.0f / rp.freq_scale));
  // M-RoPE: four positions per token (rp.sections), never reused (the key holds one position).
  const bool sectioned = rp.sectioned();
  const bool reuse = !sectioned && n_tok == 1 && key == rope_key_;
  rope_key_ = !sectioned && n_tok == 1 ? key : RopeKey{};
  // Pair i's cos / sin from its angle `theta` (position x freq_scale, advanced by theta_scale per
  // pair) and, for YaRN, `extrap` (the unscaled one): YaRN in the reference's order of float
  // operations (each pair blends its scaled and unscaled angle by the ramp), else plain.
  const auto pair = [&](float* cs, int32_t i, float theta, float extrap) {
    if (rp.ext_factor != 0.0f) {
      const float e = rp.freq_factors ? extrap / rp.freq_factors[i] : extrap;
      const float interp = rp.freq_scale * e;
      const float y = (float(i) - yarn_low) / std::max(0.001f, yarn_high - yarn_low);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rp.ext_factor;
      const float th = interp * (1.0f - ramp_mix) + e * ramp_mix;
      cs[size_t(2 * i)] = std::cos(th) * yarn_mscale;
      cs[size_t(2 * i + 1)] = std::sin(th) * yarn_mscale;
    } else {
      const float th = rp.freq_factors ? theta / rp.freq_factors[i] : theta;
      cs[size_t(2 * i)] = std::cos(th) * rp.attn_factor;
      cs[size_t(2 * i + 1)] = std::sin(th) * rp.attn_factor;
    }
  };
  auto run = [&](int32_t ith, int32_t nth_run, int32_t t0, int32_t t1) {
    (void)nth_run;
    float* cs = rope_cs_.data() + size_t(ith) * size_t(half) * 2;
    for (int32_t t = t0; t < t1; ++t) {
      if (sectioned) {
        // Each of the four positions' angles advances over every pair (as plain rope's one
        // does); pair i takes its component's.
        const int32_t* p4 = pos + int64_t{t} * 4;
        float th4[4], ex4[4];
        for (int32_t c = 0; c < 4; ++c) th4[c] = float(p4[c]) * rp.freq_scale, ex4[c] = float(p4[c]);
        for (int32_t i = 0; i < half; ++i) {
          const int32_t c = MropeComponent(rp, i);
          pair(cs, i, th4[c], ex4[c]);
          for (int32_t k = 0; k < 4; ++k) th4[k] *= theta_scale, ex4[k] *= theta_scale;
        }
      } else if (!reuse) {
        float theta = float(pos[t]) * rp.freq_scale, extrap = float(pos[t]);
        for (int32_t i = 0; i < half; ++i) {
          pair(cs, i, theta, extrap);
          theta *= theta_scale;
          extrap *= theta_scale;
        }
      }
      for (int32_t h = 0; h < n_heads; ++h) {
        float* v = x + (int64_t{t} * n_heads + h) * head_dim;
        for (int32_t i = 0; i < half; ++i) {
          const float c = cs[size_t(2 * i)], s = cs[size_t(2 * i + 1)];
          const int32_t i0 = rp.style == RopeStyle::kNorm ? 2 * i : i;
          const int32_t i1 = rp.style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
          const float a = v[i0], b = v[i1];
          v[i0] = a * c - b * s;
          v[i1] = a * s + b * c;
        }
      }
    }
  };
  if (int64_t{n_tok} * n_heads * head_dim < (int64_t{1} << 21)) {  // small (decode, K of a prefill): on the caller
    run(0, 1, 0, n_tok);
    return;
  }
  auto split = [&](int32_t ith, int32_t nth_run) {
    run(ith, nth_run, int32_t(int64_t{n_tok} * ith / nth_run), int32_t(int64_t{n_tok} * (ith + 1) / nth_run));
  };
  using Split = decltype(split);
  pool_->Run([](void* p, int32_t ith, int32_t nth_run) { (*static_cast<Split*>(p))(ith, nth_run); }, &split);
}

namespace {

// GELU (tanh approximation) as the reference computes it: a table over every F16 input, with
// the result rounded to F16; inputs beyond +-10 bypass the table.
const float* GeluTable() {
  static const std::vector<float> table = [] {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoef = 0.044715f;
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = quant::Fp16ToFp32(uint16_t(h));
      const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
      t[h] = quant::Fp16ToFp32(quant::Fp32ToFp16(g));
    }
    return t;
  }();
  return table.data();
}

void GeluMul(float* gate, const float* up, int64_t n) {
  const float* table = GeluTable();
  uint16_t h[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    const int64_t len = std::min<int64_t>(256, n - i0);
    quant::QuantizeActivations(GgmlType::F16, gate + i0, h, len);  // vectorized F32 -> F16
    for (int64_t i = 0; i < len; ++i) {
      const float x = gate[i0 + i];
      const float g = x <= -10.0f ? 0.0f : x >= 10.0f ? x : table[h[i]];
      gate[i0 + i] = g * up[i0 + i];
    }
  }
}

// gpt-oss's clamped SwiGLU, in the reference's operations (std::exp, the clamps first).
void SwigluOaiMul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], kSwigluOaiLimit);
    const float y = std::clamp(up[i], -kSwigluOaiLimit, kSwigluOaiLimit);
    gate[i] = x / (1.0f + std::exp(kSwigluOaiAlpha * (-x))) * (y + 1.0f);
  }
}

}  // namespace

void CpuBackend::ApplyGated(Activation act, float* gate, const float* up, int64_t n) {
  if (act == Activation::kSwigluOai) {
    SwigluOaiMul(gate, up, n);
  } else if (act == Activation::kGeluTanh) {
    GeluMul(gate, up, n);
  } else {
    act::SiluMul(gate, up, n);
  }
}

// A plain activation is the gated one with up = 1: the same kernels, rounding and tables.
void CpuBackend::Activate(Activation act, float* x, int64_t n) {
  static const std::vector<float> ones(kChunk, 1.0f);
  SplitElements(pool_, n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += kChunk) ApplyGated(act, x + i, ones.data(), std::min<int64_t>(kChunk, e - i));
  });
}

// Small work (3 products per channel and position): the calling thread alone, so a position's
// result never depends on a split.
void CpuBackend::ShortConv(const float* bcx, int32_t n_tok, int32_t width, const float* kernel, int32_t l_cache,
                           float* state, const StateSnapshots& snaps, float* y) {
  const int32_t d = l_cache - 1;
  const size_t W = size_t(width);
  conv_window_.resize(size_t(d + n_tok) * W);
  float* u = conv_window_.data();
  std::copy(state, state + size_t(d) * W, u);
  for (int32_t t = 0; t < n_tok; ++t) {
    const float* b = bcx + size_t(t) * 3 * W;
    const float* x = b + 2 * W;
    float* ut = u + size_t(d + t) * W;
    for (size_t c = 0; c < W; ++c) ut[c] = b[c] * x[c];
  }
  for (int32_t t = 0; t < n_tok; ++t) {
    const float* gate = bcx + size_t(t) * 3 * W + W;
    float* yt = y + size_t(t) * W;
    for (size_t c = 0; c < W; ++c) {
      const float* k = kernel + c * size_t(l_cache);
      float sum = 0.0f;
      for (int32_t j = 0; j < l_cache; ++j) sum += u[size_t(t + j) * W + c] * k[j];
      yt[c] = gate[c] * sum;
    }
  }
  // The state after `rows` positions is the window's d rows from there.
  for (int32_t k = 0; k < snaps.n; ++k) {
    const StateSnapshot& sn = snaps.at[k];
    std::copy(u + size_t(sn.rows) * W, u + size_t(sn.rows + d) * W, sn.state);
  }
  std::copy(u + size_t(n_tok) * W, u + size_t(n_tok + d) * W, state);
}

// Split as the light ops are: a decode step's gate (Qwen 3.5's 2048 per DeltaNet layer) on the
// caller, not a pool round trip per layer.
void CpuBackend::GatedActivation(Activation act, float* gate, const float* up, int64_t n) {
  SplitElements(pool_, n, [&](int64_t b, int64_t e) { ApplyGated(act, gate + b, up + b, e - b); });
}


void CpuBackend::Softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace zf::engine

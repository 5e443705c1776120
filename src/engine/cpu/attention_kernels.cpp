// Scalar reference of the blocked prefill attention (attention_kernels.h) and its dispatch.
#include "engine/cpu/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "quant/quant.h"
#include "quant/kernels.h"

namespace zf::engine::attn {

float SoftmaxRef(float* s, int32_t n, float mx, const float* sink, Partial* part) {
  const bool with_sink = sink != nullptr && part == nullptr;
  if (with_sink) mx = std::max(mx, *sink);
  float sum = with_sink ? std::exp(*sink - mx) : 0.0f;
  for (int32_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  if (part != nullptr) {
    *part = {mx, sum};
    return 1.0f;
  }
  return 1.0f / sum;
}

void RunBlockRef(const Block& b) {
  const int64_t ss = ScoreStride(b.n_keys);
  for (int32_t i = 0; i < b.rows; ++i) {
    float* s = b.s + i * ss;
    const float* q = b.q + int64_t{i} * b.d_k;
    float mx = -INFINITY;
    for (int32_t j = b.lo[i]; j <= b.hi[i]; ++j) {
      float dot = 0.0f;
      for (int32_t d = 0; d < b.d_k; ++d) dot += q[d] * b.kt[d * b.kt_stride + j];
      float v = dot * b.scale;
      if (b.softcap > 0.0f) v = b.softcap * std::tanh(v / b.softcap);
      s[j] = v;
      mx = std::max(mx, v);
    }
    if (b.sink != nullptr) mx = std::max(mx, b.sink[i]);
    float sum = b.sink != nullptr ? std::exp(b.sink[i] - mx) : 0.0f;
    for (int32_t j = b.lo[i]; j <= b.hi[i]; ++j) {
      s[j] = std::exp(s[j] - mx);
      sum += s[j];
    }
    const float inv = 1.0f / sum;
    float* o = b.out[i];
    std::fill(o, o + b.d_v, 0.0f);
    for (int32_t j = b.lo[i]; j <= b.hi[i]; ++j) {
      const float w = s[j] * inv;
      for (int32_t e = 0; e < b.d_v; ++e) o[e] += w * b.v[j * b.v_stride + e];
    }
  }
}

void RunDecodeRef(const DecodeGroup& g) {
  for (int32_t h = 0; h < g.n_q; ++h) {
    const float* q = g.q + int64_t{h} * g.d_k;
    float* s = g.s + int64_t{h} * g.n_keys;
    float mx = -INFINITY;
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint16_t* k = g.k + j * g.k_stride;
      float dot = 0.0f;
      for (int32_t d = 0; d < g.d_k; ++d) dot += q[d] * quant::Fp16ToFp32(k[d]);
      float x = dot * g.scale;
      if (g.softcap > 0.0f) x = g.softcap * std::tanh(x / g.softcap);
      s[j] = x;
      mx = std::max(mx, x);
    }
    const float inv =
        SoftmaxRef(s, g.n_keys, mx, g.sink != nullptr ? g.sink + h : nullptr, g.part != nullptr ? g.part + h : nullptr);
    float* o = g.out[h];
    std::fill(o, o + g.d_v, 0.0f);
    for (int32_t j = 0; j < g.n_keys; ++j) {
      const uint16_t* v = g.v + j * g.v_stride;
      for (int32_t e = 0; e < g.d_v; ++e) o[e] += s[j] * quant::Fp16ToFp32(v[e]);
    }
    for (int32_t e = 0; e < g.d_v; ++e) o[e] *= inv;
  }
}

constexpr int32_t kMaxSplitBlocks = 64;  // CombinePartials' weights on the stack at a time

void CombinePartials(const Partial* part, int64_t part_stride, const float* outs, int64_t out_stride, int32_t n,
                     int32_t d_v, float sink, float* out) {
  float mx = sink;
  for (int32_t c = 0; c < n; ++c) mx = std::max(mx, part[c * part_stride].max);
  float sum = sink > -INFINITY ? std::exp(sink - mx) : 0.0f;
  float w[kMaxSplitBlocks];
  for (int32_t c0 = 0; c0 < n; c0 += kMaxSplitBlocks) {  // weights a stack block at a time
    const int32_t nc = std::min(kMaxSplitBlocks, n - c0);
    for (int32_t c = 0; c < nc; ++c) {
      const Partial& p = part[(c0 + c) * part_stride];
      w[c] = std::exp(p.max - mx);
      sum += w[c] * p.sum;
    }
    for (int32_t c = 0; c < nc; ++c) {
      const float* o = outs + (c0 + c) * out_stride;
      if (c0 + c == 0) {
        for (int32_t e = 0; e < d_v; ++e) out[e] = w[c] * o[e];
      } else {
        for (int32_t e = 0; e < d_v; ++e) out[e] += w[c] * o[e];
      }
    }
  }
  const float inv = 1.0f / sum;
  for (int32_t e = 0; e < d_v; ++e) out[e] *= inv;
}

namespace {
enum class Isa { kRef, kAvx2, kAvx512, kNeon };
Isa Pick() {
  switch (quant::SelectedIsa()) {
    case quant::Isa::kAvx512: return Isa::kAvx512;
    case quant::Isa::kAvx2: return Isa::kAvx2;
    case quant::Isa::kNeon: case quant::Isa::kNeonDot: return Isa::kNeon;
    case quant::Isa::kScalar: break;
  }
  return Isa::kRef;
}
Isa Chosen() {
  static const Isa isa = Pick();
  return isa;
}
}  // namespace

void RunBlock(const Block& b) {
#if defined(__x86_64__) || defined(__i386__)
  switch (Chosen()) {
    case Isa::kAvx512: RunBlockAvx512(b); return;
    case Isa::kAvx2: RunBlockAvx2(b); return;
    default: break;
  }
#endif
#if defined(__aarch64__)
  if (Chosen() == Isa::kNeon) {
    RunBlockAsimd(b);
    return;
  }
#endif
  RunBlockRef(b);
}
bool HasFastBlock() { return Chosen() != Isa::kRef; }

void RunDecode(const DecodeGroup& g) {
#if defined(__x86_64__) || defined(__i386__)
  if (Chosen() == Isa::kAvx512 && g.d_k % 16 == 0 && g.d_v % 16 == 0) {
    RunDecodeAvx512(g);
    return;
  }
  if (Chosen() != Isa::kRef && g.d_k % 8 == 0 && g.d_v % 8 == 0) {  // AVX-512 machines have AVX2
    RunDecodeAvx2(g);
    return;
  }
#endif
#if defined(__aarch64__)
  if (Chosen() == Isa::kNeon && g.d_k % 8 == 0 && g.d_v % 4 == 0) {
    RunDecodeAsimd(g);
    return;
  }
#endif
  RunDecodeRef(g);
}
bool HasExactTile() { return Chosen() == Isa::kAvx512; }
void RunExactTile(const ExactTile& t) {
#if defined(__x86_64__) || defined(__i386__)
  RunExactTileAvx512(t);
#else
  (void)t;
#endif
}
// The same CPU check as the blocked kernel (the x86 SIMD levels include F16C; NEON converts
// half precision in every aarch64 CPU).
bool HasFastDecode() { return HasFastBlock(); }

}  // namespace zf::engine::attn

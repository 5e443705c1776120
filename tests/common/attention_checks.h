// Attention kernels against their scalar references (engine/cpu/attention_kernels.h): a
// blocked prefill kernel or a grouped decode kernel, given as a function, on random inputs of
// the shapes the engine uses. Shared by the unit tests and the emulated AVX-512 tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/random_data.h"
#include "engine/cpu/attention_kernels.h"
#include "engine/ops.h"
#include "quant/quant.h"

namespace zf::testing {

using BlockFn = void (*)(const engine::attn::Block&);
using DecodeFn = void (*)(const engine::attn::DecodeGroup&);

// Row pointers into an [n][width] output block (the kernels write through such pointers).
inline std::vector<float*> RowPointers(std::vector<float>& out, int32_t n, int32_t width) {
  std::vector<float*> p(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) p[size_t(i)] = out.data() + size_t(i) * size_t(width);
  return p;
}

inline void ExpectCloseToReference(const std::vector<float>& out, const std::vector<float>& out_ref) {
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_ref[i], 2e-5f * (1.0f + std::fabs(out_ref[i]))) << i;
}

// Sink logits in [-3, 6] (attention sinks): some below every score, some above.
// n_head query heads over n_kv KV heads of size hd (K and V), scale 1 / sqrt(hd), a sliding
// window (0: none).
inline engine::AttentionParams GroupedParams(int32_t n_head, int32_t n_kv, int32_t hd, int32_t window) {
  engine::AttentionParams ap;
  ap.n_head = n_head;
  ap.n_head_kv = n_kv;
  ap.head_dim_k = ap.head_dim_v = hd;
  ap.scale = 1.0f / std::sqrt(float(hd));
  ap.window = window;
  return ap;
}

inline std::vector<float> RandomSinks(int32_t n, uint32_t seed) {
  std::vector<float> s = RandomFloats(size_t(n), seed);
  for (float& x : s) x = 1.5f + 4.5f * std::max(-1.0f, std::min(1.0f, x));
  return s;
}

inline void CheckBlock(int32_t rows, int32_t d_k, int32_t d_v, int32_t n_keys, int32_t window, float softcap, float q_scale,
                BlockFn fast = engine::attn::RunBlock, bool sinks = false) {
  SCOPED_TRACE("rows " + std::to_string(rows) + " d_k " + std::to_string(d_k) + " d_v " + std::to_string(d_v) +
               " keys " + std::to_string(n_keys) + " window " + std::to_string(window) + (sinks ? " sinks" : ""));
  const int64_t kt_stride = n_keys + engine::attn::kKeyPad + 3;  // any stride with the padding works
  std::vector<float> q = RandomFloats(size_t(engine::attn::kAttnRows) * size_t(d_k), 1, q_scale);
  std::vector<float> kt = RandomFloats(size_t(d_k) * size_t(kt_stride), 2);
  for (int32_t d = 0; d < d_k; ++d) std::fill(kt.begin() + d * kt_stride + n_keys, kt.begin() + (d + 1) * kt_stride, 0.0f);
  const int64_t v_stride = d_v + 5;
  std::vector<float> v = RandomFloats(size_t(n_keys) * size_t(v_stride), 3);
  std::vector<int32_t> lo(static_cast<size_t>(rows)), hi(static_cast<size_t>(rows));
  for (int32_t i = 0; i < rows; ++i) {  // causal rows ending near the last key, optional window
    hi[size_t(i)] = std::max(0, n_keys - 1 - (rows - 1 - i) * 3);
    lo[size_t(i)] = window > 0 ? std::max(0, hi[size_t(i)] - window + 1) : 0;
  }
  std::vector<float> s(size_t(engine::attn::kAttnRows) * size_t(engine::attn::ScoreStride(n_keys)));
  std::vector<float> out(size_t(rows) * size_t(d_v), NAN), out_ref(size_t(rows) * size_t(d_v), NAN);
  std::vector<float*> op = RowPointers(out, rows, d_v), op_ref = RowPointers(out_ref, rows, d_v);
  engine::attn::Block b;
  b.q = q.data();
  b.rows = rows;
  b.d_k = d_k;
  b.d_v = d_v;
  b.kt = kt.data();
  b.kt_stride = kt_stride;
  b.v = v.data();
  b.v_stride = v_stride;
  b.n_keys = n_keys;
  b.lo = lo.data();
  b.hi = hi.data();
  b.scale = 1.0f / std::sqrt(float(d_k));
  b.softcap = softcap;
  b.s = s.data();
  b.out = op.data();
  const std::vector<float> sink = RandomSinks(rows, 4);
  if (sinks) b.sink = sink.data();
  fast(b);
  b.out = op_ref.data();
  engine::attn::RunBlockRef(b);
  ExpectCloseToReference(out, out_ref);
}

// Grouped decode (dispatched) against its scalar reference over an F16 cache laid out like the
// engine's: rows of several KV heads, this group's head at an offset.
inline void CheckDecode(int32_t n_q, int32_t d_k, int32_t d_v, int32_t n_keys, float softcap, float q_scale,
                 DecodeFn fast = engine::attn::RunDecode, bool sinks = false) {
  SCOPED_TRACE("heads " + std::to_string(n_q) + " d_k " + std::to_string(d_k) + " d_v " + std::to_string(d_v) +
               " keys " + std::to_string(n_keys) + " softcap " + std::to_string(softcap) + (sinks ? " sinks" : ""));
  const int64_t k_stride = 3 * int64_t{d_k} + 8, v_stride = 2 * int64_t{d_v} + 16;
  const std::vector<float> kf = RandomFloats(size_t(n_keys) * size_t(k_stride), 11);
  const std::vector<float> vf = RandomFloats(size_t(n_keys) * size_t(v_stride), 12);
  std::vector<uint16_t> k(kf.size()), v(vf.size());
  for (size_t i = 0; i < k.size(); ++i) k[i] = quant::Fp32ToFp16(kf[i]);
  for (size_t i = 0; i < v.size(); ++i) v[i] = quant::Fp32ToFp16(vf[i]);
  const std::vector<float> q = RandomFloats(size_t(n_q) * size_t(d_k), 13, q_scale);
  std::vector<float> s(size_t(n_q) * size_t(n_keys));
  std::vector<float> out(size_t(n_q) * size_t(d_v), NAN), out_ref(out.size(), NAN);
  std::vector<float*> op = RowPointers(out, n_q, d_v), op_ref = RowPointers(out_ref, n_q, d_v);
  engine::attn::DecodeGroup g;
  g.q = q.data();
  g.n_q = n_q;
  g.d_k = d_k;
  g.d_v = d_v;
  g.k = k.data() + d_k;  // the second KV head of each row
  g.k_stride = k_stride;
  g.v = v.data() + d_v;
  g.v_stride = v_stride;
  g.n_keys = n_keys;
  g.scale = 1.0f / std::sqrt(float(d_k));
  g.softcap = softcap;
  g.s = s.data();
  g.out = op.data();
  const std::vector<float> sink = RandomSinks(n_q, 14);
  if (sinks) g.sink = sink.data();
  fast(g);
  g.out = op_ref.data();
  engine::attn::RunDecodeRef(g);
  ExpectCloseToReference(out, out_ref);
}

// The cases every SIMD blocked kernel runs: row and head-size tails (80: a half value tile;
// 36: masked lanes), d_v != d_k, a window, a softcap, peaked scores.
inline void CheckBlockKernel(BlockFn fast) {
  for (int32_t rows : {16, 13, 1}) {
    for (int32_t dk : {64, 256, 80, 36}) {
      for (int32_t n_keys : {1, 17, 300}) CheckBlock(rows, dk, dk, n_keys, 0, 0.0f, 1.0f, fast);
    }
  }
  CheckBlock(16, 128, 72, 200, 0, 0.0f, 1.0f, fast);
  CheckBlock(13, 40, 38, 100, 0, 0.0f, 1.0f, fast);  // d_v not a multiple of 4 (NEON: scalar dimensions)
  CheckBlock(16, 64, 64, 300, 40, 0.0f, 1.0f, fast);
  CheckBlock(16, 64, 64, 200, 0, 50.0f, 1.0f, fast);
  CheckBlock(16, 64, 64, 200, 0, 0.0f, 30.0f, fast);
  for (int32_t n_keys : {1, 17, 300}) CheckBlock(13, 64, 64, n_keys, 0, 0.0f, 1.0f, fast, true);  // sinks
  CheckBlock(16, 64, 64, 300, 40, 0.0f, 30.0f, fast, true);
  CheckBlock(16, 64, 64, 1000, 250, 0.0f, 1.0f, fast);  // windows across the 256-key chunks
  CheckBlock(13, 80, 72, 777, 0, 0.0f, 1.0f, fast);     // 4 chunks, a short last tile
}

// The cases every SIMD decode kernel runs, over the head sizes it takes; then d_v != d_k, a
// softcap, peaked scores.
inline void CheckDecodeKernel(DecodeFn fast, std::initializer_list<int32_t> head_dims) {
  for (int32_t n_q = 1; n_q <= engine::attn::kDecodeHeads; ++n_q) {
    for (int32_t dk : head_dims) {
      for (int32_t n_keys : {1, 17, 300}) CheckDecode(n_q, dk, dk, n_keys, 0.0f, 1.0f, fast);
    }
  }
  CheckDecode(3, 128, 96, 200, 0.0f, 1.0f, fast);
  CheckDecode(4, 64, 64, 200, 50.0f, 1.0f, fast);
  CheckDecode(2, 64, 64, 200, 0.0f, 30.0f, fast);
  for (int32_t n_keys : {1, 17, 300}) CheckDecode(3, 64, 64, n_keys, 0.0f, 1.0f, fast, true);  // sinks
  CheckDecode(4, 64, 64, 200, 0.0f, 30.0f, fast, true);
}

}  // namespace zf::testing

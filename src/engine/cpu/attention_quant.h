// Grouped decode attention over a quantized KV cache (issue #45 §1): up to kDecodeHeads query
// heads of one GQA group against the Q8_0 / Q4_0 K rows and Q8_0 / Q4_0 / F16 / F32 V rows of
// one KV head, each row read once for the whole group. Scores are integer dot products per
// 32-element block (Q in Q8_0, as ggml's CPU flash attention converts Q for a quantized K),
// scaled in F32; the softmax runs on vectors; each V row is dequantized in registers and
// accumulated for every head. Scalar reference + AVX-512 VNNI, AVX2 and baseline NEON versions.
// Rows are stored rotated (kv_quant.h): the caller rotates Q before quantizing it and rotates a
// rotated V's output back. Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>

#include "engine/cpu/attention_kernels.h"
#include "engine/kv_cache.h"

namespace zf::engine::attn {

struct QuantDecodeGroup {
  const uint8_t* q8;      // [n_q] rows of Q in Q8_0 blocks (d_k / 32 blocks of 34 bytes each)
  int32_t n_q;            // 1..kDecodeHeads
  int32_t d_k, d_v;       // multiples of 32
  KvType kt, vt;          // kt: Q8_0 or Q4_0; vt: Q8_0, Q4_0, F16 or F32
  const uint8_t* k;       // key j at k + j * k_stride bytes (this KV head's first block)
  int64_t k_stride;
  const uint8_t* v;       // value j at v + j * v_stride bytes
  int64_t v_stride;
  int32_t n_keys;         // >= 1: every key is visible (the caller applies window and causality)
  float scale;            // applied to the scores before the softcap
  float softcap;          // > 0: s = softcap * tanh(s / softcap)
  float* s;               // scratch: n_q * n_keys floats
  float* const* out;      // [n_q] output rows of d_v floats
  const float* sink = nullptr;  // [n_q] each head's sink logit, or none
  Partial* part = nullptr;      // set: a partial softmax (see Partial), out left unnormalized
};

// True for the K/V type pairs RunQuantDecode takes.
inline bool QuantDecodeTypes(KvType kt, KvType vt) {
  return (kt == KvType::kQ8_0 || kt == KvType::kQ4_0) &&
         (vt == KvType::kQ8_0 || vt == KvType::kQ4_0 || vt == KvType::kF16 || vt == KvType::kF32);
}

// The fastest kernel this CPU has (the same one for every call in a process, so every path
// that computes a (token, head) through it gets the same bits).
void RunQuantDecode(const QuantDecodeGroup& g);
void RunQuantDecodeRef(const QuantDecodeGroup& g);
#if defined(__x86_64__) || defined(__i386__)
void RunQuantDecodeAvx512(const QuantDecodeGroup& g);  // attention_quant_avx512.cpp; AVX-512 F/BW/VL + VNNI
void RunQuantDecodeAvx2(const QuantDecodeGroup& g);    // attention_quant_avx2.cpp; AVX2 + FMA + F16C
#endif
#if defined(__aarch64__)
void RunQuantDecodeAsimd(const QuantDecodeGroup& g);   // attention_quant_asimd.cpp; every aarch64 CPU
#endif

}  // namespace zf::engine::attn

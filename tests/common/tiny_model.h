// A complete tiny llama model as GGUF bytes (1 layer, n_embd = n_ff = 256 by default, 8 tokens,
// SPM vocabulary), for
// tests and fuzzers that need a loadable model without a download: the C API's load-time
// validation tests (tests/capi/reliability_test.cpp) and the load-then-decode fuzzer
// (tests/fuzz/). Weights are pseudo-random with small finite scales; `weight_type` picks the
// quant type of the seven projection matrices (F32, Q8_0, Q4_K, Q6_K, IQ4_NL, IQ4_XS or MXFP4).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "unit/gguf_builder.h"

namespace zf::testutil {

inline constexpr int64_t kTinyEmbd = 256, kTinyFf = 256, kTinyVocab = 8;

// Random quant blocks whose fp16 scale fields hold `scale16` (0x211F ~ 0.01).
inline std::vector<uint8_t> TinyTensorData(uint32_t type, int64_t n_elements, uint32_t seed, uint16_t scale16 = 0x211F) {
  using namespace zf::gguf::testutil;  // NOLINT
  int64_t block = 0;
  uint64_t bytes = 0;
  TypeLayout(type, &block, &bytes);
  std::vector<uint8_t> d(size_t(n_elements / block * int64_t(bytes)));
  uint32_t s = seed * 2654435761u + 12345u;
  for (uint8_t& b : d) {
    s = s * 1664525u + 1013904223u;
    b = uint8_t(s >> 24);
  }
  const auto put16 = [&](size_t off, uint16_t v) { std::memcpy(&d[off], &v, 2); };
  const size_t n_blocks = d.size() / bytes;
  for (size_t i = 0; i < n_blocks; ++i) {
    const size_t b = i * bytes;
    switch (type) {
      case kTF32: {
        const float v = float(int(d[b] % 64) - 32) / 256.0f;
        std::memcpy(&d[b], &v, 4);
        break;
      }
      case kTQ8_0: case kTQ4_0: put16(b, scale16); break;
      case kTQ4_K: put16(b, scale16); put16(b + 2, scale16); break;
      case kTQ6_K: put16(b + 208, scale16); break;
      case kTIQ4_NL: case kTIQ4_XS: put16(b, scale16); break;
      case kTMXFP4: d[b] = 121; break;  // E8M0 exponent: 2^(121 - 128) * codebook ~ 0.01 * q
      default: break;
    }
  }
  return d;
}

// The tiny model's bytes. `poison` names a tensor whose block `poison_block` gets a NaN scale
// (fp16 0x7E00; MXFP4: exponent 0xFF) — or, for an F32 tensor, a NaN value.
inline std::vector<uint8_t> TinyLlamaGguf(uint32_t weight_type = zf::gguf::testutil::kTQ8_0,
                                          const std::string& poison = "", size_t poison_block = 0,
                                          zf::gguf::testutil::Layout* layout = nullptr,
                                          int64_t embd = kTinyEmbd) {
  using namespace zf::gguf::testutil;  // NOLINT
  GgufBuilder b;
  b.Kv("general.architecture", val::Str("llama"))
      .Kv("general.name", val::Str("tiny"))
      .Kv("llama.context_length", val::U32(256))
      .Kv("llama.embedding_length", val::U32(uint32_t(embd)))
      .Kv("llama.block_count", val::U32(1))
      .Kv("llama.feed_forward_length", val::U32(uint32_t(embd)))
      .Kv("llama.attention.head_count", val::U32(4))
      .Kv("llama.attention.head_count_kv", val::U32(2))
      .Kv("llama.attention.layer_norm_rms_epsilon", val::F32(1e-5f))
      .Kv("tokenizer.ggml.model", val::Str("llama"))
      .Kv("tokenizer.ggml.tokens", val::StrArr({"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a", "b", "\xE2\x96\x81", "ab"}))
      .Kv("tokenizer.ggml.scores", val::ArrOf<float>(kF32, {0, 0, 0, -1, -2, -3, -4, -5}))
      .Kv("tokenizer.ggml.token_type", val::ArrOf<int32_t>(kI32, {2, 3, 3, 1, 1, 1, 1, 1}))
      .Kv("tokenizer.ggml.bos_token_id", val::U32(1))
      .Kv("tokenizer.ggml.eos_token_id", val::U32(2));
  uint32_t seed = 1;
  const auto add = [&](const std::string& name, uint32_t type, std::vector<int64_t> ne) {
    TensorSpec t;
    t.name = name;
    t.type = type;
    t.ne = ne;
    int64_t n = 1;
    for (int64_t x : ne) n *= x;
    if (type == kTF32 && name.find("norm") != std::string::npos) {
      t.data.resize(size_t(n) * 4);
      for (int64_t i = 0; i < n; ++i) {
        const float one = 1.0f;
        std::memcpy(&t.data[size_t(i) * 4], &one, 4);
      }
    } else {
      t.data = TinyTensorData(type, n, seed++);
    }
    if (name == poison) {
      int64_t block = 0;
      uint64_t bytes = 0;
      TypeLayout(type, &block, &bytes);
      const size_t at = poison_block * bytes + (type == kTQ6_K ? 208 : 0);
      if (type == kTMXFP4) {
        t.data[at] = 0xFF;  // E8M0's NaN
      } else if (type == kTF32) {
        const uint32_t nan = 0x7FC00000u;
        std::memcpy(&t.data[at], &nan, 4);
      } else {
        const uint16_t nan = 0x7E00;
        std::memcpy(&t.data[at], &nan, 2);
      }
    }
    b.Tensor(t);
  };
  add("token_embd.weight", kTQ8_0, {embd, kTinyVocab});
  add("output_norm.weight", kTF32, {embd});
  add("output.weight", kTQ8_0, {embd, kTinyVocab});
  add("blk.0.attn_norm.weight", kTF32, {embd});
  add("blk.0.attn_q.weight", weight_type, {embd, embd});
  add("blk.0.attn_k.weight", weight_type, {embd, embd / 2});
  add("blk.0.attn_v.weight", weight_type, {embd, embd / 2});
  add("blk.0.attn_output.weight", weight_type, {embd, embd});
  add("blk.0.ffn_norm.weight", kTF32, {embd});
  add("blk.0.ffn_gate.weight", weight_type, {embd, embd});
  add("blk.0.ffn_up.weight", weight_type, {embd, embd});
  add("blk.0.ffn_down.weight", weight_type, {embd, embd});
  return b.Build(layout);
}

}  // namespace zf::testutil

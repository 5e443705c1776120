// Builds small whisper.cpp .bin files in memory for the reader's tests and fuzz seeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>


namespace zf::speech::testing {

class BinBuilder {
 public:
  // n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state,
  // n_text_head, n_text_layer, n_mels, ftype
  std::vector<int32_t> hparams = {51864, 4, 8, 2, 1, 4, 8, 2, 1, 80, 1};
  std::vector<std::string> vocab = {"a", "b c", "<|endoftext|>"};
  int32_t vocab_len_override = -1;  // >= 0: the first token's length field says this
  int32_t filters_n_mel = 80;       // rows of the mel filter bank written

  // type 0 = F32, 1 = F16, 8 = Q8_0 (filled with zero blocks); dims in ggml order.
  void AddTensor(const std::string& name, int32_t type, std::vector<int32_t> ne, float value) {
    Put(int32_t(ne.size()));
    Put(int32_t(name.size()));
    Put(type);
    int64_t n = 1;
    for (int32_t d : ne) { Put(d); n *= d; }
    tensors_.insert(tensors_.end(), name.begin(), name.end());
    for (int64_t i = 0; i < n; ++i) {
      if (type == 0) { PutF(value); }
      else if (type == 1) { const uint16_t h = Half(value); Raw(&h, 2); }
      else if (type == 8) { if (i % 32 == 0) { const uint8_t z[34] = {}; Raw(z, 34); } }
    }
  }
  void AddRaw(const std::vector<int32_t>& words) { for (int32_t w : words) Put(w); }

  std::vector<uint8_t> Build() {
    std::vector<uint8_t> o;
    auto put = [&](int32_t v) { const uint8_t* p = reinterpret_cast<const uint8_t*>(&v); o.insert(o.end(), p, p + 4); };
    put(0x67676d6c);
    for (int32_t h : hparams) put(h);
    put(filters_n_mel);
    put(201);
    for (int i = 0; i < filters_n_mel * 201; ++i) { float f = (i % 201 == i / 201) ? 1.0f : 0.0f; const uint8_t* p = reinterpret_cast<const uint8_t*>(&f); o.insert(o.end(), p, p + 4); }
    put(int32_t(vocab.size()));
    for (size_t i = 0; i < vocab.size(); ++i) {
      put(i == 0 && vocab_len_override >= 0 ? vocab_len_override : int32_t(vocab[i].size()));
      o.insert(o.end(), vocab[i].begin(), vocab[i].end());
    }
    tensors_offset_ = o.size();
    o.insert(o.end(), tensors_.begin(), tensors_.end());
    return o;
  }
  size_t TensorsOffset() const { return tensors_offset_; }

 private:
  // IEEE half of a float that has one (normal range, at most 10 mantissa bits: test values).
  static uint16_t Half(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    if ((b & 0x7fffffff) == 0) return uint16_t(b >> 16);
    const int32_t e = int32_t((b >> 23) & 0xff) - 127 + 15;
    return uint16_t(((b >> 16) & 0x8000) | (uint32_t(e) << 10) | ((b >> 13) & 0x3ff));
  }
  void Raw(const void* p, size_t n) { const uint8_t* b = static_cast<const uint8_t*>(p); tensors_.insert(tensors_.end(), b, b + n); }
  void Put(int32_t v) { Raw(&v, 4); }
  void PutF(float v) { Raw(&v, 4); }
  std::vector<uint8_t> tensors_;
  size_t tensors_offset_ = 0;
};

}  // namespace zf::speech::testing

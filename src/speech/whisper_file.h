// whisper.cpp's ggml `.bin` model file: magic "ggml", 11 int32 hyperparameters, the mel filter
// bank, the vocabulary and the tensors (name, type, dims), memory-mapped and validated (every
// bad field is a Status naming it; nothing is trusted before it is checked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/ggml_types.h"
#include "common/status.h"

namespace zf::speech {

struct WhisperHparams {
  int32_t n_vocab = 0;
  int32_t n_audio_ctx = 0;
  int32_t n_audio_state = 0;
  int32_t n_audio_head = 0;
  int32_t n_audio_layer = 0;
  int32_t n_text_ctx = 0;
  int32_t n_text_state = 0;
  int32_t n_text_head = 0;
  int32_t n_text_layer = 0;
  int32_t n_mels = 0;
  int32_t ftype = 0;  // as stored (quantization version * 1000 + type)
};

struct WhisperTensor {
  GgmlType type = GgmlType::F32;
  int32_t n_dims = 0;
  int64_t ne[3] = {1, 1, 1};  // ggml order: ne[0] is the contiguous dimension
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
};

class WhisperFile {
 public:
  // Maps the file and validates it. Bytes past the last tensor are refused.
  static Status Open(const std::string& path, std::unique_ptr<WhisperFile>* out);
  // Parses a copy of `size` bytes (tests, fuzzing).
  static Status FromMemory(const void* data, size_t size, std::unique_ptr<WhisperFile>* out);
  ~WhisperFile();
  WhisperFile(const WhisperFile&) = delete;
  WhisperFile& operator=(const WhisperFile&) = delete;

  const WhisperHparams& hparams() const { return hp_; }
  int32_t mel_n_fft() const { return mel_n_fft_; }
  const std::vector<float>& mel_filters() const { return mel_filters_; }  // [n_mels][n_fft]
  const std::vector<std::string>& vocab() const { return vocab_; }        // ids below the specials
  const std::map<std::string, WhisperTensor>& tensors() const { return tensors_; }
  // The tensor `name` with exactly these dims (ne order) and a type in `types`, else a Status
  // naming it.
  Status Get(const std::string& name, std::vector<int64_t> ne, WhisperTensor* out) const;

 private:
  WhisperFile() = default;
  Status Parse();

  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;            // mmap'd region, or null
  std::vector<uint8_t> owned_;     // FromMemory's copy
  WhisperHparams hp_;
  int32_t mel_n_fft_ = 0;
  std::vector<float> mel_filters_;
  std::vector<std::string> vocab_;
  std::map<std::string, WhisperTensor> tensors_;
};

}  // namespace zf::speech

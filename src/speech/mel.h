// Whisper's log-mel spectrogram: 16 kHz mono PCM, 400-sample periodic Hann window, hop 160,
// power spectrum through the model's mel filter bank, log10 (floor 1e-10), clamped to
// (max - 8), then (x + 4) / 4. Padded as whisper.cpp's whisper_pcm_to_mel does: 200 samples
// reflected at the start, 30 s of zeros and 200 more at the end; frames past the audio's end
// are log10(1e-10) before clamping.
#pragma once

#include <cstdint>
#include <vector>

namespace zf::speech {

struct Mel {
  int32_t n_mel = 0;
  int32_t n_len = 0;      // frames held (the audio plus 30 s of padding)
  int32_t n_len_org = 0;  // frames that cover the audio itself (decoding stops there)
  std::vector<float> data;  // [n_mel][n_len]
};

// filters: [n_mel][201]. n_threads >= 1.
Mel LogMel(const float* pcm, int64_t n_samples, const std::vector<float>& filters, int32_t n_mel, int32_t n_threads);

}  // namespace zf::speech

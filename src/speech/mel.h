// Whisper's log-mel spectrogram: 16 kHz mono PCM, 400-sample periodic Hann window, hop 160,
// power spectrum through the model's mel filter bank, log10 (floor 1e-10), clamped to
// (max - 8), then (x + 4) / 4. Padded as whisper.cpp's whisper_pcm_to_mel does: 200 samples
// reflected at the start, 30 s of zeros and 200 more at the end; frames past the audio's end
// are log10(1e-10) before clamping. MelOptions gives libmtmd's variants of the same: its Whisper
// preprocessor for audio projectors (one more frame, a floor of 2^-24 on every mel value) and
// Gemma 4's (a 512-point FFT over a 320-sample window, magnitudes, natural log, the caller's
// padding, no clamp or rescale).
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

// Where libmtmd's mel differs from whisper.cpp's (the defaults are whisper.cpp's).
struct MelOptions {
  double floor = 1e-10;       // mel values below it are taken as it (libmtmd: 2^-24)
  bool last_frame = false;    // libmtmd: n_len = (padded - 400) / 160 + 1 (one frame more)
  int32_t n_fft = 400;        // points of the transform (a power of two times an odd number)
  int32_t window = 400;       // periodic Hann window length, at the frame's start, zeros after
  bool magnitude = false;     // |X| instead of |X|^2
  bool natural_log = false;   // ln instead of log10
  // Whisper's padding (reflected start, 30 s of zeros) and its clamp to max - 8 and (x + 4) / 4.
  // Off: the samples are framed as given, (n - n_fft) / 160 + 1 frames, logs left as they are.
  bool whisper_padding = true;
};

// filters: [n_mel][n_fft / 2 + 1]. n_threads >= 1.
Mel LogMel(const float* pcm, int64_t n_samples, const std::vector<float>& filters, int32_t n_mel, int32_t n_threads,
           const MelOptions& options = {});

// The mel filter bank libmtmd computes for its Whisper preprocessor (librosa's default: Slaney
// mel scale, 0 to 8 kHz, area-normalized triangles) for a 400-point FFT at 16 kHz: [n_mel][201].
std::vector<float> SlaneyMelFilters(int32_t n_mel);

// Triangles on the HTK mel scale (2595 log10(1 + f / 700)), 0 to 8 kHz, peak 1 (no area
// normalization) for an n_fft-point FFT at 16 kHz: [n_mel][n_fft / 2 + 1] (libmtmd's Gemma 4
// preprocessor).
std::vector<float> HtkMelFilters(int32_t n_mel, int32_t n_fft);

}  // namespace zf::speech

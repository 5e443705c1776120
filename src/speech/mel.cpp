#include "speech/mel.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <thread>
#include <vector>

namespace zf::speech {
namespace {

constexpr int kHop = 160;
constexpr int kWhisperFft = 400;
constexpr int kPad = kWhisperFft / 2;
constexpr int64_t kTail = 16000 * 30;

using cd = std::complex<double>;

// Mixed-radix FFT of a real frame of n = 2^a * odd points: even/odd split while the length is
// even, then a direct DFT on the odd remainder. w: exp(-2 pi i m / n_top), m < n_top (every
// twiddle of the transform). Double precision throughout.
void Fft(const double* in, int n, int stride, const cd* w, int n_top, cd* out) {
  const int step = n_top / n;  // twiddle m of length n is exp(-2 pi i m step / n_top)
  if (n % 2 == 1) {
    for (int k = 0; k < n; ++k) {
      cd s = 0;
      for (int j = 0; j < n; ++j) s += in[j * stride] * w[((k * j) % n) * step];
      out[k] = s;
    }
    return;
  }
  const int h = n / 2;
  Fft(in, h, stride * 2, w, n_top, out);
  Fft(in + stride, h, stride * 2, w, n_top, out + h);
  for (int k = 0; k < h; ++k) {
    const cd e = out[k], o = out[k + h] * w[k * step];
    out[k] = e + o;
    out[k + h] = e - o;
  }
}

// Triangular filters between mel-spaced edges (0 to 8 kHz) for an n_fft-point FFT at 16 kHz.
template <typename ToMel, typename ToHz>
std::vector<float> Triangles(int32_t n_mel, int32_t n_fft, bool area_norm, ToMel to_mel, ToHz to_hz) {
  const int bins = n_fft / 2 + 1;
  const double top = to_mel(8000.0);
  std::vector<double> hz(size_t(n_mel) + 2);
  for (size_t i = 0; i < hz.size(); ++i) hz[i] = to_hz(top * double(i) / double(n_mel + 1));
  std::vector<float> f(size_t(n_mel) * size_t(bins), 0.0f);
  for (int32_t m = 0; m < n_mel; ++m) {
    const double l = hz[size_t(m)], c = hz[size_t(m) + 1], r = hz[size_t(m) + 2];
    const double enorm = area_norm ? 2.0 / std::max(1e-30, r - l) : 1.0;
    for (int k = 0; k < bins; ++k) {
      const double x = k * 16000.0 / n_fft;
      double w = 0.0;
      if (x >= l && x <= c) w = (x - l) / std::max(1e-30, c - l);
      else if (x > c && x <= r) w = (r - x) / std::max(1e-30, r - c);
      f[size_t(m) * size_t(bins) + size_t(k)] = float(w * enorm);
    }
  }
  return f;
}

}  // namespace

Mel LogMel(const float* pcm, int64_t n_samples, const std::vector<float>& filters, int32_t n_mel, int32_t n_threads,
           const MelOptions& options) {
  if (n_samples < 0) n_samples = 0;
  const int n_fft = options.n_fft, bins = n_fft / 2 + 1;
  const bool whisper = options.whisper_padding;
  const int64_t pad = whisper ? kPad : 0;
  std::vector<float> padded(size_t(n_samples + (whisper ? kTail + 2 * kPad : 0)), 0.0f);
  if (n_samples > 0) std::memcpy(padded.data() + pad, pcm, size_t(n_samples) * sizeof(float));
  if (whisper)
    for (int i = 0; i < kPad && i + 1 < n_samples; ++i) padded[size_t(kPad - 1 - i)] = pcm[i + 1];  // reflect

  Mel mel;
  mel.n_mel = n_mel;
  mel.n_len = int32_t(std::max<int64_t>(0, (int64_t(padded.size()) - n_fft) / kHop + (options.last_frame || !whisper ? 1 : 0)));
  mel.n_len_org = int32_t(1 + (n_samples + pad - n_fft) / kHop);
  // Frames that see only zeros: the floor (whisper.cpp writes log10(1e-10) without a transform).
  mel.data.assign(size_t(n_mel) * size_t(mel.n_len), float(std::log10(options.floor)));

  std::vector<cd> twiddles(static_cast<size_t>(n_fft));
  for (int m = 0; m < n_fft; ++m) twiddles[size_t(m)] = std::polar(1.0, -2.0 * M_PI * m / n_fft);
  std::vector<double> hann(static_cast<size_t>(n_fft), 0.0);
  for (int i = 0; i < options.window && i < n_fft; ++i) hann[size_t(i)] = 0.5 * (1.0 - std::cos(2.0 * M_PI * i / options.window));
  // Frames whose window starts inside the audio (the rest see only zeros).
  const int64_t n_in = whisper ? n_samples + kPad : int64_t(padded.size());
  const int32_t n_frames = int32_t(std::min<int64_t>(n_in / kHop + 1, mel.n_len));

  auto work = [&](int32_t ith, int32_t nth) {
    std::vector<double> frame(static_cast<size_t>(n_fft)), power(static_cast<size_t>(bins));
    std::vector<cd> spec(static_cast<size_t>(n_fft));
    for (int32_t i = ith; i < n_frames; i += nth) {
      const int64_t off = int64_t(i) * kHop;
      for (int j = 0; j < n_fft; ++j) frame[size_t(j)] = off + j < n_in ? hann[size_t(j)] * padded[size_t(off + j)] : 0.0;
      Fft(frame.data(), n_fft, 1, twiddles.data(), n_fft, spec.data());
      for (int j = 0; j < bins; ++j) power[size_t(j)] = options.magnitude ? std::abs(spec[size_t(j)]) : std::norm(spec[size_t(j)]);
      for (int m = 0; m < n_mel; ++m) {
        const float* f = filters.data() + size_t(m) * size_t(bins);
        double s = 0;
        for (int j = 0; j < bins; ++j) s += power[size_t(j)] * f[j];
        s = std::max(s, options.floor);
        mel.data[size_t(m) * mel.n_len + size_t(i)] = float(options.natural_log ? std::log(s) : std::log10(s));
      }
    }
  };
  const int32_t nth = std::max(1, n_threads);
  std::vector<std::thread> pool;
  for (int32_t t = 1; t < nth; ++t) pool.emplace_back(work, t, nth);
  work(0, nth);
  for (auto& t : pool) t.join();

  if (!whisper || mel.data.empty()) return mel;
  float mx = *std::max_element(mel.data.begin(), mel.data.end());
  const float floor = mx - 8.0f;
  for (float& v : mel.data) v = (std::max(v, floor) + 4.0f) / 4.0f;
  return mel;
}

std::vector<float> SlaneyMelFilters(int32_t n_mel) {
  // Slaney's scale: linear below 1 kHz (3 mel per 200 Hz), logarithmic above (27 mel per
  // octave of 6.4x).
  const double lin = 3.0 / 200.0, min_log_hz = 1000.0, min_log_mel = min_log_hz * lin, step = std::log(6.4) / 27.0;
  auto to_mel = [&](double hz) { return hz < min_log_hz ? hz * lin : min_log_mel + std::log(hz / min_log_hz) / step; };
  auto to_hz = [&](double m) { return m < min_log_mel ? m / lin : min_log_hz * std::exp((m - min_log_mel) * step); };
  return Triangles(n_mel, kWhisperFft, true, to_mel, to_hz);
}

std::vector<float> HtkMelFilters(int32_t n_mel, int32_t n_fft) {
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  auto to_hz = [](double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); };
  return Triangles(n_mel, n_fft, false, to_mel, to_hz);
}

}  // namespace zf::speech

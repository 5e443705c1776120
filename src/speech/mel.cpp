#include "speech/mel.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <thread>
#include <vector>

namespace zf::speech {
namespace {

constexpr int kNfft = 400;
constexpr int kHop = 160;
constexpr int kBins = kNfft / 2 + 1;
constexpr int kPad = kNfft / 2;
constexpr int64_t kTail = 16000 * 30;

using cd = std::complex<double>;

// exp(-2 pi i m / 400), m < 400: every twiddle of the transform below.
const cd* Twiddles() {
  static const std::vector<cd> t = [] {
    std::vector<cd> v(kNfft);
    for (int m = 0; m < kNfft; ++m) v[size_t(m)] = std::polar(1.0, -2.0 * M_PI * m / kNfft);
    return v;
  }();
  return t.data();
}

// Mixed-radix FFT of a real frame (400 = 2^4 * 25): even/odd split while the length is even,
// then a direct DFT on the odd remainder. Double precision throughout.
void Fft(const double* in, int n, int stride, cd* out) {
  const cd* w = Twiddles();
  const int step = kNfft / n;  // twiddle m of length n is exp(-2 pi i m step / 400)
  if (n % 2 == 1) {
    for (int k = 0; k < n; ++k) {
      cd s = 0;
      for (int j = 0; j < n; ++j) s += in[j * stride] * w[((k * j) % n) * step];
      out[k] = s;
    }
    return;
  }
  const int h = n / 2;
  Fft(in, h, stride * 2, out);
  Fft(in + stride, h, stride * 2, out + h);
  for (int k = 0; k < h; ++k) {
    const cd e = out[k], o = out[k + h] * w[k * step];
    out[k] = e + o;
    out[k + h] = e - o;
  }
}

}  // namespace

Mel LogMel(const float* pcm, int64_t n_samples, const std::vector<float>& filters, int32_t n_mel, int32_t n_threads,
           const MelOptions& options) {
  if (n_samples < 0) n_samples = 0;
  std::vector<float> padded(size_t(n_samples + kTail + 2 * kPad), 0.0f);
  if (n_samples > 0) std::memcpy(padded.data() + kPad, pcm, size_t(n_samples) * sizeof(float));
  for (int i = 0; i < kPad && i + 1 < n_samples; ++i) padded[size_t(kPad - 1 - i)] = pcm[i + 1];  // reflect

  Mel mel;
  mel.n_mel = n_mel;
  mel.n_len = int32_t((int64_t(padded.size()) - kNfft) / kHop + (options.last_frame ? 1 : 0));
  mel.n_len_org = int32_t(1 + (n_samples + kPad - kNfft) / kHop);
  // Frames that see only zeros: the floor (whisper.cpp writes log10(1e-10) without a transform).
  mel.data.assign(size_t(n_mel) * size_t(mel.n_len), float(std::log10(options.floor)));

  double hann[kNfft];
  for (int i = 0; i < kNfft; ++i) hann[i] = 0.5 * (1.0 - std::cos(2.0 * M_PI * i / kNfft));
  // Frames whose window starts inside the audio (the rest see only zeros).
  const int64_t n_in = n_samples + kPad;
  const int32_t n_frames = int32_t(std::min<int64_t>(n_in / kHop + 1, mel.n_len));

  auto work = [&](int32_t ith, int32_t nth) {
    double frame[kNfft];
    cd spec[kNfft];
    double power[kBins];
    for (int32_t i = ith; i < n_frames; i += nth) {
      const int64_t off = int64_t(i) * kHop;
      for (int j = 0; j < kNfft; ++j) frame[j] = off + j < n_in ? hann[j] * padded[size_t(off + j)] : 0.0;
      Fft(frame, kNfft, 1, spec);
      for (int j = 0; j < kBins; ++j) power[j] = std::norm(spec[j]);
      for (int m = 0; m < n_mel; ++m) {
        const float* f = filters.data() + size_t(m) * kBins;
        double s = 0;
        for (int j = 0; j < kBins; ++j) s += power[j] * f[j];
        mel.data[size_t(m) * mel.n_len + size_t(i)] = float(std::log10(std::max(s, options.floor)));
      }
    }
  };
  const int32_t nth = std::max(1, n_threads);
  std::vector<std::thread> pool;
  for (int32_t t = 1; t < nth; ++t) pool.emplace_back(work, t, nth);
  work(0, nth);
  for (auto& t : pool) t.join();

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
  const double top = to_mel(8000.0);
  std::vector<double> hz(size_t(n_mel) + 2);
  for (size_t i = 0; i < hz.size(); ++i) hz[i] = to_hz(top * double(i) / double(n_mel + 1));
  std::vector<float> f(size_t(n_mel) * kBins, 0.0f);
  for (int32_t m = 0; m < n_mel; ++m) {
    const double l = hz[size_t(m)], c = hz[size_t(m) + 1], r = hz[size_t(m) + 2];
    const double enorm = 2.0 / std::max(1e-30, r - l);
    for (int k = 0; k < kBins; ++k) {
      const double x = k * 16000.0 / kNfft;
      double w = 0.0;
      if (x >= l && x <= c) w = (x - l) / std::max(1e-30, c - l);
      else if (x > c && x <= r) w = (r - x) / std::max(1e-30, r - c);
      f[size_t(m) * kBins + size_t(k)] = float(w * enorm);
    }
  }
  return f;
}

}  // namespace zf::speech

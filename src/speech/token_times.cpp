#include "speech/token_times.h"

#include <algorithm>
#include <cmath>

namespace zf::speech {
namespace {

constexpr int32_t kRate = 16000;

// Higher for text that takes longer to say (whisper.cpp's voice_length heuristic).
float VoiceLength(const std::string& text) {
  float r = 0;
  for (char c : text) {
    if (c == ' ') r += 0.01f;
    else if (c == ',') r += 2.0f;
    else if (c == '.' || c == '!' || c == '?') r += 3.0f;
    else if (c >= '0' && c <= '9') r += 3.0f;
    else r += 1.0f;
  }
  return r;
}

// The reference maps times to samples relative to the segment start but reads the energy of the
// whole recording at that index; kept so that the times agree.
int TimeToSample(int64_t t, int64_t seg_t0, int n) {
  const int s = int(((t - seg_t0) * kRate) / 100);
  return std::max(0, std::min(n - 1, s));
}

int64_t SampleToTime(int i, int64_t seg_t0) { return (100ll * i) / kRate + seg_t0; }

}  // namespace

std::vector<float> SignalEnergy(const float* pcm, int64_t n, int32_t hw) {
  std::vector<float> r(size_t(std::max<int64_t>(0, n)));
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int64_t j = -hw; j <= hw; ++j)
      if (i + j >= 0 && i + j < n) sum += std::fabs(pcm[i + j]);
    r[size_t(i)] = sum / float(2 * hw + 1);
  }
  return r;
}

std::vector<std::string> ReferenceTokenText(const WhisperVocab& v, const std::vector<std::string>& file_tokens) {
  std::vector<std::string> t(file_tokens.begin(), file_tokens.begin() + long(std::min(file_tokens.size(), size_t(v.n_vocab))));
  for (int32_t i = int32_t(t.size()); i < v.n_vocab; ++i) {
    std::string w;
    if (i > v.timestamp_begin) w = "[_TT_" + std::to_string(i - v.timestamp_begin) + "]";
    else if (i == v.eot) w = "[_EOT_]";
    else if (i == v.sot) w = "[_SOT_]";
    else if (i == v.translate) w = "[_TRANSLATE_]";
    else if (i == v.transcribe) w = "[_TRANSCRIBE_]";
    else if (i == v.solm) w = "[_SOLM_]";
    else if (i == v.prev) w = "[_PREV_]";
    else if (i == v.nosp) w = "[_NOSP_]";
    else if (i == v.no_timestamps) w = "[_NOT_]";
    else if (i == v.timestamp_begin) w = "[_BEG_]";
    else if (i > v.sot && i <= v.sot + v.n_languages()) {
      const char* code = WhisperLanguageCode(i - v.sot - 1);
      w = std::string("[_LANG_") + (code ? code : "") + "]";
    } else w = "[_extra_token_" + std::to_string(i) + "]";
    t.push_back(std::move(w));
  }
  return t;
}

void ComputeTokenTimes(const WhisperVocab& v, const std::vector<std::string>& token_text, int64_t t0, int64_t t1,
                       float thold_pt, float thold_ptsum, TokenTimeState& st, std::vector<TimedToken>& tokens) {
  const int n_samples = int(st.energy.size());
  const int n = int(tokens.size());
  if (n_samples == 0 || n == 0) return;
  if (n == 1) {
    tokens[0].t0 = t0;
    tokens[0].t1 = t1;
    return;
  }
  for (int j = 0; j < n; ++j) {
    TimedToken& tok = tokens[size_t(j)];
    if (j == 0) {
      if (tok.id == v.timestamp_begin) {
        tokens[0].t0 = tokens[0].t1 = tokens[1].t0 = t0;
        st.t_beg = st.t_last = t0;
        st.tid_last = v.timestamp_begin;
      } else {
        tokens[0].t0 = st.t_last;
      }
    }
    const int64_t tt = st.t_beg + 2 * int64_t(tok.tid - v.timestamp_begin);
    tok.vlen = VoiceLength(tok.id >= 0 && size_t(tok.id) < token_text.size() ? token_text[size_t(tok.id)] : std::string());
    if (tok.pt > thold_pt && tok.ptsum > thold_ptsum && tok.tid > st.tid_last && tt <= t1) {
      if (j > 0) tokens[size_t(j - 1)].t1 = tt;
      tok.t0 = tt;
      st.tid_last = tok.tid;
    }
  }
  tokens[size_t(n - 2)].t1 = t1;
  tokens[size_t(n - 1)].t0 = tokens[size_t(n - 1)].t1 = t1;
  st.t_last = t1;
  // Runs of tokens without an end: split the run's time by voice length.
  for (int p0 = 0, p1 = 0;;) {
    while (p1 < n && tokens[size_t(p1)].t1 < 0) ++p1;
    if (p1 >= n) --p1;
    if (p1 > p0) {
      double psum = 0;
      for (int j = p0; j <= p1; ++j) psum += tokens[size_t(j)].vlen;
      const double dt = double(tokens[size_t(p1)].t1 - tokens[size_t(p0)].t0);
      for (int j = p0 + 1; j <= p1; ++j) {
        const double ct = double(tokens[size_t(j - 1)].t0) + dt * tokens[size_t(j - 1)].vlen / psum;
        tokens[size_t(j - 1)].t1 = int64_t(ct);
        tokens[size_t(j)].t0 = int64_t(ct);
      }
    }
    p0 = ++p1;
    if (p1 >= n) break;
  }
  for (int j = 0; j < n - 1; ++j) {
    if (tokens[size_t(j)].t1 < 0) tokens[size_t(j + 1)].t0 = tokens[size_t(j)].t1;
    if (j > 0 && tokens[size_t(j - 1)].t1 > tokens[size_t(j)].t0) {
      tokens[size_t(j)].t0 = tokens[size_t(j - 1)].t1;
      tokens[size_t(j)].t1 = std::max(tokens[size_t(j)].t0, tokens[size_t(j)].t1);
    }
  }
  // Move each text token's edges to where the energy crosses half its neighbourhood's mean.
  const int hw = kRate / 8;
  const std::vector<float>& e = st.energy;
  for (int j = 0; j < n; ++j) {
    TimedToken& tok = tokens[size_t(j)];
    if (tok.id >= v.eot) continue;
    int s0 = TimeToSample(tok.t0, t0, n_samples);
    int s1 = TimeToSample(tok.t1, t0, n_samples);
    const int ss0 = std::max(s0 - hw, 0), ss1 = std::min(s1 + hw, n_samples);
    float sum = 0;
    for (int k = ss0; k < ss1; ++k) sum += e[size_t(k)];
    const float thold = 0.5f * sum / float(ss1 - ss0);
    {
      int k = s0;
      if (e[size_t(k)] > thold && j > 0) {
        while (k > 0 && e[size_t(k)] > thold) --k;
        tok.t0 = SampleToTime(k, t0);
        if (tok.t0 < tokens[size_t(j - 1)].t1) tok.t0 = tokens[size_t(j - 1)].t1;
        else s0 = k;
      } else {
        while (e[size_t(k)] < thold && k < s1) ++k;
        s0 = k;
        tok.t0 = SampleToTime(k, t0);
      }
    }
    {
      int k = s1;
      if (e[size_t(k)] > thold) {
        while (k < n_samples - 1 && e[size_t(k)] > thold) ++k;
        tok.t1 = SampleToTime(k, t0);
        if (j < n - 1 && tok.t1 > tokens[size_t(j + 1)].t0) tok.t1 = tokens[size_t(j + 1)].t0;
      } else {
        while (e[size_t(k)] < thold && k > s0) --k;
        tok.t1 = SampleToTime(k, t0);
      }
    }
  }
}

std::vector<Word> JoinWords(const WhisperVocab& v, const std::vector<SegmentToken>& tokens) {
  std::vector<Word> words;
  for (const SegmentToken& t : tokens) {
    if (t.id >= v.eot) continue;
    const std::string& piece = v.Piece(t.id);
    if (piece.empty()) continue;
    if (words.empty() || piece[0] == ' ') {
      words.push_back({piece, t.t0, t.t1, t.p});
    } else {
      Word& w = words.back();
      w.text += piece;
      w.t1 = std::max(w.t1, t.t1);
      w.p = std::min(w.p, t.p);
    }
  }
  return words;
}

}  // namespace zf::speech

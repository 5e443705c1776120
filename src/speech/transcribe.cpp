#include "speech/transcribe.h"

#include <algorithm>
#include <cmath>

#include "speech/mel.h"

namespace zf::speech {
namespace {

constexpr int32_t kDeltaMin = 10;       // windows shorter than 100 ms are not decoded

struct Sampled {
  int32_t id = 0, tid = 0;
  float p = 0, plog = 0;
};

// The logit filters whisper.cpp applies before greedy sampling (its whisper_process_logits);
// fills probs/logprobs.
void ProcessLogits(const WhisperVocab& v, const TranscribeParams& prm, const std::vector<Sampled>& cur, int32_t n_audio_ctx,
                   bool has_ts, int32_t seek_delta, std::vector<float>& logits, std::vector<float>& logprobs,
                   std::vector<float>& probs) {
  const int32_t n = v.n_vocab;
  const float ninf = -INFINITY;
  const bool initial = cur.empty();
  if (prm.suppress_blank && initial) {
    logits[size_t(v.eot)] = ninf;
    if (v.space >= 0) logits[size_t(v.space)] = ninf;
  }
  logits[size_t(v.no_timestamps)] = ninf;
  if (!prm.timestamps)
    for (int32_t i = v.timestamp_begin; i < n; ++i) logits[size_t(i)] = ninf;
  for (int32_t id : {v.sot, v.nosp, v.solm, v.translate, v.transcribe, v.prev}) logits[size_t(id)] = ninf;
  for (int32_t l = 0; l < v.n_languages(); ++l) logits[size_t(v.lang(l))] = ninf;
  // Timestamps come in pairs: after one, another or text; after a pair, text.
  const bool last_ts = !cur.empty() && cur.back().id >= v.timestamp_begin;
  const bool penult_ts = cur.size() < 2 || cur[cur.size() - 2].id >= v.timestamp_begin;
  if (last_ts) {
    if (penult_ts)
      for (int32_t i = v.timestamp_begin; i < n; ++i) logits[size_t(i)] = ninf;
    else
      for (int32_t i = 0; i < v.eot; ++i) logits[size_t(i)] = ninf;
  }
  if (initial && prm.max_initial_ts > 0) {
    const float precision = 30.0f / float(n_audio_ctx);
    const int32_t tid0 = int32_t(std::round(prm.max_initial_ts / precision));
    for (int32_t i = v.timestamp_begin + tid0 + 1; i < n; ++i) logits[size_t(i)] = ninf;
  }
  if (has_ts) {  // timestamps never go back
    const int32_t tid0 = seek_delta / 2;
    for (int32_t i = v.timestamp_begin; i < v.timestamp_begin + tid0 && i < n; ++i) logits[size_t(i)] = ninf;
  }
  auto log_softmax = [&]() {
    const float mx = *std::max_element(logits.begin(), logits.end());
    float lse = 0;
    for (int32_t i = 0; i < n; ++i)
      if (logits[size_t(i)] > ninf) lse += std::exp(logits[size_t(i)] - mx);
    lse = std::log(lse) + mx;
    for (int32_t i = 0; i < n; ++i) logprobs[size_t(i)] = logits[size_t(i)] > ninf ? logits[size_t(i)] - lse : ninf;
  };
  log_softmax();
  // When the timestamps together are likelier than any text token, only a timestamp may come.
  {
    float ts_lp = ninf;
    const float lp_max = *std::max_element(logprobs.begin() + v.timestamp_begin, logprobs.end());
    float lse = 0;
    for (int32_t i = v.timestamp_begin; i < n; ++i)
      if (logprobs[size_t(i)] > ninf) lse += std::exp(logprobs[size_t(i)] - lp_max);
    if (lse > 0) ts_lp = std::log(lse) + lp_max;
    const float text_max = *std::max_element(logprobs.begin(), logprobs.begin() + v.timestamp_begin);
    if (ts_lp > text_max)
      for (int32_t i = 0; i < v.timestamp_begin; ++i) logits[size_t(i)] = logprobs[size_t(i)] = ninf;
  }
  for (int32_t i = 0; i < n; ++i) probs[size_t(i)] = logits[size_t(i)] == ninf ? 0.0f : std::exp(logprobs[size_t(i)]);
}

Sampled Greedy(const WhisperVocab& v, const std::vector<float>& probs, const std::vector<float>& logprobs) {
  Sampled r;
  double max_ts = 0;
  for (int32_t i = v.timestamp_begin; i < v.n_vocab; ++i)
    if (max_ts < probs[size_t(i)]) {
      max_ts = probs[size_t(i)];
      r.tid = i;
    }
  for (int32_t i = 0; i < v.n_vocab; ++i)
    if (r.p < probs[size_t(i)]) {
      r.id = i;
      r.p = probs[size_t(i)];
      r.plog = logprobs[size_t(i)];
    }
  if (r.id >= v.timestamp_begin) r.tid = r.id;
  return r;
}

}  // namespace

Status Transcribe(WhisperRunner& runner, const WhisperModel& model, const float* pcm, int64_t n_samples,
                  const TranscribeParams& prm, int32_t n_threads, TranscribeResult* out, const SegmentFn& on_segment) {
  *out = TranscribeResult();
  const WhisperHparams& hp = model.hparams();
  const WhisperVocab v = WhisperVocab::Make(hp.n_vocab, model.vocab());
  if (n_samples < 0 || (n_samples > 0 && !pcm)) return InvalidArgument("pcm: null samples or negative count");
  int32_t lang_id = 0;
  if (v.multilingual()) {
    if (prm.language != "auto") {
      lang_id = WhisperLanguageId(prm.language);
      if (lang_id < 0 || lang_id >= v.n_languages()) return InvalidArgument("language '" + prm.language + "' is not one of Whisper's");
    }
  } else {
    if (prm.language != "en" && prm.language != "auto" && !prm.language.empty())
      return InvalidArgument("language '" + prm.language + "': this model is English-only (.en)");
    if (prm.translate) return InvalidArgument("translate: this model is English-only (.en) and cannot translate");
  }
  const Mel mel = LogMel(pcm, n_samples, model.mel_filters(), hp.n_mels, n_threads);
  const int32_t seek_end = mel.n_len_org;
  if (seek_end < kDeltaMin) return Status::Ok();  // under 100 ms: nothing to decode (as whisper.cpp)

  std::vector<float> logits(size_t(hp.n_vocab)), logprobs(logits.size()), probs(logits.size());
  if (v.multilingual() && prm.language == "auto") {
    // The language token the decoder likes best after <|startoftranscript|> on the first window.
    runner.Encode(mel.data.data(), mel.n_len, mel.n_len, 0);
    runner.ResetDecoder();
    ZF_RETURN_IF_ERROR(runner.Decode(v.sot, logits.data()));
    lang_id = 0;
    for (int32_t l = 1; l < v.n_languages(); ++l)
      if (logits[size_t(v.lang(l))] > logits[size_t(v.lang(lang_id))]) lang_id = l;
  }
  out->language = v.multilingual() ? WhisperLanguageCode(lang_id) : "en";

  std::vector<int32_t> prompt_init = {v.sot};
  if (v.multilingual()) {
    prompt_init.push_back(v.lang(lang_id));
    prompt_init.push_back(prm.translate ? v.translate : v.transcribe);
  }
  if (!prm.timestamps) prompt_init.push_back(v.no_timestamps);
  const int32_t max_prompt_ctx = std::min(prm.n_max_text_ctx, hp.n_text_ctx / 2);
  std::vector<int32_t> past;  // the previous windows' tokens (whisper.cpp's prompt_past1)
  int32_t seek = 0;
  while (seek + kDeltaMin < seek_end) {
    runner.Encode(mel.data.data(), mel.n_len, mel.n_len, seek);
    ++out->n_windows;
    if (seek > 0 && seek + 500 >= seek_end) past.clear();
    std::vector<int32_t> prompt;
    if (prm.n_max_text_ctx > 0 && max_prompt_ctx > 0 && !past.empty()) {
      prompt.push_back(v.prev);
      const size_t take = std::min<size_t>(size_t(max_prompt_ctx - 1), past.size());
      prompt.insert(prompt.end(), past.end() - long(take), past.end());
    }
    prompt.insert(prompt.end(), prompt_init.begin(), prompt_init.end());
    runner.ResetDecoder();
    for (size_t i = 0; i < prompt.size(); ++i)
      ZF_RETURN_IF_ERROR(runner.Decode(prompt[i], i + 1 == prompt.size() ? logits.data() : nullptr));
    float no_speech_prob;
    {
      const float mx = *std::max_element(logits.begin(), logits.end());
      float s = 0;
      for (float l : logits) s += std::exp(l - mx);
      no_speech_prob = std::exp(logits[size_t(v.nosp)] - mx) / s;
    }
    std::vector<Sampled> cur;
    int32_t seek_delta = 100 * 30, result_len = 0;
    bool has_ts = false, failed = false;
    ProcessLogits(v, prm, cur, hp.n_audio_ctx, has_ts, seek_delta, logits, logprobs, probs);
    const int32_t n_max = hp.n_text_ctx / 2 - 4;
    for (int32_t i = 0; i < n_max; ++i) {
      cur.push_back(Greedy(v, probs, logprobs));
      const Sampled& tok = cur.back();
      if (tok.id > v.timestamp_begin) {
        const int32_t delta_new = 2 * (tok.id - v.timestamp_begin);
        if (has_ts && seek_delta > delta_new && result_len < i) { failed = true; break; }
        seek_delta = delta_new;
        result_len = i + 1;
        has_ts = true;
      }
      if (tok.id == v.eot || (has_ts && seek + seek_delta + kDeltaMin >= seek_end)) {
        if (result_len == 0 && prm.timestamps) {
          if (seek + seek_delta + kDeltaMin >= seek_end) result_len = i + 1;
          else { failed = true; break; }
        }
        if (!prm.timestamps) {
          result_len = i + 1;
          seek_delta = 100 * 30;
        }
        break;
      }
      if (i == n_max - 1 && (result_len == 0 || seek_delta < 100 * 30 / 2)) { failed = true; break; }
      ZF_RETURN_IF_ERROR(runner.Decode(tok.id, logits.data()));
      ProcessLogits(v, prm, cur, hp.n_audio_ctx, has_ts, seek_delta, logits, logprobs, probs);
    }
    double avg_logprob = -INFINITY;
    if (!failed) {
      cur.resize(size_t(result_len));
      if (result_len > 0) {
        double s = 0;
        for (const Sampled& t : cur) s += t.plog;
        avg_logprob = s / result_len;
      }
    }
    const bool no_speech = no_speech_prob > prm.no_speech_thold && avg_logprob < prm.logprob_thold;
    std::vector<int32_t> next_past;
    if (!prompt.empty() && prompt.front() == v.prev)
      next_past.assign(prompt.begin() + 1, prompt.end() - long(prompt_init.size()));
    if (!no_speech)
      for (int32_t i = 0; i < result_len && size_t(i) < cur.size(); ++i) next_past.push_back(cur[size_t(i)].id);
    past = std::move(next_past);

    auto emit = [&](Segment&& s) -> bool {
      out->segments.push_back(std::move(s));
      return !on_segment || on_segment(out->segments.back());
    };
    bool stop = false;
    if (!cur.empty() && !no_speech) {
      size_t i0 = 0;
      int64_t t0 = seek + 2 * int64_t(cur.front().tid - v.timestamp_begin);
      std::string text;
      for (size_t i = 0; i < cur.size() && !stop; ++i) {
        if (cur[i].id < v.eot) text += v.Piece(cur[i].id);
        if (cur[i].id > v.timestamp_begin && prm.timestamps) {
          const int64_t t1 = seek + 2 * int64_t(cur[i].tid - v.timestamp_begin);
          if (!text.empty()) {
            Segment s{t0, t1, text, {}, no_speech_prob};
            for (size_t j = i0; j <= i; ++j) s.tokens.push_back({cur[j].id, cur[j].p, cur[j].plog});
            stop = !emit(std::move(s));
          }
          text.clear();
          t0 = t1;
          while (i + 1 < cur.size() && cur[i + 1].id > v.timestamp_begin) {
            ++i;
            t0 = seek + 2 * int64_t(cur[i].tid - v.timestamp_begin);
          }
          i0 = i + 1;
        }
      }
      if (!text.empty() && !stop) {
        Segment s{t0, seek + seek_delta, text, {}, no_speech_prob};
        for (size_t j = i0; j < cur.size(); ++j) s.tokens.push_back({cur[j].id, cur[j].p, cur[j].plog});
        stop = !emit(std::move(s));
      }
    }
    if (stop) return Status(Code::kCancelled, "transcription stopped by the segment callback");
    // A window ending on a lone timestamp moves on by the whole window.
    if (cur.size() > 1 && cur[cur.size() - 2].id < v.timestamp_begin && cur.back().id > v.timestamp_begin)
      seek_delta = std::min(seek_end - seek, 100 * 30);
    seek += seek_delta;
  }
  return Status::Ok();
}

}  // namespace zf::speech

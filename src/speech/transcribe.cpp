#include "speech/transcribe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "speech/mel.h"
#include "speech/token_times.h"
#include "speech/whisper_tokenize.h"

namespace zf::speech {
namespace {

constexpr int32_t kDeltaMin = 10;        // windows shorter than 100 ms are not decoded
constexpr int32_t kChunk = 100 * 30;     // a window, in 10 ms frames
constexpr float kPromptTempCutoff = 0.5f;  // at and above it the previous text is not offered

struct Sampled {
  int32_t id = 0, tid = 0;
  float p = 0, plog = 0, pt = 0, ptsum = 0;
};

struct Sequence {
  std::vector<Sampled> tokens;
  int32_t result_len = 0;
  double sum_logprobs_all = 0, sum_logprobs = -INFINITY, avg_logprobs = -INFINITY, entropy = 0, score = -INFINITY;
};

// One hypothesis being decoded: its tokens, the window state and its own self-attention cache.
struct Decoder {
  Sequence seq;
  int32_t seek_delta = kChunk;
  bool failed = false, completed = false, has_ts = false;
  std::vector<float> logits, logprobs, probs;
  std::mt19937 rng;
  DecoderCache cache;
};

// The logit filters whisper.cpp applies before sampling (its whisper_process_logits); logits in
// are the decoder's raw ones, divided by the temperature when it is above 0; fills probs/logprobs.
void ProcessLogits(const WhisperVocab& v, const TranscribeParams& prm, const std::vector<Sampled>& cur, int32_t n_audio_ctx,
                   bool has_ts, int32_t seek_delta, float temperature, std::vector<float>& logits,
                   std::vector<float>& logprobs, std::vector<float>& probs) {
  const int32_t n = v.n_vocab;
  const float ninf = -INFINITY;
  const bool initial = cur.empty();
  if (temperature > 0)
    for (float& l : logits) l /= temperature;
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
  {
    const float mx = *std::max_element(logits.begin(), logits.end());
    float lse = 0;
    for (int32_t i = 0; i < n; ++i)
      if (logits[size_t(i)] > ninf) lse += std::exp(logits[size_t(i)] - mx);
    lse = std::log(lse) + mx;
    for (int32_t i = 0; i < n; ++i) logprobs[size_t(i)] = logits[size_t(i)] > ninf ? logits[size_t(i)] - lse : ninf;
  }
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

// The likeliest timestamp and its share of the timestamp mass (whisper.cpp keeps it per token
// for the token-level timestamps).
void TimestampOf(const WhisperVocab& v, const std::vector<float>& probs, int32_t tid_none, Sampled* r) {
  double sum = 0, mx = 0;
  r->tid = tid_none;
  for (int32_t i = v.timestamp_begin; i < v.n_vocab; ++i) {
    sum += probs[size_t(i)];
    if (mx < probs[size_t(i)]) {
      mx = probs[size_t(i)];
      r->tid = i;
    }
  }
  r->pt = float(mx / (sum + 1e-10));
  r->ptsum = float(sum);
}

// r takes token `id` with its probabilities; a timestamp token is its own timestamp.
void Choose(const WhisperVocab& v, const Decoder& d, int32_t id, Sampled* r) {
  r->id = id;
  r->p = d.probs[size_t(id)];
  r->plog = d.logprobs[size_t(id)];
  if (id >= v.timestamp_begin) {
    r->tid = id;
    r->pt = r->p;
  }
}

// best: the likeliest token (the first of equals); else one drawn with the decoder's generator.
Sampled SampleToken(const WhisperVocab& v, Decoder& d, bool best) {
  Sampled r;
  TimestampOf(v, d.probs, 0, &r);
  if (best) {
    int32_t id = 0;
    float p = 0;
    for (int32_t i = 0; i < v.n_vocab; ++i)
      if (p < d.probs[size_t(i)]) {
        id = i;
        p = d.probs[size_t(i)];
      }
    Choose(v, d, id, &r);
  } else {
    std::discrete_distribution<> dist(d.probs.begin(), d.probs.end());
    Choose(v, d, dist(d.rng), &r);
  }
  return r;
}

// Beam search's k candidates: whisper.cpp 1.8.5 draws them from the distribution (with
// replacement), not the k likeliest; done the same way so that beams agree with it.
std::vector<Sampled> SampleTopK(const WhisperVocab& v, Decoder& d, int32_t k) {
  Sampled ts;
  TimestampOf(v, d.probs, v.timestamp_begin, &ts);
  std::discrete_distribution<> dist(d.probs.begin(), d.probs.end());
  std::vector<Sampled> out;
  for (int32_t i = 0; i < k; ++i) {
    Sampled r = ts;
    Choose(v, d, dist(d.rng), &r);
    out.push_back(r);
  }
  return out;
}

// Sum / average log-probability, the length-penalised score and the entropy of the last 32
// tokens (low entropy: a repetition loop).
void Score(const TranscribeParams& prm, Sequence& s) {
  if (s.result_len == 0) return;
  double sum = 0;
  for (int32_t i = 0; i < s.result_len; ++i) sum += s.tokens[size_t(i)].plog;
  s.sum_logprobs = sum;
  s.avg_logprobs = sum / s.result_len;
  double penalty = s.result_len;
  if (prm.length_penalty > 0) penalty = std::pow((5.0 + penalty) / 6.0, double(prm.length_penalty));
  s.score = sum / penalty;
  std::map<int32_t, int> counts;
  int cnt = 0;
  for (int32_t i = std::max(0, s.result_len - 32); i < s.result_len; ++i, ++cnt) counts[s.tokens[size_t(i)].id]++;
  double e = 0;
  for (const auto& kv : counts) {
    const double p = kv.second / double(cnt);
    e -= p * std::log(p);
  }
  s.entropy = e;
}

bool SameTokens(const Sequence& a, const Sequence& b) {
  if (a.tokens.size() != b.tokens.size()) return false;
  for (size_t i = a.tokens.size(); i-- > 0;)
    if (a.tokens[i].id != b.tokens[i].id) return false;
  return true;
}

float NoSpeechProb(const WhisperVocab& v, const std::vector<float>& logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  float s = 0;
  for (float l : logits) s += std::exp(l - mx);
  return std::exp(logits[size_t(v.nosp)] - mx) / s;
}

}  // namespace

Status Transcribe(WhisperRunner& runner, const WhisperModel& model, const float* pcm, int64_t n_samples,
                  const TranscribeParams& prm, int32_t n_threads, TranscribeResult* out, const SegmentFn& on_segment,
                  DecodeBatcher* shared) {
  *out = TranscribeResult();
  const WhisperHparams& hp = model.hparams();
  const WhisperVocab v = WhisperVocab::Make(hp.n_vocab, model.vocab());
  if (n_samples < 0 || (n_samples > 0 && !pcm)) return InvalidArgument("pcm: null samples or negative count");
  if (prm.beam_size > kMaxDecoders) return InvalidArgument("beam_size " + std::to_string(prm.beam_size) + " is above " + std::to_string(kMaxDecoders));
  if (prm.best_of > kMaxDecoders) return InvalidArgument("best_of " + std::to_string(prm.best_of) + " is above " + std::to_string(kMaxDecoders));
  if (!(prm.temperature >= 0 && prm.temperature <= 1)) return InvalidArgument("temperature must be within [0, 1]");
  if (!(prm.temperature_inc >= 0 && prm.temperature_inc <= 1)) return InvalidArgument("temperature_inc must be within [0, 1]");
  for (float t : {prm.entropy_thold, prm.logprob_thold, prm.no_speech_thold, prm.length_penalty, prm.thold_pt, prm.thold_ptsum})
    if (!std::isfinite(t)) return InvalidArgument("thresholds and length_penalty must be finite numbers");
  int32_t lang_id = 0;
  if (v.multilingual()) {
    if (prm.language != "auto" && !prm.language.empty()) {
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

  const size_t nv = size_t(hp.n_vocab);
  std::vector<float> logits(nv);
  if (v.multilingual() && (prm.language == "auto" || prm.language.empty())) {
    // The language token the decoder likes best after <|startoftranscript|> on the first window.
    runner.Encode(mel.data.data(), mel.n_len, mel.n_len, 0);
    runner.ResetDecoder();
    ZF_RETURN_IF_ERROR(runner.Decode(v.sot, logits.data()));
    lang_id = 0;
    for (int32_t l = 1; l < v.n_languages(); ++l)
      if (logits[size_t(v.lang(l))] > logits[size_t(v.lang(lang_id))]) lang_id = l;
    double sum = 0;
    for (int32_t l = 0; l < v.n_languages(); ++l) sum += std::exp(double(logits[size_t(v.lang(l))] - logits[size_t(v.lang(lang_id))]));
    out->language_prob = float(1.0 / sum);
  }
  out->language = v.multilingual() ? WhisperLanguageCode(lang_id) : "en";

  std::vector<float> temperatures;
  if (prm.temperature_inc > 0)
    for (float t = prm.temperature; t < 1.0f + 1e-6f; t += prm.temperature_inc) temperatures.push_back(t);
  else
    temperatures.push_back(prm.temperature);
  const bool beam = prm.beam_size > 1;
  const int32_t n_decoders = std::max({1, prm.best_of, beam ? prm.beam_size : 1});
  std::vector<Decoder> dec(static_cast<size_t>(n_decoders));
  for (int32_t j = 0; j < n_decoders; ++j) {
    dec[size_t(j)].rng.seed(prm.seed + uint32_t(j));
    dec[size_t(j)].logits.resize(nv);
    dec[size_t(j)].logprobs.resize(nv);
    dec[size_t(j)].probs.resize(nv);
  }

  const int32_t max_prompt_ctx = std::min(prm.n_max_text_ctx, hp.n_text_ctx / 2);
  std::vector<int32_t> past0, past1;  // the fixed initial prompt (carried) and the previous text
  if (!prm.initial_prompt.empty()) {
    const std::vector<int32_t> toks = WhisperTokenize(model.vocab(), prm.initial_prompt);
    if (prm.carry_initial_prompt) {
      const size_t keep = std::min(toks.size(), size_t(std::max(1, max_prompt_ctx - 1)));
      past0.assign(toks.end() - long(keep), toks.end());
    } else {
      past1 = toks;
    }
  }
  std::vector<int32_t> prompt_init = {v.sot};
  if (v.multilingual()) {
    prompt_init.push_back(v.lang(lang_id));
    prompt_init.push_back(prm.translate ? v.translate : v.transcribe);
  }
  if (!prm.timestamps) prompt_init.push_back(v.no_timestamps);

  TokenTimeState tts;
  std::vector<std::string> token_text;
  if (prm.token_timestamps) {
    tts.energy = SignalEnergy(pcm, n_samples, 32);
    token_text = ReferenceTokenText(v, model.vocab());
  }

  struct Candidate {
    int32_t decoder = 0, seek_delta = 0;
    bool has_ts = false;
    Sequence seq;
  };
  std::vector<Candidate> cands;
  std::vector<DecoderCache> spare(beam ? size_t(n_decoders) : 0);  // scratch for moving beams' caches
  std::vector<WhisperRunner::Row> rows;
  auto decode = [&]() {
    return shared ? shared->Decode(runner, rows.data(), int32_t(rows.size())) : runner.DecodeBatch(rows.data(), int32_t(rows.size()));
  };
  const int32_t n_max = hp.n_text_ctx / 2 - 4;
  int32_t seek = 0;
  while (seek + kDeltaMin < seek_end) {
    runner.Encode(mel.data.data(), mel.n_len, mel.n_len, seek);
    ++out->n_windows;
    if (seek > 0 && seek + 500 >= seek_end) {
      past0.clear();
      past1.clear();
    }
    std::vector<int32_t> prompt;
    float no_speech_prob = 0, t_used = 0;
    int32_t best = 0;
    for (size_t it = 0; it < temperatures.size(); ++it) {
      const float t_cur = temperatures[it];
      const int32_t n_cur = std::max(1, t_cur > 0 ? prm.best_of : beam ? prm.beam_size : 1);
      for (int32_t j = 0; j < n_cur; ++j) {
        Decoder& d = dec[size_t(j)];
        d.seq = Sequence();
        d.seek_delta = kChunk;
        d.failed = d.completed = d.has_ts = false;
      }
      prompt.clear();
      if (prm.n_max_text_ctx > 0 && t_cur < kPromptTempCutoff && max_prompt_ctx > 0 && (!past0.empty() || !past1.empty())) {
        prompt.push_back(v.prev);
        prompt.insert(prompt.end(), past0.begin(), past0.end());
        const size_t take = size_t(std::max<int64_t>(0, std::min<int64_t>(max_prompt_ctx - int64_t(past0.size()) - 1, int64_t(past1.size()))));
        prompt.insert(prompt.end(), past1.end() - long(take), past1.end());
      }
      prompt.insert(prompt.end(), prompt_init.begin(), prompt_init.end());
      // The prompt as one decoder pass (its rows attend causally), logits of its last token only.
      rows.clear();
      dec[0].cache.n_past = 0;
      for (size_t i = 0; i < prompt.size(); ++i)
        rows.push_back({prompt[i], &dec[0].cache, i + 1 == prompt.size() ? logits.data() : nullptr});
      ZF_RETURN_IF_ERROR(decode());
      no_speech_prob = NoSpeechProb(v, logits);
      dec[0].logits = logits;
      ProcessLogits(v, prm, {}, hp.n_audio_ctx, false, kChunk, t_cur, dec[0].logits, dec[0].logprobs, dec[0].probs);
      for (int32_t j = 1; j < n_cur; ++j) {
        Decoder& d = dec[size_t(j)];
        runner.CopyCache(dec[0].cache, &d.cache);
        d.logits = dec[0].logits;
        d.logprobs = dec[0].logprobs;
        d.probs = dec[0].probs;
      }
      for (int32_t i = 0; i < n_max; ++i) {
        if (beam) {  // whisper.cpp searches beams at every temperature (best_of of them above 0)
          // Every live beam proposes beam_size continuations; the best distinct ones replace them.
          cands.clear();
          for (int32_t j = 0; j < n_cur; ++j) {
            Decoder& d = dec[size_t(j)];
            if (d.completed || d.failed) continue;
            for (const Sampled& tok : SampleTopK(v, d, prm.beam_size)) {
              cands.push_back({j, d.seek_delta, d.has_ts, d.seq});
              cands.back().seq.tokens.push_back(tok);
              cands.back().seq.sum_logprobs_all += tok.plog;
            }
          }
          std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
            if (a.seq.sum_logprobs_all != b.seq.sum_logprobs_all) return a.seq.sum_logprobs_all > b.seq.sum_logprobs_all;
            return a.decoder < b.decoder;
          });
          std::vector<int32_t> src(size_t(n_cur), -1);
          size_t c = 0;
          for (int32_t j = 0; j < n_cur; ++j) {
            Decoder& d = dec[size_t(j)];
            if (d.completed || d.failed) continue;
            if (c >= cands.size()) c = 0;
            const Candidate& cur = cands[c++];
            while (c < cands.size() && i > 0 && SameTokens(cands[c].seq, cur.seq)) ++c;
            d.seek_delta = cur.seek_delta;
            d.has_ts = cur.has_ts;
            d.seq = cur.seq;
            src[size_t(j)] = cur.decoder;
          }
          // Caches follow their sequences (a beam that kept its own needs no copy).
          for (int32_t j = 0; j < n_cur; ++j)
            if (src[size_t(j)] >= 0 && src[size_t(j)] != j) runner.CopyCache(dec[size_t(src[size_t(j)])].cache, &spare[size_t(j)]);
          for (int32_t j = 0; j < n_cur; ++j)
            if (src[size_t(j)] >= 0 && src[size_t(j)] != j) std::swap(dec[size_t(j)].cache, spare[size_t(j)]);
        } else {
          for (int32_t j = 0; j < n_cur; ++j) {
            Decoder& d = dec[size_t(j)];
            if (d.completed || d.failed) continue;
            d.seq.tokens.push_back(SampleToken(v, d, t_cur < 1e-6f));
            d.seq.sum_logprobs_all += d.seq.tokens.back().plog;
          }
        }
        // Completion, failure and the window's end from each sequence's newest token.
        for (int32_t j = 0; j < n_cur; ++j) {
          Decoder& d = dec[size_t(j)];
          if (d.completed || d.failed) continue;
          const Sampled& tok = d.seq.tokens.back();
          if (tok.id > v.timestamp_begin) {
            const int32_t delta_new = 2 * (tok.id - v.timestamp_begin);
            if (d.has_ts && d.seek_delta > delta_new && d.seq.result_len < i) {
              d.failed = true;
              continue;
            }
            d.seek_delta = delta_new;
            d.seq.result_len = i + 1;
            d.has_ts = true;
          }
          if (tok.id == v.eot || (d.has_ts && seek + d.seek_delta + kDeltaMin >= seek_end)) {
            if (d.seq.result_len == 0 && prm.timestamps) {
              if (seek + d.seek_delta + kDeltaMin >= seek_end) {
                d.seq.result_len = i + 1;
              } else {
                d.failed = true;
                continue;
              }
            }
            if (!prm.timestamps) {
              d.seq.result_len = i + 1;
              d.seek_delta = kChunk;
            }
            d.completed = true;
            continue;
          }
          if (i == n_max - 1 && (d.seq.result_len == 0 || d.seek_delta < kChunk / 2)) d.failed = true;
        }
        bool all_done = true;
        for (int32_t j = 0; j < n_cur; ++j) all_done = all_done && (dec[size_t(j)].completed || dec[size_t(j)].failed);
        if (all_done) break;
        // Every live sequence's next token through one batched decoder pass.
        rows.clear();
        for (int32_t j = 0; j < n_cur; ++j) {
          Decoder& d = dec[size_t(j)];
          if (!d.completed && !d.failed) rows.push_back({d.seq.tokens.back().id, &d.cache, d.logits.data()});
        }
        ZF_RETURN_IF_ERROR(decode());
        for (int32_t j = 0; j < n_cur; ++j) {
          Decoder& d = dec[size_t(j)];
          if (d.completed || d.failed) continue;
          ProcessLogits(v, prm, d.seq.tokens, hp.n_audio_ctx, d.has_ts, d.seek_delta, t_cur, d.logits, d.logprobs, d.probs);
        }
      }
      // The best sequence by score; a repetitive one (low entropy) fails.
      double best_score = -INFINITY;
      best = 0;
      for (int32_t j = 0; j < n_cur; ++j) {
        Decoder& d = dec[size_t(j)];
        if (d.failed) continue;
        d.seq.tokens.resize(size_t(d.seq.result_len));
        Score(prm, d.seq);
        if (d.seq.result_len > 32 && d.seq.entropy < prm.entropy_thold) {
          d.failed = true;
          continue;
        }
        if (best_score < d.seq.score) {
          best_score = d.seq.score;
          best = j;
        }
      }
      t_used = t_cur;
      const Decoder& b = dec[size_t(best)];
      if (it + 1 == temperatures.size() ||
          !(b.failed || (b.seq.avg_logprobs < prm.logprob_thold && no_speech_prob < prm.no_speech_thold)))
        break;
    }

    const Decoder& bd = dec[size_t(best)];
    const std::vector<Sampled>& cur = bd.seq.tokens;
    const int32_t result_len = bd.seq.result_len;
    int32_t seek_delta = bd.seek_delta;
    const bool no_speech = no_speech_prob > prm.no_speech_thold && bd.seq.avg_logprobs < prm.logprob_thold;
    std::vector<int32_t> next_past;
    if (!prm.carry_initial_prompt && !prompt.empty() && prompt.front() == v.prev)
      next_past.assign(prompt.begin() + 1, prompt.end() - long(prompt_init.size()));
    if (!no_speech)
      for (int32_t i = 0; i < result_len && size_t(i) < cur.size(); ++i) next_past.push_back(cur[size_t(i)].id);
    past1 = std::move(next_past);

    auto emit = [&](int64_t t0, int64_t t1, std::string&& text, size_t j0, size_t j1) -> bool {
      Segment s;
      s.t0 = t0;
      s.t1 = t1;
      s.text = std::move(text);
      s.no_speech_prob = no_speech_prob;
      s.temperature = t_used;
      s.avg_logprob = float(bd.seq.avg_logprobs);
      std::vector<TimedToken> timed;
      for (size_t j = j0; j < j1; ++j) {
        s.tokens.push_back({cur[j].id, cur[j].p, cur[j].plog});
        timed.push_back({cur[j].id, cur[j].tid, cur[j].pt, cur[j].ptsum});
      }
      if (prm.token_timestamps) {
        ComputeTokenTimes(v, token_text, t0, t1, prm.thold_pt, prm.thold_ptsum, tts, timed);
        for (size_t j = 0; j < timed.size(); ++j) {
          s.tokens[j].t0 = timed[j].t0;
          s.tokens[j].t1 = timed[j].t1;
        }
        s.words = JoinWords(v, s.tokens);
      }
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
          if (!text.empty()) stop = !emit(t0, t1, std::move(text), i0, i + 1);
          text.clear();
          t0 = t1;
          while (i + 1 < cur.size() && cur[i + 1].id > v.timestamp_begin) {
            ++i;
            t0 = seek + 2 * int64_t(cur[i].tid - v.timestamp_begin);
          }
          i0 = i + 1;
        }
      }
      if (!text.empty() && !stop) stop = !emit(t0, seek + seek_delta, std::move(text), i0, cur.size());
    }
    if (stop) return Status(Code::kCancelled, "transcription stopped by the segment callback");
    // A window ending on a lone timestamp moves on by the whole window.
    if (cur.size() > 1 && cur[cur.size() - 2].id < v.timestamp_begin && cur.back().id > v.timestamp_begin)
      seek_delta = std::min(seek_end - seek, kChunk);
    seek += seek_delta;
  }
  return Status::Ok();
}

}  // namespace zf::speech

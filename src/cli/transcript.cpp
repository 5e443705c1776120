// zf_transcribe into plain structs, and the transcript output formats.
#include "transcript.h"

#include <cstdio>
#include <cstring>

#include "common.h"
#include "json.h"

namespace cli::transcript {

namespace {

struct Ctx {
  const zf_speech_model* model;
  const std::function<void(const Segment&)>* on_segment;
  Transcript* out;
};

Segment Convert(const zf_speech_model* model, const zf_speech_segment& s) {
  Segment seg;
  seg.t0_ms = s.t0_ms;
  seg.t1_ms = s.t1_ms;
  seg.text.assign(s.text, s.text_len);
  seg.no_speech_prob = s.no_speech_prob;
  seg.temperature = s.temperature;
  seg.avg_logprob = s.avg_logprob;
  for (size_t k = 0; k < s.n_words; ++k) {
    seg.words.push_back({std::string(s.words[k].text, s.words[k].text_len), s.words[k].t0_ms, s.words[k].t1_ms, s.words[k].p});
  }
  for (size_t k = 0; k < s.n_tokens; ++k) {
    Token t;
    t.id = s.tokens[k].id;
    t.p = s.tokens[k].p;
    t.plog = s.tokens[k].plog;
    FetchString([&](char* buf, size_t cap, size_t* needed) { return zf_speech_token_text(model, t.id, buf, cap, needed); },
                true, &t.text);
    seg.tokens.push_back(std::move(t));
  }
  return seg;
}

int32_t OnSegment(void* user_data, const zf_speech_segment* s) {
  auto* c = static_cast<Ctx*>(user_data);
  try {
    c->out->segments.push_back(Convert(c->model, *s));
    if (*c->on_segment) (*c->on_segment)(c->out->segments.back());
    return 0;
  } catch (...) {
    return 1;  // no exception may unwind through the library; the segments so far stay
  }
}

}  // namespace

zf_status Run(const zf_speech_model* model, const std::vector<float>& pcm, const zf_transcribe_params& params,
              const std::function<void(const Segment&)>& on_segment, Transcript* out, std::string* error) {
  *out = Transcript();
  if (params.flags & ZF_TRANSCRIBE_TRANSLATE) out->task = "translate";
  out->duration_s = double(pcm.size()) / 16000.0;
  Ctx ctx{model, &on_segment, out};
  zf_transcription* r = nullptr;
  const zf_status st = zf_transcribe(model, pcm.data(), pcm.size(), &params, OnSegment, &ctx, &r);
  if (st != ZF_OK) {
    *error = zf_last_error();
    return st;
  }
  FetchString([&](char* buf, size_t cap, size_t* needed) { return zf_transcription_language(r, buf, cap, needed); },
              true, &out->language);
  FetchString([&](char* buf, size_t cap, size_t* needed) { return zf_transcription_text(r, buf, cap, needed); }, true,
              &out->text);
  zf_transcription_free(r);
  return ZF_OK;
}

std::string Timestamp(int64_t ms, char decimal_mark) {
  if (ms < 0) ms = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", (long long)(ms / 3600000), (long long)(ms / 60000 % 60),
                (long long)(ms / 1000 % 60), decimal_mark, (long long)(ms % 1000));
  return buf;
}

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string Text(const Transcript& t) { return Trim(t.text) + "\n"; }

std::string Srt(const Transcript& t) {
  std::string out;
  for (size_t i = 0; i < t.segments.size(); ++i) {
    const Segment& s = t.segments[i];
    out += std::to_string(i + 1) + "\n" + Timestamp(s.t0_ms, ',') + " --> " + Timestamp(s.t1_ms, ',') + "\n" +
           Trim(s.text) + "\n\n";
  }
  return out;
}

std::string Vtt(const Transcript& t) {
  std::string out = "WEBVTT\n\n";
  for (const Segment& s : t.segments) {
    out += Timestamp(s.t0_ms, '.') + " --> " + Timestamp(s.t1_ms, '.') + "\n" + Trim(s.text) + "\n\n";
  }
  return out;
}

std::string Json(const Transcript& t, bool detailed) {
  std::string segs = "[", words = "[";
  bool any_words = false;
  for (size_t i = 0; i < t.segments.size(); ++i) {
    const Segment& s = t.segments[i];
    std::string ids = "[", probs = "[";
    for (size_t k = 0; k < s.tokens.size(); ++k) {
      ids += (k ? "," : "") + std::to_string(s.tokens[k].id);
      probs += std::string(k ? "," : "") +
               json::Object().Int("id", s.tokens[k].id).Str("text", s.tokens[k].text).Num("p", s.tokens[k].p, 6).Done();
    }
    for (const Word& w : s.words) {
      json::Object o;
      o.Str("word", Trim(w.text)).Num("start", double(w.t0_ms) / 1000.0, 3).Num("end", double(w.t1_ms) / 1000.0, 3);
      if (detailed) o.Num("probability", w.p, 6);
      words += (words.size() > 1 ? "," : "") + o.Done();
    }
    json::Object o;
    o.Int("id", (long long)i)
        .Num("start", double(s.t0_ms) / 1000.0, 3)
        .Num("end", double(s.t1_ms) / 1000.0, 3)
        .Str("text", s.text)
        .Raw("tokens", ids + "]")
        .Num("temperature", s.temperature, 3)
        .Num("avg_logprob", s.avg_logprob, 6)
        .Num("no_speech_prob", s.no_speech_prob, 6);
    if (detailed) o.Raw("token_probs", probs + "]");
    segs += (i ? "," : "") + o.Done();
    any_words = any_words || !s.words.empty();
  }
  json::Object out;
  out.Str("task", t.task).Str("language", t.language).Num("duration", t.duration_s, 3).Str("text", t.text).Raw("segments", segs + "]");
  if (any_words) out.Raw("words", words + "]");
  return out.Done();
}

}  // namespace cli::transcript

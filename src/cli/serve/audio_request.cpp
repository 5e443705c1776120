// The speech-to-text form read field by field (OpenAI's names and values), and its audio decoded.
#include "audio_request.h"

#include <cmath>
#include <cstdlib>


namespace cli::serve {

namespace {

const std::string* Field(const AudioForm& form, const std::string& name, std::string* out) {
  auto it = form.find(name);
  if (it == form.end()) return nullptr;
  out->assign(it->second);
  return out;
}

// OpenAI's form booleans: "true"/"false" (any case, as the clients send them), also 1/0.
bool Bool(const std::string& name, const std::string& v) {
  std::string l;
  for (char c : v) l += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (l == "true" || l == "1") return true;
  if (l == "false" || l == "0") return false;
  throw BadRequest("invalid_" + name, name + ": expected true or false, got '" + v + "'");
}

}  // namespace

AudioRequest ParseAudioForm(const AudioForm& form, bool translate) {
  AudioRequest r;
  const auto file = form.find("file");
  if (file == form.end()) throw BadRequest("missing_file", "file: the audio file is required");
  r.file = file->second;
  if (r.file.size() > kMaxAudioBytes) {
    throw ApiError{413, "invalid_request_error", "file_too_large",
                   "file: " + std::to_string(r.file.size()) + " bytes is larger than the limit of 25 MB"};
  }
  if (r.file.empty()) throw BadRequest("invalid_file", "file: the audio file is empty");
  std::string v;
  const std::string* model = Field(form, "model", &v);
  if (model == nullptr || model->empty()) {
    throw BadRequest("missing_model", "model: required (a speech model of this server, or whisper-1 for its first)");
  }
  r.model = *model;
  if (const std::string* f = Field(form, "language", &v)) {
    if (translate) throw BadRequest("invalid_language", "language: not a parameter of translations (the output is English)");
    r.language = *f;
  }
  if (const std::string* f = Field(form, "prompt", &v)) r.prompt = *f;
  if (const std::string* f = Field(form, "response_format", &v)) {
    r.format = *f;
    if (r.format != "json" && r.format != "text" && r.format != "srt" && r.format != "vtt" && r.format != "verbose_json") {
      throw BadRequest("invalid_response_format",
                       "response_format: expected json, text, srt, vtt or verbose_json, got '" + r.format + "'");
    }
  }
  if (const std::string* f = Field(form, "temperature", &v)) {
    char* end = nullptr;
    const double t = std::strtod(f->c_str(), &end);
    if (f->empty() || end != f->c_str() + f->size() || !std::isfinite(t)) {
      throw BadRequest("invalid_temperature", "temperature: expected a number, got '" + *f + "'");
    }
    if (t < 0 || t > 1) throw BadRequest("invalid_temperature", "temperature: expected 0 to 1, got '" + *f + "'");
    r.temperature = t;
  }
  for (const auto& [name, g] : form) {
    if (name != "timestamp_granularities[]" && name != "timestamp_granularities") continue;
    if (g == "word") {
      r.words = true;
    } else if (g != "segment") {
      throw BadRequest("invalid_timestamp_granularities",
                       "timestamp_granularities[]: expected segment or word, got '" + std::string(g) + "'");
    }
  }
  if (r.words && r.format != "verbose_json") {
    throw BadRequest("invalid_timestamp_granularities",
                     "timestamp_granularities[]: word timestamps need response_format verbose_json");
  }
  if (const std::string* f = Field(form, "stream", &v)) r.stream = Bool("stream", *f);
  if (r.stream && r.format != "json" && r.format != "text") {
    throw BadRequest("invalid_stream", "stream: streamed transcripts are json or text (as OpenAI's), not response_format " +
                                           r.format);
  }
  return r;
}

std::vector<float> DecodeRequestAudio(const AudioRequest& r, double max_seconds) {
  std::vector<float> pcm;
  std::string error;
  if (zf_status st = audio::Decode(r.file, &pcm, &error, max_seconds)) {
    throw BadRequest(st == ZF_ERR_UNSUPPORTED ? "unsupported_audio" : "invalid_audio", "file: " + error);
  }
  return pcm;
}

}  // namespace cli::serve

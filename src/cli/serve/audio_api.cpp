// /v1/audio/transcriptions and /v1/audio/translations: the multipart form read (file, model,
// language, prompt, response_format, temperature, timestamp_granularities[], stream), the audio
// decoded (WAV; other containers named in a 400), one transcription at a time on the Whisper
// model, and the answer in the format asked (json, text, srt, vtt, verbose_json).
#include "audio_api.h"

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "../audio_decode.h"
#include "../transcript.h"

namespace cli::serve {
namespace {

struct AudioRequest {
  std::string file;  // the audio bytes
  std::string language;
  std::string format = "json";
};

const httplib::MultipartFormData* Field(const httplib::Request& req, const std::string& name) {
  auto it = req.files.find(name);
  return it == req.files.end() ? nullptr : &it->second;
}

// The form checked field by field; throws ApiError naming the field.
AudioRequest ReadForm(const httplib::Request& req, bool translate) {
  if (!req.is_multipart_form_data()) {
    throw ApiError{400, "invalid_request_error", "invalid_content_type",
                   "the body must be multipart/form-data with the audio in the field 'file'"};
  }
  AudioRequest r;
  const httplib::MultipartFormData* file = Field(req, "file");
  if (file == nullptr) throw BadRequest("missing_file", "file: the audio file is required");
  if (file->content.size() > kMaxAudioBytes) {
    throw ApiError{413, "invalid_request_error", "file_too_large",
                   "file: " + std::to_string(file->content.size()) + " bytes is larger than the limit of 25 MB"};
  }
  if (file->content.empty()) throw BadRequest("invalid_file", "file: the audio file is empty");
  r.file = file->content;
  if (Field(req, "model") == nullptr) throw BadRequest("missing_model", "model: required (any name; the server has one Whisper model)");
  if (const httplib::MultipartFormData* f = Field(req, "language")) {
    if (translate) throw BadRequest("invalid_language", "language: not a parameter of translations (the output is English)");
    r.language = f->content;
  }
  if (const httplib::MultipartFormData* f = Field(req, "prompt"); f != nullptr && !f->content.empty()) {
    throw BadRequest("unsupported_prompt", "prompt: conditioning on a text prompt is not supported yet");
  }
  if (const httplib::MultipartFormData* f = Field(req, "response_format")) {
    r.format = f->content;
    if (r.format != "json" && r.format != "text" && r.format != "srt" && r.format != "vtt" && r.format != "verbose_json") {
      throw BadRequest("invalid_response_format",
                       "response_format: expected json, text, srt, vtt or verbose_json, got '" + r.format + "'");
    }
  }
  if (const httplib::MultipartFormData* f = Field(req, "temperature")) {
    char* end = nullptr;
    const double t = std::strtod(f->content.c_str(), &end);
    if (f->content.empty() || *end != '\0' || !std::isfinite(t)) {
      throw BadRequest("invalid_temperature", "temperature: expected a number, got '" + f->content + "'");
    }
    if (t != 0) {
      throw BadRequest("unsupported_temperature",
                       "temperature: only 0 is supported (greedy decoding; sampling with fallback is not implemented yet)");
    }
  }
  for (const auto& [name, p] : req.files) {
    if ((name == "timestamp_granularities[]" || name == "timestamp_granularities") && p.content != "segment") {
      throw BadRequest("unsupported_timestamp_granularities",
                       "timestamp_granularities[]: only 'segment' is supported (word timestamps are not implemented yet)");
    }
  }
  if (const httplib::MultipartFormData* f = Field(req, "stream"); f != nullptr && f->content != "false") {
    throw BadRequest("unsupported_stream", "stream: streamed transcripts are not supported yet");
  }
  return r;
}

ApiError SpeechError(zf_status st, const std::string& message) {
  if (st == ZF_ERR_INVALID_ARGUMENT || st == ZF_ERR_UNSUPPORTED || st == ZF_ERR_INVALID_UTF8) {
    return BadRequest(st == ZF_ERR_UNSUPPORTED ? "unsupported_audio" : "invalid_audio", message);
  }
  return ApiError{500, "server_error", zf_status_string(st), message};
}

void Answer(const transcript::Transcript& t, const std::string& format, httplib::Response& res) {
  if (format == "text") {
    res.set_content(transcript::Text(t), "text/plain; charset=utf-8");
  } else if (format == "srt") {
    res.set_content(transcript::Srt(t), "text/plain; charset=utf-8");
  } else if (format == "vtt") {
    res.set_content(transcript::Vtt(t), "text/vtt; charset=utf-8");
  } else if (format == "verbose_json") {
    res.set_content(transcript::Json(t, false), "application/json");
  } else {
    res.set_content(Dump(json{{"text", t.text}}), "application/json");
  }
}

void Handle(FrontDoor& door, const zf_speech_model* model, int n_threads, bool translate, std::mutex* busy,
            const httplib::Request& req, httplib::Response& res) {
  if (!door.Authorized(req, res, ErrorBody)) return;
  if (model == nullptr) {
    SendError(res, {404, "invalid_request_error", "model_not_found",
                    "this server has no speech model: start it with --whisper-model FILE (a whisper.cpp ggml .bin)"});
    return;
  }
  try {
    const AudioRequest r = ReadForm(req, translate);
    std::vector<float> pcm;
    std::string error;
    if (zf_status st = audio::Decode(r.file, &pcm, &error)) throw SpeechError(st, "file: " + error);
    zf_transcribe_params p;
    zf_transcribe_params_init(&p, sizeof p);
    p.n_threads = n_threads;
    p.language = r.language.empty() ? nullptr : r.language.c_str();
    // OpenAI detects the language when none is given; an English-only model decodes English.
    zf_speech_summary info;
    info.struct_size = sizeof info;
    if (r.language.empty() && zf_speech_info(model, &info) == ZF_OK && info.multilingual) p.language = "auto";
    if (translate) p.flags |= ZF_TRANSCRIBE_TRANSLATE;
    transcript::Transcript t;
    zf_status st;
    {
      // One transcription at a time: each uses every thread it is given.
      std::lock_guard<std::mutex> lock(*busy);
      st = transcript::Run(model, pcm, p, {}, &t, &error);
    }
    if (st != ZF_OK) throw SpeechError(st, error);
    Answer(t, r.format, res);
  } catch (const ApiError& e) {
    SendError(res, e);
  }
}

}  // namespace

void AddAudioRoutes(FrontDoor& door, const zf_speech_model* model, int n_threads) {
  static std::mutex busy;
  for (const bool translate : {false, true}) {
    const std::string path = translate ? "/v1/audio/translations" : "/v1/audio/transcriptions";
    door.Post(path, ErrorBody, [&door, model, n_threads, translate](const httplib::Request& req, httplib::Response& res) {
      Handle(door, model, n_threads, translate, &busy, req, res);
    });
  }
}

}  // namespace cli::serve

// An OpenAI speech-to-text request (/v1/audio/transcriptions, /v1/audio/translations) read from
// its multipart form's fields, every field checked and a bad one named in a 4xx; and its audio
// decoded to 16 kHz mono PCM. Plain C++ over the form's parts (no HTTP), so it is fuzzed as is
// (tests/fuzz/fuzz_audio_request.cpp).
#ifndef ZERFOO_CLI_SERVE_AUDIO_REQUEST_H
#define ZERFOO_CLI_SERVE_AUDIO_REQUEST_H

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "../audio_decode.h"
#include "api_error.h"

namespace cli::serve {

// The largest audio file accepted, as OpenAI's limit (25 MB); larger: 413.
constexpr size_t kMaxAudioBytes = size_t(25) << 20;

// The form's parts by name (a name may repeat: timestamp_granularities[]), each its content
// (viewed: the file is up to 25 MB and is not copied).
using AudioForm = std::multimap<std::string, std::string_view>;

struct AudioRequest {
  std::string_view file;  // the audio bytes (in the form)
  std::string model;
  std::string language;  // "" when not given
  std::string prompt;
  std::string format = "json";  // json, text, srt, vtt, verbose_json
  double temperature = 0;
  bool stream = false;
  bool words = false;  // timestamp_granularities[] has "word"
};

// The fields checked; throws ApiError naming the field (413 for a file over kMaxAudioBytes).
// `translate`: the translations endpoint (no language field). r.file views the form's bytes.
AudioRequest ParseAudioForm(const AudioForm& form, bool translate);

// The request's audio to 16 kHz mono PCM; throws a 400 naming the container and the problem.
// max_seconds: the longest compressed audio decoded (audio_decode.h).
std::vector<float> DecodeRequestAudio(const AudioRequest& r, double max_seconds = audio::kMaxSeconds);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_AUDIO_REQUEST_H

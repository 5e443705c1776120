// OpenAI's speech to text: POST /v1/audio/transcriptions and /v1/audio/translations
// (multipart/form-data, read into req.files by the server) on its Whisper model (--whisper-model).
#ifndef ZERFOO_CLI_SERVE_AUDIO_API_H
#define ZERFOO_CLI_SERVE_AUDIO_API_H

#include "front_door.h"

namespace cli::serve {

// The largest audio file accepted, as OpenAI's limit (25 MB); larger: 413.
constexpr size_t kMaxAudioBytes = size_t(25) << 20;

// Adds the two routes. Without a model (nullptr) they answer 404 naming --whisper-model.
// n_threads: zf_transcribe_params.n_threads. The model must outlive the server.
void AddAudioRoutes(FrontDoor& door, const zf_speech_model* model, int n_threads);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_AUDIO_API_H

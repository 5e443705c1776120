// OpenAI's speech to text: POST /v1/audio/transcriptions and /v1/audio/translations
// (multipart/form-data, read into req.files by the server) on the server's Whisper models
// (speech_models.h), whole in the format asked or streamed as transcript.text.* events.
#ifndef ZERFOO_CLI_SERVE_AUDIO_API_H
#define ZERFOO_CLI_SERVE_AUDIO_API_H

#include "audio_request.h"
#include "front_door.h"
#include "speech_models.h"

namespace cli::serve {

// Adds the two routes. Without speech models (nullptr or none) they answer 404 naming
// --whisper-model. n_threads: zf_transcribe_params.n_threads. At most max_at_once transcriptions
// run at a time (the rest wait); concurrent ones on one model share its decoder passes.
// `models` must outlive the server.
void AddAudioRoutes(FrontDoor& door, SpeechModels* models, int n_threads, int max_at_once);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_AUDIO_API_H

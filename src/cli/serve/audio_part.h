// Audio in chat requests: OpenAI input_audio parts ({"type": "input_audio", "input_audio":
// {"data": "<base64>", "format": "wav" | "mp3" | "flac" | "ogg"}}) decoded here (miniaudio for
// the compressed ones, audio_decode.h) and rewritten as 32-bit float 16 kHz WAV, which the
// library's chat turn takes; checked before a slot is taken. A model without an audio projector
// refuses them naming the part.
#ifndef ZERFOO_CLI_SERVE_AUDIO_PART_H
#define ZERFOO_CLI_SERVE_AUDIO_PART_H

#include <cstdint>
#include <string>

#include "api_error.h"
#include "image_request.h"
#include "zerfoo.h"

namespace cli::serve {

// What the projector encodes (zf_mmproj_summary::modalities; ZF_MODALITY_IMAGE for a library
// that predates the field); 0 without one.
uint32_t ProjectorModalities(const zf_mmproj* mmproj);

// One input_audio part (`field` names it) as the part the library takes: its data decoded and
// written again as 32-bit float 16 kHz WAV. Throws ApiError 400 naming the field: missing or
// malformed data, a format that is not decoded, corrupt audio, or a clip longer than the library
// takes (max_seconds; by default ZF_AUDIO_MAX_SAMPLES' 600 s).
json AudioPartWav(const json& part, const std::string& field, double max_seconds = ZF_AUDIO_MAX_SAMPLES / 16000.0);

// The input_audio parts of `messages` rewritten in place by AudioPartWav; returns their number.
// Throws as it does, and 400 naming the part when the model has no audio projector
// (policy.modalities).
int ResolveAudio(json* messages, const std::string& model, const ImagePolicy& policy);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_AUDIO_PART_H

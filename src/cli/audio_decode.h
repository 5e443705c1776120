// Audio file bytes to 16 kHz mono PCM for Whisper, in the CLI and the server: WAV through the
// library (zf_wav_decode); MP3, FLAC and Ogg Vorbis through miniaudio (when the build fetched
// it: cmake/audio_codecs.cmake), decoded to mono at their own rate and then resampled by the same
// WAV path, so every container is averaged and resampled alike. Other containers (MP4/M4A, AAC,
// WebM, Ogg Opus) are named and refused.
#ifndef ZERFOO_CLI_AUDIO_DECODE_H
#define ZERFOO_CLI_AUDIO_DECODE_H

#include <string>
#include <string_view>
#include <vector>

#include "zerfoo.h"

namespace cli::audio {

// The longest audio decoded (2 hours): a small compressed file can expand to far more (a FLAC of
// silence is a few bytes a second), and its samples are held in memory.
constexpr double kMaxSeconds = 2 * 3600;

// "WAV", "MP3", "FLAC", "Ogg Vorbis", "Ogg Opus", "Ogg", "AAC", "MP4/M4A", "WebM/Matroska" from
// the first bytes; "" when none matches.
std::string Container(std::string_view bytes);

// True when this build decodes MP3, FLAC and Ogg Vorbis.
bool HaveCodecs();

// The bytes of any supported container to 16 kHz mono float PCM. On failure returns the status
// (ZF_ERR_UNSUPPORTED for a container not decoded, ZF_ERR_INVALID_ARGUMENT for corrupt audio or
// a compressed stream longer than max_seconds) with a message in *error naming the container and
// the problem.
zf_status Decode(std::string_view bytes, std::vector<float>* pcm, std::string* error, double max_seconds = kMaxSeconds);

}  // namespace cli::audio

#endif  // ZERFOO_CLI_AUDIO_DECODE_H

// 16 kHz mono samples as a WAV file's bytes (IEEE float, 32-bit: the samples exactly), as the
// CLI and the server hand decoded audio (MP3, FLAC, Ogg) to the library's chat turn, whose
// input_audio parts take WAV only.
#ifndef ZERFOO_CLI_WAV_WRITE_H
#define ZERFOO_CLI_WAV_WRITE_H

#include <string>
#include <vector>

namespace cli {

std::string WavFloat16k(const std::vector<float>& pcm);

}  // namespace cli

#endif  // ZERFOO_CLI_WAV_WRITE_H

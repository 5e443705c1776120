// The speech-to-text endpoint's request (src/cli/serve/audio_request.*) and audio decoding
// (src/cli/audio_decode.*: WAV through the library, MP3/FLAC/Ogg Vorbis through miniaudio and
// stb_vorbis), and a chat request's input_audio part (src/cli/serve/audio_part.*), fuzzed without
// a server. Input: byte 0's bit 1 set: the rest is an input_audio part's bytes. Else byte 0's
// low bit picks translations; then the
// form's text fields as "name=value" lines up to the first NUL; after it, the file's bytes (no
// NUL: no file). Invariants: the form parser returns or throws ApiError (400, or 413 for the
// size) with a message; decoding returns non-empty PCM of finite samples or throws a 400; no
// other exception, no crash, no leak; a compressed stream stops at 30 s of audio (a few fuzzed
// bytes of FLAC can claim hours).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <cstring>

#include <nlohmann/json.hpp>

#include "cli/data_url.h"
#include "cli/serve/audio_part.h"
#include "cli/serve/audio_request.h"
#include "fuzz_common.h"

namespace {

using zf::fuzz::Check;

cli::serve::AudioForm Form(std::string_view text, std::string_view file, bool has_file) {
  cli::serve::AudioForm form;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    const size_t eq = line.find('=');
    form.emplace(std::string(line.substr(0, eq)), eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  if (has_file) form.emplace("file", file);
  return form;
}

// A chat request's input_audio part carrying `bytes` (audio_part.h): rewritten as float WAV of
// at most 30 s of finite samples, or a 400 naming the part.
void InputAudio(std::string_view bytes, int format) {
  static const char* const kFormats[] = {"wav", "mp3", "flac", "ogg", "aac", ""};
  const std::string b64 = cli::Base64Encode(bytes.data(), bytes.size());
  const nlohmann::json part = {{"type", "input_audio"}, {"input_audio", {{"data", b64}, {"format", kFormats[format % 6]}}}};
  try {
    const nlohmann::json out = cli::serve::AudioPartWav(part, "messages[0].content[0]", 30);
    std::string wav, why;
    Check(out["input_audio"]["format"] == "wav", "the rewrite is WAV");
    Check(cli::Base64Decode(out["input_audio"]["data"].get<std::string>(), &wav, &why), "its base64 decodes");
    Check(wav.size() > 44 && wav.compare(0, 4, "RIFF") == 0 && (wav.size() - 44) % 4 == 0, "a float WAV");
    Check((wav.size() - 44) / 4 <= 30 * 16000, "within the limit");
    for (size_t i = 44; i + 4 <= wav.size(); i += 4) {
      float x;
      std::memcpy(&x, wav.data() + i, 4);
      Check(std::isfinite(x), "finite samples");
    }
  } catch (const cli::serve::ApiError& e) {
    Check(e.status == 400 && e.message.find("messages[0].content[0]") != std::string::npos, "a 400 naming the part");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 2) {  // an input_audio part: the rest is its bytes, bits 2-4 pick the format
    InputAudio(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), data[0] >> 2);
    return 0;
  }
  const bool translate = data[0] & 1;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const bool has_file = nul != std::string_view::npos;
  const cli::serve::AudioForm form =
      Form(rest.substr(0, nul), has_file ? rest.substr(nul + 1) : std::string_view(), has_file);
  cli::serve::AudioRequest r;
  try {
    r = cli::serve::ParseAudioForm(form, translate);
  } catch (const cli::serve::ApiError& e) {
    Check((e.status == 400 || e.status == 413) && !e.message.empty(), "a form error is a 400/413 with a message");
    return 0;
  }
  Check(!r.file.empty() && !r.model.empty(), "a parsed request has a file and a model");
  try {
    const std::vector<float> pcm = cli::serve::DecodeRequestAudio(r, 30);
    Check(!pcm.empty(), "decoded audio has samples");
    for (float x : pcm) Check(std::isfinite(x), "decoded samples are finite");
  } catch (const cli::serve::ApiError& e) {
    Check(e.status == 400 && e.message.rfind("file: ", 0) == 0, "an audio error is a 400 naming the file");
  }
  return 0;
}

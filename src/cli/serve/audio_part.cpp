// input_audio parts of chat requests into the WAV the library's chat turn takes (audio_part.h).
#include "audio_part.h"

#include <vector>

#include "../audio_decode.h"
#include "../data_url.h"
#include "../wav_write.h"

namespace cli::serve {

uint32_t ProjectorModalities(const zf_mmproj* mmproj) {
  if (mmproj == nullptr) return 0;
  zf_mmproj_summary info{};
  info.struct_size = sizeof info;
  if (zf_mmproj_info(mmproj, &info) != ZF_OK) return 0;
  return info.struct_size >= sizeof info ? info.modalities : ZF_MODALITY_IMAGE;
}

json AudioPartWav(const json& p, const std::string& field, double max_seconds) {
  const json* ia = p.contains("input_audio") && p["input_audio"].is_object() ? &p["input_audio"] : nullptr;
  if (ia == nullptr) throw BadRequest("missing_field", "'" + field + ".input_audio' is required (an object)");
  if (!ia->contains("data") || !(*ia)["data"].is_string()) {
    throw BadRequest("missing_field", "'" + field + ".input_audio.data' is required (base64 audio bytes)");
  }
  const json* f = ia->contains("format") ? &(*ia)["format"] : nullptr;
  const std::string format = f != nullptr && f->is_string() ? f->get<std::string>() : "";
  if (format != "wav" && format != "mp3" && format != "flac" && format != "ogg") {
    throw BadRequest("invalid_value", "'" + field + ".input_audio.format' must be \"wav\", \"mp3\", \"flac\" or \"ogg\"");
  }
  std::string bytes, why;
  if (!Base64Decode((*ia)["data"].get<std::string>(), &bytes, &why)) {
    throw BadRequest("invalid_value", "'" + field + ".input_audio.data': " + why);
  }
  if (bytes.empty()) throw BadRequest("invalid_value", "'" + field + ".input_audio.data': the audio is empty");
  // The container is read from the bytes (a "wav" that is an MP3 still decodes); the library's
  // length limit bounds the decode.
  std::vector<float> pcm;
  if (audio::Decode(bytes, &pcm, &why, max_seconds) != ZF_OK) {
    throw BadRequest("invalid_value", "'" + field + ".input_audio.data': " + why);
  }
  if (pcm.empty()) throw BadRequest("invalid_value", "'" + field + ".input_audio.data': the audio has no samples");
  if (double(pcm.size()) > max_seconds * 16000.0) {
    throw BadRequest("invalid_value", "'" + field + ".input_audio.data': the clip is " +
                                          std::to_string(pcm.size() / 16000) + " s long; at most " +
                                          std::to_string(int(max_seconds)) + " s are taken");
  }
  const std::string wav = WavFloat16k(pcm);
  return {{"type", "input_audio"}, {"input_audio", {{"data", Base64Encode(wav.data(), wav.size())}, {"format", "wav"}}}};
}

int ResolveAudio(json* messages, const std::string& model, const ImagePolicy& policy) {
  if (messages == nullptr || !messages->is_array()) return 0;
  int n = 0;
  for (size_t i = 0; i < messages->size(); ++i) {
    json& m = (*messages)[i];
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    json& parts = m["content"];
    for (size_t j = 0; j < parts.size(); ++j) {
      json& p = parts[j];
      if (!p.is_object() || !p.contains("type") || p["type"] != "input_audio") continue;
      const std::string field = "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]";
      if (policy.mmproj == nullptr || (policy.modalities & ZF_MODALITY_AUDIO) == 0) {
        throw BadRequest("unsupported", "'" + field + "': audio needs a model with an audio projector; model '" +
                                            model + "' has " +
                                            (policy.mmproj == nullptr ? "none (serve it with --mmproj FILE)"
                                                                      : "a vision projector (it takes image_url parts)"));
      }
      p = AudioPartWav(p, field);
      ++n;
    }
  }
  return n;
}

}  // namespace cli::serve

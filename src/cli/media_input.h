// `zerfoo generate/chat --mmproj FILE --image FILE --audio FILE`: the projector loaded for the
// model, the files read (images as bytes, audio decoded to 16 kHz PCM), and placed in the
// prompt. generate (a raw prompt) follows llama-mtmd-cli: each <__media__> in the prompt is the
// next file in command-line order, and a prompt without one gets them all before its text; chat
// sends them as OpenAI parts of the first user message (image_url, input_audio), which the chat
// turn places by the template.
#ifndef ZERFOO_CLI_MEDIA_INPUT_H
#define ZERFOO_CLI_MEDIA_INPUT_H

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "zerfoo.h"

namespace cli {

struct MmprojDeleter {
  void operator()(zf_mmproj* p) const { zf_mmproj_free(p); }
};
using MmprojPtr = std::unique_ptr<zf_mmproj, MmprojDeleter>;

// llama-mtmd-cli's media marker in a raw prompt.
constexpr const char* kMediaMarker = "<__media__>";

// One --image or --audio file, read.
struct MediaInput {
  bool audio = false;
  std::string path;
  std::string bytes;       // an image's file bytes
  std::vector<float> pcm;  // audio: 16 kHz mono samples
};

// Loads --mmproj for `model` (nothing without it) and reads every --image / --audio file in
// command-line order. On failure prints the error (the file named; another model's projector,
// or an image for an audio projector: the reason) and returns false.
bool LoadMediaInputs(const Options& opts, zf_model* model, MmprojPtr* mmproj, std::vector<MediaInput>* media);

// generate: evaluates the prompt up to its last file (text segments with zf_session_eval, each
// image with zf_session_eval_image, each clip with zf_session_eval_audio) and leaves in *rest
// the text zf_generate continues with. Throws UsageError when the prompt's markers and the
// files do not pair up; returns a failing status (the library's error pending) otherwise.
zf_status EvalPromptMedia(const Options& opts, const zf_model* model, zf_session* session, const zf_mmproj* mmproj,
                          const std::vector<MediaInput>& media, std::string* rest);

// chat: a user message's content with the files first, as OpenAI parts (JSON text): images as
// image_url data: URLs, clips as input_audio WAV (32-bit float, 16 kHz: the samples exactly).
std::string MediaContentJson(const std::vector<MediaInput>& media, const std::string& text);

}  // namespace cli

#endif  // ZERFOO_CLI_MEDIA_INPUT_H

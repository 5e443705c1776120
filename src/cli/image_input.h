// `zerfoo generate/chat --mmproj FILE --image FILE`: the projector loaded for the model, the
// image files read, and the images placed in the prompt. generate (a raw prompt) follows
// llama-mtmd-cli: each <__media__> in the prompt is the next image, and a prompt without one
// gets all images before its text; chat sends them as OpenAI image_url parts of the first
// user message (the chat turn places them by the template).
#ifndef ZERFOO_CLI_IMAGE_INPUT_H
#define ZERFOO_CLI_IMAGE_INPUT_H

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

// Loads --mmproj for `model` (nothing without it) and reads every --image file. On failure
// prints the error (the file named; another model's projector: the library's reason) and
// returns false.
bool LoadImageInputs(const Options& opts, zf_model* model, MmprojPtr* mmproj, std::vector<std::string>* images);

// generate: evaluates the prompt up to its last image (text segments with zf_session_eval, each
// image with zf_session_eval_image) and leaves in *rest the text zf_generate continues with.
// Throws UsageError when the prompt's markers and the images do not pair up; returns a failing
// status (the library's error pending) otherwise.
zf_status EvalPromptImages(const Options& opts, const zf_model* model, zf_session* session, const zf_mmproj* mmproj,
                           const std::vector<std::string>& images, std::string* rest);

// chat: a user message's content with the images first, as OpenAI parts (JSON text).
std::string ImageContentJson(const std::vector<std::string>& images, const std::string& text);

}  // namespace cli

#endif  // ZERFOO_CLI_IMAGE_INPUT_H

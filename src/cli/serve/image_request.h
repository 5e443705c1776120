// Images in a chat request, checked before a slot is taken: every OpenAI image part of the
// messages ({"type": "image_url", "image_url": {"url"} or "url"}, which the Anthropic, Ollama and
// Responses front doors produce from their own image fields) becomes a base64 data: URL the
// library's chat turn takes, or a 4xx naming the part. http(s) URLs are fetched only when the
// server allows it (--allow-image-urls); without a projector every image is refused.
#ifndef ZERFOO_CLI_SERVE_IMAGE_REQUEST_H
#define ZERFOO_CLI_SERVE_IMAGE_REQUEST_H

#include <cstddef>
#include <functional>
#include <string>

#include "api_error.h"
#include "zerfoo.h"

namespace cli::serve {

// Fetches an http(s) URL's bytes (at most max_bytes); throws ApiError (image_fetch.h).
using ImageFetchFn = std::function<std::string(const std::string& url, const std::string& field, size_t max_bytes)>;

// What a model's requests may send as images.
struct ImagePolicy {
  const zf_mmproj* mmproj = nullptr;  // the model's projector; nullptr: the model reads text only
  uint32_t modalities = ZF_MODALITY_IMAGE;  // what mmproj encodes (audio_part.h's ProjectorModalities)
  size_t max_bytes = size_t(20) << 20;  // --image-max-mb: one image's bytes (decoded)
  ImageFetchFn fetch;                   // set with --allow-image-urls; empty: URLs are refused
};

// The image parts of `messages` (an array of OpenAI messages; anything else is left to the
// library to refuse) rewritten in place as {"type": "image_url", "image_url": {"url":
// "data:<type>;base64,<data>"}}: data URLs checked (base64, a known image type, the size limit),
// plain base64 given a data: prefix by its sniffed type, http(s) URLs fetched (or refused).
// `model` names the model in the refusal of a text-only one. Returns the number of images.
// Throws ApiError: 400 for a malformed image, a URL not allowed or a model without a
// projector, 413 for an image over the limit.
int ResolveImages(json* messages, const std::string& model, const ImagePolicy& policy);

// One image given by `url` (a data: URL, plain base64 or an http(s) URL) as the OpenAI part
// ResolveImages writes, for the front doors that translate their own image fields (they name
// `field` in their own terms). Throws as ResolveImages does.
json ImagePart(const std::string& url, const std::string& field, const std::string& model, const ImagePolicy& policy);

// The positions one image takes in the prompt (the projector's tokens per image); 0 without one.
int32_t ImageTokens(const zf_mmproj* mmproj);

// An image's bytes as the data: URL ResolveImages writes (the type sniffed from the bytes);
// throws a 400 naming `field` when they are no image this server decodes, 413 over the limit.
std::string ImageDataUrl(const std::string& bytes, const std::string& field, size_t max_bytes);

}  // namespace cli::serve

#endif  // ZERFOO_CLI_SERVE_IMAGE_REQUEST_H

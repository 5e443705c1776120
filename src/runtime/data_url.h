// An image part's URL as a chat request gives it: a data URL ("data:image/png;base64,...")
// decoded to its bytes. The library fetches nothing: an http(s) URL is refused (the caller, e.g.
// the server, fetches it first and passes a data URL).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace zf::rt {

// The bytes of a base64 data URL with an image/* media type; kInvalidArgument with `field` in
// front of the reason otherwise (another scheme, another media type, not base64, bad base64, no
// bytes).
Status DecodeImageDataUrl(std::string_view url, const std::string& field, std::string* bytes);

// Standard or URL-safe base64 (whitespace skipped, '=' padding) to bytes; kInvalidArgument with
// `field` in front (a bad character, truncated, no bytes). An audio part's data.
Status DecodeBase64(std::string_view text, const std::string& field, std::string* bytes);

}  // namespace zf::rt
